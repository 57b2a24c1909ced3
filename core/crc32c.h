// CRC32C (Castagnoli), the checksum of every wire payload and snapshot section.
// Uses the SSE4.2 instruction where the CPU has it, a table otherwise.
#ifndef FERRY_CORE_CRC32C_H_
#define FERRY_CORE_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace ferry::core {

// Extends `crc` (0 for a fresh checksum) over `size` bytes.
uint32_t Crc32c(uint32_t crc, const void* data, size_t size);

}  // namespace ferry::core

#endif  // FERRY_CORE_CRC32C_H_
