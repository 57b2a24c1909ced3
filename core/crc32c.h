// CRC32C (Castagnoli), the checksum of every wire payload and snapshot section.
//
//   x86-64 with SSE4.2 and PCLMULQDQ: three crc32q streams over adjacent
//   blocks, merged by carry-less multiplication (about 3x one stream);
//   SSE4.2 only: one crc32q stream; anything else: a byte table.
// All paths compute the same function; the fastest the CPU has is chosen once.
#ifndef FERRY_CORE_CRC32C_H_
#define FERRY_CORE_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace ferry::core {

// Extends `crc` (0 for a fresh checksum) over `size` bytes.
uint32_t Crc32c(uint32_t crc, const void* data, size_t size);

namespace internal {

// The slower paths, for tests and benchmarks that compare Crc32c with them.
// Crc32cOneStream is the table path on a CPU without SSE4.2.
uint32_t Crc32cTable(uint32_t crc, const void* data, size_t size);
uint32_t Crc32cOneStream(uint32_t crc, const void* data, size_t size);

}  // namespace internal
}  // namespace ferry::core

#endif  // FERRY_CORE_CRC32C_H_
