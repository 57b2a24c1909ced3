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

// With AVX-512 and VPCLMULQDQ, 16 lanes of 128 bits (four 512-bit registers)
// fold the data forward instead: a lane X standing for the bytes at its place
// is carried 256 bytes on as X * x^2048 and added to the lane there. Split X
// into its first qword A (the higher powers) and second qword B:
//   X * x^d = A * x^(64 + d) + B * x^d = A * (x^(64 + d - 33) mod P) + B * (x^(d - 33) mod P)
// in the reflected bit order, where a carry-less product adds one x and the
// 128-bit lane layout another 32 (the same offset as Shift above). At the end
// lane p moves 128 (15 - p) bits onto lane 15, and crc32q over that lane's two
// qwords multiplies it by x^32 mod P: the register.
constexpr size_t kFoldStride = 256;

struct LaneShift {
  uint64_t first;   // x^(64 + d - 33) mod P
  uint64_t second;  // x^(d - 33) mod P
};

constexpr LaneShift ShiftLaneBy(uint64_t bits) {
  return {XPowModP(64 + bits - 33), XPowModP(bits - 33)};
}

constexpr LaneShift kStrideShift = ShiftLaneBy(8 * kFoldStride);

struct FinalShifts {
  LaneShift lane[15];  // Lane p of the last stride onto lane 15.
};

constexpr FinalShifts MakeFinalShifts() {
  FinalShifts f{};
  for (int p = 0; p < 15; ++p) f.lane[p] = ShiftLaneBy(128 * (15 - p));
  return f;
}

constexpr FinalShifts kFinalShifts = MakeFinalShifts();

#define FERRY_FOLD_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.2")))

FERRY_FOLD_TARGET inline __m512i FoldStep(__m512i x, __m512i shift, const uint8_t* next) {
  const __m512i first = _mm512_clmulepi64_epi128(x, shift, 0x00);
  const __m512i second = _mm512_clmulepi64_epi128(x, shift, 0x11);
  return _mm512_ternarylogic_epi64(first, second, _mm512_loadu_si512(next), 0x96);  // a^b^c
}

FERRY_FOLD_TARGET inline __m128i FoldLane(__m128i x, LaneShift shift) {
  const __m128i k =
      _mm_set_epi64x(static_cast<int64_t>(shift.second), static_cast<int64_t>(shift.first));
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

// Consumes whole strides while at least two remain, then hands the rest to the three streams.
FERRY_FOLD_TARGET uint32_t FoldingRegister(uint32_t crc, const uint8_t* p, size_t n) {
  if (n < 2 * kFoldStride) return ThreeStreamRegister(crc, p, n);
  __m512i x[4];
  for (int r = 0; r < 4; ++r) x[r] = _mm512_loadu_si512(p + 64 * r);
  x[0] = _mm512_xor_si512(x[0], _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(crc))));
  p += kFoldStride;
  n -= kFoldStride;
  const __m512i shift = _mm512_set4_epi64(
      static_cast<int64_t>(kStrideShift.second), static_cast<int64_t>(kStrideShift.first),
      static_cast<int64_t>(kStrideShift.second), static_cast<int64_t>(kStrideShift.first));
  while (n >= kFoldStride) {
    for (int r = 0; r < 4; ++r) x[r] = FoldStep(x[r], shift, p + 64 * r);
    p += kFoldStride;
    n -= kFoldStride;
  }
  alignas(64) __m128i lanes[16];
  for (int r = 0; r < 4; ++r) _mm512_store_si512(lanes + 4 * r, x[r]);
  __m128i last = lanes[15];
  for (int lane = 0; lane < 15; ++lane) {
    last = _mm_xor_si128(last, FoldLane(lanes[lane], kFinalShifts.lane[lane]));
  }
  uint64_t reg = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(last)));
  reg = _mm_crc32_u64(reg, static_cast<uint64_t>(_mm_extract_epi64(last, 1)));
  return ThreeStreamRegister(static_cast<uint32_t>(reg), p, n);
}

#undef FERRY_FOLD_TARGET

#endif

using RegisterFunction = uint32_t (*)(uint32_t, const uint8_t*, size_t);

RegisterFunction Fastest() {
#if defined(__x86_64__)
  const bool streams = __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
  if (streams && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("vpclmulqdq")) {
    return FoldingRegister;
  }
  if (streams) return ThreeStreamRegister;
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

uint32_t Crc32cThreeStreams(uint32_t crc, const void* data, size_t size) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul")) {
    return ~ThreeStreamRegister(~crc, static_cast<const uint8_t*>(data), size);
  }
#endif
  return Crc32cOneStream(crc, data, size);
}

}  // namespace internal
}  // namespace ferry::core
