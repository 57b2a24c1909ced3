// CRC32C (Castagnoli), the checksum of every wire payload and snapshot section.
//
//   x86-64 with AVX-512 and VPCLMULQDQ: 512-bit carry-less folding over
//   inputs of 512 bytes and more (about 2x the three streams);
//   with SSE4.2 and PCLMULQDQ: three crc32q streams over adjacent blocks,
//   merged by carry-less multiplication (about 3x one stream);
//   SSE4.2 only: one crc32q stream; anything else: a byte table.
// All paths compute the same function; the fastest the CPU has is chosen once.
#ifndef FERRY_CORE_CRC32C_H_
#define FERRY_CORE_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace ferry::core {

// Extends `crc` (0 for a fresh checksum) over `size` bytes.
uint32_t Crc32c(uint32_t crc, const void* data, size_t size);

// Checksums of concatenations from the parts' checksums, reading no data (O(log size_b)),
// where crc_a = Crc32c(0, A) and crc_b = Crc32c(0, B):
//   Crc32cConcat(crc_a, crc_b, |B|)   = Crc32c(0, A B)
//   Crc32cSuffix(crc_ab, crc_a, |B|)  = crc_b, given crc_ab = Crc32c(0, A B)
// So a message whose parts' checksums are known is checked or labelled without another pass.
uint32_t Crc32cConcat(uint32_t crc_a, uint32_t crc_b, uint64_t size_b);
uint32_t Crc32cSuffix(uint32_t crc_ab, uint32_t crc_a, uint64_t size_b);

namespace internal {

// The slower paths, for tests and benchmarks that compare Crc32c with them.
// Each falls back to the next slower one on a CPU without its instructions.
uint32_t Crc32cTable(uint32_t crc, const void* data, size_t size);
uint32_t Crc32cOneStream(uint32_t crc, const void* data, size_t size);
uint32_t Crc32cThreeStreams(uint32_t crc, const void* data, size_t size);

}  // namespace internal
}  // namespace ferry::core

#endif  // FERRY_CORE_CRC32C_H_
