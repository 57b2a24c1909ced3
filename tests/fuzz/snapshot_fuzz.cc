// libFuzzer target: arbitrary bytes as a snapshot file for ReadSnapshot, and
// what it accepts restored into a Table of the snapshot's own configuration.
//   byte 0   bit 0 set: every checksum in the file (header and sections) is
//            recomputed first, so mutations reach the checks behind them
//   then     the file
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/crc32c.h"
#include "replay/compressed_column.h"
#include "replay/dedup.h"
#include "replay/protocol.h"
#include "replay/rate_limiter.h"
#include "replay/snapshot.h"
#include "replay/table.h"

namespace ferry::fuzz {
namespace {

constexpr size_t kFileHeaderBytes = 32;  // Before the header's CRC (replay/snapshot.h).
constexpr int64_t kMaxRestoredCapacity = 1 << 16;

uint32_t CrcAt(const std::vector<uint8_t>& file, size_t begin, size_t end) {
  return core::Crc32c(0, file.data() + begin, end - begin);
}

void PutCrc(std::vector<uint8_t>& file, size_t at, uint32_t crc) {
  std::memcpy(file.data() + at, &crc, sizeof(crc));
}

// Recomputes the header's and each complete section's checksums in place.
void FixChecksums(std::vector<uint8_t>& file) {
  if (file.size() < kFileHeaderBytes + 4) return;
  PutCrc(file, kFileHeaderBytes, CrcAt(file, 0, kFileHeaderBytes));
  size_t at = kFileHeaderBytes + 4;
  while (at + 4 <= file.size()) {
    uint32_t name_bytes;
    std::memcpy(&name_bytes, file.data() + at, 4);
    const size_t header_end = at + 4 + static_cast<size_t>(name_bytes) + 8 + 4;
    if (name_bytes > file.size() || header_end + 4 > file.size()) return;
    uint64_t length;
    std::memcpy(&length, file.data() + header_end - 12, 8);
    const size_t payload = header_end + 4;
    if (length > file.size() - payload) return;
    PutCrc(file, header_end - 4, CrcAt(file, payload, payload + static_cast<size_t>(length)));
    PutCrc(file, header_end, CrcAt(file, at, header_end));
    at = payload + static_cast<size_t>(length);
  }
}

std::string TempPath() { return "/tmp/ferry_snapshot_fuzz_" + std::to_string(getpid()) + ".snap"; }

}  // namespace
}  // namespace ferry::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ferry;
  if (size < 1) return 0;
  std::vector<uint8_t> file(data + 1, data + size);
  if (data[0] & 1) fuzz::FixChecksums(file);
  static const std::string path = fuzz::TempPath();
  FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr) return 0;
  std::fwrite(file.data(), 1, file.size(), out);
  std::fclose(out);
  Result<replay::ShardSnapshot> snapshot = replay::ReadSnapshot(path);
  if (!snapshot.ok() || snapshot->capacity > fuzz::kMaxRestoredCapacity) return 0;
  for (replay::Compression compression : {replay::Compression::kNone, replay::Compression::kLz4}) {
    replay::Table table(snapshot->schema, snapshot->capacity, snapshot->alpha, snapshot->selector,
                        compression);
    replay::Deduplicator dedup;
    replay::RateLimiter limiter(1.0, 1, 1e18);
    replay::StatsMeta stats;
    (void)replay::RestoreShard(*snapshot, &table, &dedup, &limiter, &stats);
  }
  return 0;
}
