// Writes the seed corpus of the fuzz targets: one valid message of each type
// a shard accepts (as fuzz_input.h frames them), a packed message, and small
// snapshots, compressed table or not.
//   usage: fuzz_make_seeds DIR   (writes DIR/wire, DIR/shard, DIR/snapshot)
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "core/wire.h"
#include "replay/compressed_column.h"
#include "replay/dedup.h"
#include "replay/protocol.h"
#include "replay/rate_limiter.h"
#include "replay/snapshot.h"
#include "replay/table.h"
#include "tests/fuzz/fuzz_input.h"

namespace ferry::fuzz {
namespace {

namespace fs = std::filesystem;
using core::MessageType;

void Write(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> RowBytes(size_t n, std::mt19937_64& rng) {
  std::vector<uint8_t> bytes(n);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng() % 4);  // Compressible.
  return bytes;
}

std::vector<std::pair<std::string, std::vector<uint8_t>>> Messages(std::mt19937_64& rng) {
  const core::Schema schema = FuzzSchema();
  std::vector<std::pair<std::string, std::vector<uint8_t>>> out;

  replay::InsertMeta insert;
  insert.schema_fingerprint = schema.Fingerprint();
  insert.actor_epoch = 1;
  insert.count = 3;
  std::vector<zmq::message_t> payload;
  payload.push_back(core::EncodeMeta(insert));
  for (const auto& column : schema.columns) {
    const std::vector<uint8_t> rows = RowBytes(3 * column.row_bytes(), rng);
    payload.emplace_back(rows.data(), rows.size());
  }
  const std::vector<float> priorities = {0.5f, 1.0f, 2.0f};
  payload.emplace_back(priorities.data(), priorities.size() * sizeof(float));
  out.emplace_back("insert", InputOf(MessageType::kInsertBatch, payload));

  replay::SampleRequestMeta sample;
  sample.schema_fingerprint = schema.Fingerprint();
  sample.count = 4;
  payload.clear();
  payload.push_back(core::EncodeMeta(sample));
  out.emplace_back("sample", InputOf(MessageType::kSampleRequest, payload));

  replay::UpdatePrioritiesMeta update;
  update.count = 2;
  const std::vector<replay::Key> keys = {{0, 1}, {2, 1}};
  const std::vector<float> values = {3.0f, 0.25f};
  payload.clear();
  payload.push_back(core::EncodeMeta(update));
  payload.emplace_back(keys.data(), keys.size() * sizeof(replay::Key));
  payload.emplace_back(values.data(), values.size() * sizeof(float));
  out.emplace_back("update", InputOf(MessageType::kUpdatePriorities, payload));

  out.emplace_back("stats", InputOf(MessageType::kStatsRequest, {}));

  replay::InspectRequestMeta inspect;
  inspect.top_k = 2;
  inspect.sample_count = 2;
  inspect.seed = 5;
  payload.clear();
  payload.push_back(core::EncodeMeta(inspect));
  out.emplace_back("inspect", InputOf(MessageType::kInspectRequest, payload));
  return out;
}

std::vector<uint8_t> Snapshot(replay::Compression compression, std::mt19937_64& rng,
                              const fs::path& dir) {
  const core::Schema schema = FuzzSchema();
  replay::Table table(schema, /*capacity=*/6, /*alpha=*/0.6, replay::SelectorKind::kPrioritized,
                      compression);
  replay::Deduplicator dedup;
  replay::RateLimiter limiter(/*samples_per_insert=*/1.0, /*min_size_to_sample=*/1,
                              /*tolerance=*/1e18);
  for (uint64_t sequence = 0; sequence < 3; ++sequence) {
    FERRY_CHECK(dedup.Accept(/*actor=*/1, /*epoch=*/1, sequence));
    std::vector<std::vector<uint8_t>> columns;
    std::vector<const uint8_t*> pointers;
    for (const auto& column : schema.columns)
      columns.push_back(RowBytes(3 * column.row_bytes(), rng));
    for (const auto& column : columns) pointers.push_back(column.data());
    const std::vector<float> priorities = {1.0f, 2.0f, 0.5f};
    table.Insert(3, pointers, priorities.data());
    limiter.Inserted(3);
    dedup.CountInserted(1, 3);
  }
  const fs::path path = dir / "seed.snap";
  const Status written = replay::WriteSnapshot(path.string(), {&table, &dedup, &limiter, {}});
  FERRY_CHECK(written.ok());
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> file = {0};  // Byte 0 of a snapshot_fuzz input: checksums as they are.
  file.insert(file.end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  fs::remove(path);
  return file;
}

int Main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds DIR\n");
    return 2;
  }
  const fs::path root = argv[1];
  for (const char* target : {"wire", "shard", "snapshot"}) fs::create_directories(root / target);
  std::mt19937_64 rng(1);
  for (const auto& [name, input] : Messages(rng)) {
    Write(root / "wire" / name, input);
    Write(root / "shard" / name, input);
  }
  const std::vector<zmq::message_t> error = core::ErrorPayload("a refused batch");
  const zmq::message_t packed = core::Pack(MessageType::kError, 3, 9, error);
  Write(root / "wire" / "packed_error",
        std::vector<uint8_t>(packed.data<uint8_t>(), packed.data<uint8_t>() + packed.size()));
  Write(root / "snapshot" / "plain", Snapshot(replay::Compression::kNone, rng, root / "snapshot"));
  Write(root / "snapshot" / "lz4", Snapshot(replay::Compression::kLz4, rng, root / "snapshot"));
  return 0;
}

}  // namespace
}  // namespace ferry::fuzz

int main(int argc, char** argv) { return ferry::fuzz::Main(argc, argv); }
