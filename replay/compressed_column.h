// One table column whose rows are stored LZ4-compressed, each on its own.
//
//   Store(slot, row) -> LZ4 (fast mode) -> the slot's own buffer; a row that
//                       does not shrink is kept as it is
//   Load(slot, row)  -> LZ4 decompression (or a copy) into the caller's row
//
// Rows are compressed singly so that a sample decompresses only the rows it
// draws. Worth it for image observations (uint8 frames with large flat areas);
// the memory a column holds follows what its rows compress to (bytes()).
// Not thread-safe: its Table's owner calls it from one thread.
#ifndef FERRY_REPLAY_COMPRESSED_COLUMN_H_
#define FERRY_REPLAY_COMPRESSED_COLUMN_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace ferry::replay {

// How a table stores its uint8 columns (config: replay.compression).
enum class Compression : uint8_t { kNone = 0, kLz4 = 1 };
const char* CompressionName(Compression compression);
Result<Compression> ParseCompression(const std::string& name);

class CompressedColumn {
 public:
  CompressedColumn(int64_t capacity, size_t row_bytes);

  void Store(int64_t slot, const uint8_t* row);
  // Writes row_bytes bytes; a slot never stored reads as zeros.
  void Load(int64_t slot, uint8_t* row) const;
  // Heap bytes held, buffers included at their capacity.
  int64_t bytes() const { return bytes_; }

 private:
  size_t row_bytes_;
  // A slot's bytes: LZ4 when shorter than row_bytes_, the row itself when equal.
  std::vector<std::vector<uint8_t>> rows_;
  std::vector<uint8_t> scratch_;  // LZ4_compressBound(row_bytes_).
  int64_t bytes_ = 0;
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_COMPRESSED_COLUMN_H_
