#include "core/crc32c.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace ferry::core {
namespace {

// Bit-at-a-time CRC32C, the definition the fast paths must agree with.
uint32_t ReferenceCrc32c(const uint8_t* p, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

std::vector<uint8_t> PatternBytes(size_t n) {
  std::vector<uint8_t> bytes(n);
  uint32_t state = 12345;
  for (auto& b : bytes) {
    state = state * 1103515245u + 12345u;
    b = static_cast<uint8_t>(state >> 16);
  }
  return bytes;
}

TEST_CASE("Crc32c matches the standard check values") {
  const std::string digits = "123456789";
  CHECK(Crc32c(0, digits.data(), digits.size()) == 0xE3069283u);

  // RFC 3720 (iSCSI) appendix B.4 test vectors.
  std::vector<uint8_t> bytes(32, 0x00);
  CHECK(Crc32c(0, bytes.data(), bytes.size()) == 0x8A9136AAu);
  std::fill(bytes.begin(), bytes.end(), 0xFF);
  CHECK(Crc32c(0, bytes.data(), bytes.size()) == 0x62A8AB43u);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i);
  CHECK(Crc32c(0, bytes.data(), bytes.size()) == 0x46DD794Eu);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(31 - i);
  CHECK(Crc32c(0, bytes.data(), bytes.size()) == 0x113FDB5Cu);
}

TEST_CASE("Crc32c of nothing leaves the running value unchanged") {
  CHECK(Crc32c(0, nullptr, 0) == 0u);
  CHECK(Crc32c(0xE3069283u, nullptr, 0) == 0xE3069283u);
}

TEST_CASE("Crc32c agrees with the bitwise definition at every length and alignment") {
  // Lengths 0..71 from offsets 0..7 cover empty input, tail-only input, whole
  // 8-byte words, and words followed by every possible tail length.
  const std::vector<uint8_t> bytes = PatternBytes(80);
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t length = 0; offset + length <= 72; ++length) {
      CAPTURE(offset);
      CAPTURE(length);
      REQUIRE(Crc32c(0, bytes.data() + offset, length) ==
              ReferenceCrc32c(bytes.data() + offset, length));
    }
  }
}

TEST_CASE("Crc32c agrees with the table path for random sizes up to 100 KB and unaligned starts") {
  // Sizes around the folding path's start (two 256-byte strides) and the
  // three-stream block boundaries (3 x 256 and 3 x 8192 bytes) are drawn on
  // purpose, the rest uniformly; starts cover all 64 offsets within a cache
  // line, and the running value is random.
  std::mt19937_64 rng(7);
  std::vector<uint8_t> bytes(100000 + 64);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  const std::vector<size_t> edges = {255,  256,  511,  512,   513,   767,   768,  769,
                                     1023, 1535, 1536, 24575, 24576, 24577, 49152};
  for (int trial = 0; trial < 2000; ++trial) {
    const size_t offset = rng() % 64;
    const size_t size = trial < static_cast<int>(edges.size()) ? edges[trial] : rng() % 100001;
    const uint32_t start = static_cast<uint32_t>(rng());
    CAPTURE(offset);
    CAPTURE(size);
    REQUIRE(Crc32c(start, bytes.data() + offset, size) ==
            internal::Crc32cTable(start, bytes.data() + offset, size));
    REQUIRE(internal::Crc32cOneStream(start, bytes.data() + offset, size) ==
            internal::Crc32cTable(start, bytes.data() + offset, size));
    REQUIRE(internal::Crc32cThreeStreams(start, bytes.data() + offset, size) ==
            internal::Crc32cTable(start, bytes.data() + offset, size));
  }
}

TEST_CASE("Crc32c extended piece by piece equals the one-shot checksum") {
  const std::vector<uint8_t> bytes = PatternBytes(100);
  const uint32_t whole = Crc32c(0, bytes.data(), bytes.size());
  for (size_t split = 0; split <= bytes.size(); ++split) {
    CAPTURE(split);
    const uint32_t head = Crc32c(0, bytes.data(), split);
    REQUIRE(Crc32c(head, bytes.data() + split, bytes.size() - split) == whole);
  }
  uint32_t running = 0;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    running = Crc32c(running, bytes.data() + i, std::min<size_t>(3, bytes.size() - i));
  }
  CHECK(running == whole);
}

TEST_CASE("Crc32c changes when any single bit flips") {
  std::vector<uint8_t> bytes = PatternBytes(37);
  const uint32_t original = Crc32c(0, bytes.data(), bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      bytes[i] ^= static_cast<uint8_t>(1u << bit);
      REQUIRE(Crc32c(0, bytes.data(), bytes.size()) != original);
      bytes[i] ^= static_cast<uint8_t>(1u << bit);
    }
  }
}

TEST_CASE("Crc32cConcat and Crc32cSuffix match the checksum of the whole, for any split") {
  std::mt19937_64 rng(31);
  std::vector<uint8_t> bytes(3 << 20);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  for (size_t size : {size_t{0}, size_t{1}, size_t{7}, size_t{64}, size_t{4099}, size_t{3} << 20}) {
    for (size_t split : {size_t{0}, size / 3, size}) {
      CAPTURE(size);
      CAPTURE(split);
      const uint32_t a = Crc32c(0, bytes.data(), split);
      const uint32_t b = Crc32c(0, bytes.data() + split, size - split);
      const uint32_t ab = Crc32c(0, bytes.data(), size);
      CHECK(Crc32cConcat(a, b, size - split) == ab);
      CHECK(Crc32cSuffix(ab, a, size - split) == b);
    }
  }
  // A wrong part gives a wrong whole: nothing here is a constant.
  const uint32_t a = Crc32c(0, bytes.data(), 10), b = Crc32c(0, bytes.data() + 10, 90);
  CHECK(Crc32cConcat(a ^ 1u, b, 90) != Crc32c(0, bytes.data(), 100));
  CHECK(Crc32cConcat(a, b, 91) != Crc32c(0, bytes.data(), 100));
}

}  // namespace
}  // namespace ferry::core
