#include "replay/compressed_column.h"

#include <lz4.h>

#include <cstring>

#include "core/status.h"

namespace ferry::replay {

const char* CompressionName(Compression compression) {
  switch (compression) {
    case Compression::kNone:
      return "none";
    case Compression::kLz4:
      return "lz4";
  }
  return "unknown";
}

Result<Compression> ParseCompression(const std::string& name) {
  for (Compression c : {Compression::kNone, Compression::kLz4}) {
    if (name == CompressionName(c)) return c;
  }
  return InvalidArgument("replay.compression: unknown compression '" + name + "'; use none or lz4");
}

CompressedColumn::CompressedColumn(int64_t capacity, size_t row_bytes)
    : row_bytes_(row_bytes), rows_(static_cast<size_t>(capacity)) {
  FERRY_CHECK(row_bytes > 0 && row_bytes <= static_cast<size_t>(LZ4_MAX_INPUT_SIZE));
  scratch_.resize(static_cast<size_t>(LZ4_compressBound(static_cast<int>(row_bytes))));
  bytes_ = static_cast<int64_t>(rows_.capacity() * sizeof(rows_[0]) + scratch_.capacity());
}

void CompressedColumn::Store(int64_t slot, const uint8_t* row) {
  const int n = LZ4_compress_default(
      reinterpret_cast<const char*>(row), reinterpret_cast<char*>(scratch_.data()),
      static_cast<int>(row_bytes_), static_cast<int>(scratch_.size()));
  FERRY_CHECK(n > 0);  // The scratch holds LZ4's worst case.
  const bool shrank = static_cast<size_t>(n) < row_bytes_;
  const uint8_t* bytes = shrank ? scratch_.data() : row;
  const size_t size = shrank ? static_cast<size_t>(n) : row_bytes_;
  std::vector<uint8_t>& stored = rows_[slot];
  bytes_ -= static_cast<int64_t>(stored.capacity());
  // A buffer far larger than its new row goes, or rows of varying sizes
  // would leave every slot holding the largest it ever had.
  if (stored.capacity() > 2 * size) std::vector<uint8_t>().swap(stored);
  stored.assign(bytes, bytes + size);
  bytes_ += static_cast<int64_t>(stored.capacity());
}

void CompressedColumn::Load(int64_t slot, uint8_t* row) const {
  const std::vector<uint8_t>& stored = rows_[slot];
  if (stored.empty()) {
    std::memset(row, 0, row_bytes_);
  } else if (stored.size() == row_bytes_) {
    std::memcpy(row, stored.data(), row_bytes_);
  } else {
    const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(stored.data()),
                                      reinterpret_cast<char*>(row), static_cast<int>(stored.size()),
                                      static_cast<int>(row_bytes_));
    FERRY_CHECK(n == static_cast<int>(row_bytes_));  // Only Store writes these bytes.
  }
}

}  // namespace ferry::replay
