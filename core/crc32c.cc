#include "core/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ferry::core {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // Reflected Castagnoli polynomial.

// Polynomials mod P in the reflected form the CRC uses: bit 31 is x^0, bit 0 x^31.
constexpr uint32_t kOne = 0x80000000u;

// a * b mod P.
constexpr uint32_t MultiplyModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (int i = 0; i < 32; ++i) {
    if (a & (kOne >> i)) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPolynomial : b >> 1;  // b *= x
  }
  return product;
}

// x^n mod P.
constexpr uint32_t XPowModP(uint64_t n) {
  uint32_t result = kOne;
  uint32_t square = kOne >> 1;  // x^(2^0)
  for (; n != 0; n >>= 1) {
    if (n & 1) result = MultiplyModP(result, square);
    square = MultiplyModP(square, square);
  }
  return result;
}

std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}

// The CRC register (no pre- or post-inversion) extended over n bytes.
uint32_t TableRegister(uint32_t crc, const uint8_t* p, size_t n) {
  static const std::array<uint32_t, 256> table = MakeTable();
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)

__attribute__((target("sse4.2"))) uint32_t OneStreamRegister(uint32_t crc, const uint8_t* p,
                                                             size_t n) {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

// Three streams run over three adjacent blocks of kBlock bytes: crc32q has a
// latency of three cycles and a throughput of one per cycle, so one stream
// leaves two thirds of the unit idle. The streams' registers then merge as
//   crc(A B C) = crc(A) * x^(16 kBlock) + crc(B) * x^(8 kBlock) + crc(C)   (mod P)
// where multiplying by x^(8 n) shifts a register over n zero bytes. A
// carry-less product of the register with x^(8 n - 33) mod P is 64 bits whose
// crc32q from zero is that shift (the product's bit order adds one x, crc32q
// another 32). Long blocks amortise the merge; short ones serve frames of a
// few KB.
constexpr size_t kLongBlock = 8192;
constexpr size_t kShortBlock = 256;

struct ShiftConstants {
  uint64_t one_block;
  uint64_t two_blocks;
};

constexpr ShiftConstants ShiftsFor(size_t block) {
  return {XPowModP(8 * block - 33), XPowModP(16 * block - 33)};
}

constexpr ShiftConstants kLongShifts = ShiftsFor(kLongBlock);
constexpr ShiftConstants kShortShifts = ShiftsFor(kShortBlock);

__attribute__((target("sse4.2,pclmul"))) inline uint32_t Shift(uint32_t crc, uint64_t constant) {
  const __m128i product =
      _mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(crc)),
                           _mm_cvtsi64_si128(static_cast<int64_t>(constant)), 0x00);
  return static_cast<uint32_t>(_mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(product))));
}

template <size_t kBlock>
__attribute__((target("sse4.2,pclmul"))) inline uint32_t ThreeStreams(uint32_t crc,
                                                                      const uint8_t*& p, size_t& n,
                                                                      ShiftConstants shifts) {
  while (n >= 3 * kBlock) {
    uint64_t a = crc, b = 0, c = 0;
    for (size_t i = 0; i < kBlock; i += 8) {
      uint64_t wa, wb, wc;
      std::memcpy(&wa, p + i, 8);
      std::memcpy(&wb, p + kBlock + i, 8);
      std::memcpy(&wc, p + 2 * kBlock + i, 8);
      a = _mm_crc32_u64(a, wa);
      b = _mm_crc32_u64(b, wb);
      c = _mm_crc32_u64(c, wc);
    }
    crc = Shift(static_cast<uint32_t>(a), shifts.two_blocks) ^
          Shift(static_cast<uint32_t>(b), shifts.one_block) ^ static_cast<uint32_t>(c);
    p += 3 * kBlock;
    n -= 3 * kBlock;
  }
  return crc;
}

__attribute__((target("sse4.2,pclmul"))) uint32_t ThreeStreamRegister(uint32_t crc,
                                                                      const uint8_t* p, size_t n) {
  crc = ThreeStreams<kLongBlock>(crc, p, n, kLongShifts);
  crc = ThreeStreams<kShortBlock>(crc, p, n, kShortShifts);
  return OneStreamRegister(crc, p, n);
}

#endif

using RegisterFunction = uint32_t (*)(uint32_t, const uint8_t*, size_t);

RegisterFunction Fastest() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul")) {
    return ThreeStreamRegister;
  }
  if (__builtin_cpu_supports("sse4.2")) return OneStreamRegister;
#endif
  return TableRegister;
}

}  // namespace

uint32_t Crc32c(uint32_t crc, const void* data, size_t size) {
  static const RegisterFunction fastest = Fastest();
  return ~fastest(~crc, static_cast<const uint8_t*>(data), size);
}

// The register of A B is A's shifted over |B| zero bytes plus B's from zero; with the CRC's
// pre- and post-inversion the constants cancel, leaving
//   Crc32c(0, A B) = crc_a * x^(8 |B|) + crc_b   (mod P).
uint32_t Crc32cConcat(uint32_t crc_a, uint32_t crc_b, uint64_t size_b) {
  return MultiplyModP(crc_a, XPowModP(8 * size_b)) ^ crc_b;
}

// crc_ab = shifted(crc_a) ^ crc_b, so crc_b = shifted(crc_a) ^ crc_ab: the same combination.
uint32_t Crc32cSuffix(uint32_t crc_ab, uint32_t crc_a, uint64_t size_b) {
  return Crc32cConcat(crc_a, crc_ab, size_b);
}

namespace internal {

uint32_t Crc32cTable(uint32_t crc, const void* data, size_t size) {
  return ~TableRegister(~crc, static_cast<const uint8_t*>(data), size);
}

uint32_t Crc32cOneStream(uint32_t crc, const void* data, size_t size) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("sse4.2")) {
    return ~OneStreamRegister(~crc, static_cast<const uint8_t*>(data), size);
  }
#endif
  return Crc32cTable(crc, data, size);
}

}  // namespace internal
}  // namespace ferry::core
