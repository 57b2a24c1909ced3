#include "replay/compressed_column.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace ferry::replay {
namespace {

constexpr size_t kRowBytes = 84 * 84;

// A frame like an Atari screen: a flat background with a few rectangles.
std::vector<uint8_t> ImageRow(std::mt19937_64& rng) {
  std::vector<uint8_t> row(kRowBytes, static_cast<uint8_t>(rng() % 64));
  for (int box = 0; box < 4; ++box) {
    const size_t top = rng() % 70, left = rng() % 70, value = rng() % 256;
    for (size_t y = top; y < top + 12; ++y) {
      for (size_t x = left; x < left + 10; ++x) row[y * 84 + x] = static_cast<uint8_t>(value);
    }
  }
  return row;
}

std::vector<uint8_t> NoiseRow(std::mt19937_64& rng) {
  std::vector<uint8_t> row(kRowBytes);
  for (auto& b : row) b = static_cast<uint8_t>(rng());
  return row;
}

TEST_CASE("compressed rows read back exactly, compressible or not") {
  std::mt19937_64 rng(3);
  CompressedColumn column(/*capacity=*/32, kRowBytes);
  std::vector<std::vector<uint8_t>> stored(32);
  for (int round = 0; round < 3; ++round) {
    for (int64_t slot = 0; slot < 32; ++slot) {
      stored[slot] = slot % 3 == 0 ? NoiseRow(rng) : ImageRow(rng);
      column.Store(slot, stored[slot].data());
    }
    std::vector<uint8_t> row(kRowBytes);
    for (int64_t slot = 0; slot < 32; ++slot) {
      CAPTURE(slot);
      column.Load(slot, row.data());
      REQUIRE(row == stored[slot]);
    }
  }
}

TEST_CASE("a slot never stored reads as zeros") {
  CompressedColumn column(/*capacity=*/4, kRowBytes);
  std::vector<uint8_t> row(kRowBytes, 0xFF);
  column.Load(2, row.data());
  CHECK(row == std::vector<uint8_t>(kRowBytes, 0));
}

TEST_CASE("bytes follow what the rows compress to") {
  std::mt19937_64 rng(4);
  const int64_t capacity = 64;
  CompressedColumn column(capacity, kRowBytes);
  const int64_t empty = column.bytes();
  for (int64_t slot = 0; slot < capacity; ++slot) column.Store(slot, ImageRow(rng).data());
  const int64_t images = column.bytes() - empty;
  CHECK(images > 0);
  CHECK(images < capacity * static_cast<int64_t>(kRowBytes) / 4);
  // Incompressible rows are kept as they are: no worse than uncompressed.
  for (int64_t slot = 0; slot < capacity; ++slot) column.Store(slot, NoiseRow(rng).data());
  const int64_t noise = column.bytes() - empty;
  CHECK(noise >= capacity * static_cast<int64_t>(kRowBytes));
  CHECK(noise < capacity * static_cast<int64_t>(kRowBytes + 64));
  // Overwriting with small rows gives the memory back.
  for (int64_t slot = 0; slot < capacity; ++slot) column.Store(slot, ImageRow(rng).data());
  CHECK(column.bytes() - empty < 2 * images);
}

TEST_CASE("compression names parse and unknown ones are refused with the key") {
  CHECK(ParseCompression("none").value() == Compression::kNone);
  CHECK(ParseCompression("lz4").value() == Compression::kLz4);
  const auto bad = ParseCompression("zstd");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("replay.compression") != std::string::npos);
}

}  // namespace
}  // namespace ferry::replay
