#include "replay/snapshot.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/log.h"
#include "replay/snapshotter.h"
#include "tests/replay/shard_fixture.h"

namespace ferry::replay {
namespace {

namespace fs = std::filesystem;
using testing::MakeColumns;
using testing::TestSchema;

// A directory of its own under the system's temporary one, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static int count = 0;
    path_ = fs::temp_directory_path() /
            ("ferry-snapshot-test-" + std::to_string(getpid()) + "-" + std::to_string(count++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string File(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Replaces the file rather than truncating it: ext4 flushes a truncated file
// on close (auto_da_alloc), which would make these tests slow.
void WriteBytes(const std::string& path, const uint8_t* data, size_t size) {
  fs::remove(path);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// The objects a shard keeps, as the shard holds them.
struct ShardState {
  explicit ShardState(int64_t capacity = 48, core::Schema schema = TestSchema(), double alpha = 0.6,
                      SelectorKind selector = SelectorKind::kPrioritized,
                      Compression compression = Compression::kNone)
      : table(std::move(schema), capacity, alpha, selector, compression),
        limiter(/*samples_per_insert=*/2.0, /*min_size_to_sample=*/1, /*tolerance=*/1e18) {}

  ShardView View() const { return {&table, &dedup, &limiter, CountersOf(stats)}; }

  // Inserts `count` rows with ids next_id.. for (actor, epoch, sequence), as the
  // shard does: only if the deduplicator has not seen the batch.
  bool Insert(uint32_t actor, uint64_t epoch, uint64_t sequence, int count, std::mt19937_64& rng) {
    if (!dedup.Accept(actor, epoch, sequence)) return false;
    const auto columns = MakeColumns(table.schema(), next_id, count);
    std::vector<const uint8_t*> pointers;
    for (const auto& c : columns) pointers.push_back(c.data());
    std::vector<float> priorities(count);
    for (float& p : priorities) p = std::uniform_real_distribution<float>(0.01f, 3.0f)(rng);
    table.Insert(count, pointers, priorities.data());
    limiter.Inserted(count);
    dedup.CountInserted(actor, count);
    next_id += count;
    return true;
  }

  SampleBatch Sample(int count, std::mt19937_64& rng) {
    SampleBatch batch;
    table.Sample(count, rng, &batch);
    limiter.Sampled(count);
    stats.samples_total += count;
    return batch;
  }

  Table table;
  Deduplicator dedup;
  RateLimiter limiter;
  StatsMeta stats;
  int64_t next_id = 0;
};

// Fills a shard past its capacity from three actors (one out of order, one
// restarted with a newer epoch), samples it and updates priorities.
void Populate(ShardState& s, std::mt19937_64& rng) {
  for (uint64_t sequence = 0; sequence < 10; ++sequence) s.Insert(1, 5, sequence, 7, rng);
  for (uint64_t sequence : {0, 1, 3, 4}) s.Insert(2, 0, sequence, 3, rng);
  for (uint64_t sequence = 0; sequence < 3; ++sequence) s.Insert(3, 1, sequence, 2, rng);
  s.Insert(3, 2, 0, 2, rng);
  const SampleBatch batch = s.Sample(16, rng);
  std::vector<float> priorities(batch.keys.size());
  for (float& p : priorities) p = std::uniform_real_distribution<float>(0.01f, 5.0f)(rng);
  s.stats.updates_applied +=
      s.table.UpdatePriorities(batch.keys.data(), priorities.data(), static_cast<int>(16));
  s.stats.updates_stale = 3;
  s.stats.duplicates_dropped = 4;
  s.stats.bad_messages = 5;
  s.stats.samples_refused = 6;
}

void CheckSameTable(const Table& a, const Table& b) {
  REQUIRE(a.size() == b.size());
  REQUIRE(a.capacity() == b.capacity());
  CHECK(a.next_slot() == b.next_slot());
  CHECK(a.total_mass() == doctest::Approx(b.total_mass()));
  CHECK(a.min_mass() == b.min_mass());
  for (size_t c = 0; c < a.schema().columns.size(); ++c) {
    const size_t bytes = a.capacity() * a.schema().columns[c].row_bytes();
    std::vector<uint8_t> rows_a(bytes), rows_b(bytes);
    a.ReadRows(static_cast<int>(c), 0, a.capacity(), rows_a.data());
    b.ReadRows(static_cast<int>(c), 0, b.capacity(), rows_b.data());
    CHECK(rows_a == rows_b);
  }
  for (int64_t slot = 0; slot < a.capacity(); ++slot) {
    CAPTURE(slot);
    CHECK(a.generation(slot) == b.generation(slot));
    CHECK(a.times_sampled(slot) == b.times_sampled(slot));
    CHECK(a.mass(slot) == b.mass(slot));
  }
}

std::string WriteOrDie(const std::string& path, const ShardView& view) {
  const Status written = WriteSnapshot(path, view);
  REQUIRE_MESSAGE(written.ok(), written.message());
  return path;
}

std::string ReadError(const std::string& path) {
  Result<ShardSnapshot> read = ReadSnapshot(path);
  REQUIRE_FALSE(read.ok());
  return read.status().message();
}

TEST_CASE("a snapshot reads back the whole shard and restores it exactly") {
  TempDir dir;
  std::mt19937_64 rng(7);
  ShardState original;
  Populate(original, rng);
  REQUIRE(original.table.size() == original.table.capacity());  // The ring has wrapped.
  const std::string path = WriteOrDie(dir.File(SnapshotFileName(0, 12)), original.View());
  CHECK(dir.File("shard-0-000012.snap") == path);
  CHECK_FALSE(fs::exists(path + ".tmp"));

  Result<ShardSnapshot> read = ReadSnapshot(path);
  REQUIRE_MESSAGE(read.ok(), read.status().message());
  const ShardSnapshot& s = *read;
  CHECK(s.path == path);
  CHECK(s.format_version == kSnapshotFormatVersion);
  CHECK(s.schema == TestSchema());
  CHECK(s.schema_fingerprint == TestSchema().Fingerprint());
  CHECK(s.selector == SelectorKind::kPrioritized);
  CHECK(s.capacity == 48);
  CHECK(s.alpha == 0.6);
  CHECK(s.size == original.table.size());
  CHECK(s.next_slot == original.table.next_slot());
  CHECK(s.dedup == original.dedup.Export());
  CHECK(s.limiter_inserts == original.limiter.inserts());
  CHECK(s.limiter_samples == original.limiter.samples());
  CHECK(s.counters == CountersOf(original.stats));
  std::vector<std::string> names;
  for (const auto& section : s.sections) names.push_back(section.name);
  CHECK(names == std::vector<std::string>{"schema", "table", "column obs", "column action",
                                          "column reward", "column discount", "column next_obs",
                                          "column policy_version", "generations", "times_sampled",
                                          "masses", "dedup", "rate_limiter", "counters"});

  ShardState restored;
  const Status status =
      RestoreShard(s, &restored.table, &restored.dedup, &restored.limiter, &restored.stats);
  REQUIRE_MESSAGE(status.ok(), status.message());
  CheckSameTable(original.table, restored.table);
  CHECK(restored.dedup.Export() == original.dedup.Export());
  CHECK(restored.dedup.inserted_per_actor() == original.dedup.inserted_per_actor());
  CHECK(restored.limiter.inserts() == original.limiter.inserts());
  CHECK(restored.limiter.samples() == original.limiter.samples());
  CHECK(CountersOf(restored.stats) == CountersOf(original.stats));
}

TEST_CASE("a snapshot of an LZ4 table restores into compressed and uncompressed tables alike") {
  core::Schema schema = TestSchema();
  for (int c : {core::kObs, core::kNextObs}) {
    schema.columns[c].dtype = core::DType::kUint8;
    schema.columns[c].shape = {16, 16};
  }
  TempDir dir;
  std::mt19937_64 rng(17);
  ShardState original(48, schema, 0.6, SelectorKind::kPrioritized, Compression::kLz4);
  Populate(original, rng);
  Result<ShardSnapshot> read =
      ReadSnapshot(WriteOrDie(dir.File("shard-0-000001.snap"), original.View()));
  REQUIRE_MESSAGE(read.ok(), read.status().message());
  for (Compression compression : {Compression::kLz4, Compression::kNone}) {
    CAPTURE(CompressionName(compression));
    ShardState restored(48, schema, 0.6, SelectorKind::kPrioritized, compression);
    const Status status =
        RestoreShard(*read, &restored.table, &restored.dedup, &restored.limiter, &restored.stats);
    REQUIRE_MESSAGE(status.ok(), status.message());
    CheckSameTable(original.table, restored.table);
  }
}

TEST_CASE("a restored shard goes on inserting, deduplicating and sampling like the original") {
  TempDir dir;
  std::mt19937_64 rng(8);
  ShardState original;
  Populate(original, rng);
  Result<ShardSnapshot> read =
      ReadSnapshot(WriteOrDie(dir.File("shard-0-000001.snap"), original.View()));
  REQUIRE(read.ok());
  ShardState restored;
  REQUIRE(RestoreShard(*read, &restored.table, &restored.dedup, &restored.limiter, &restored.stats)
              .ok());
  restored.next_id = original.next_id;

  std::mt19937_64 rng_a(99), rng_b(99);
  // Re-sends are refused and the gap left by actor 2's batch 2 is filled, in both.
  for (auto [actor, epoch, sequence] : {std::tuple{1u, 5ull, 9ull},
                                        {2u, 0ull, 3ull},
                                        {2u, 0ull, 2ull},
                                        {3u, 1ull, 5ull},
                                        {3u, 2ull, 1ull}}) {
    CAPTURE(actor);
    CAPTURE(sequence);
    CHECK(original.Insert(actor, epoch, sequence, 5, rng_a) ==
          restored.Insert(actor, epoch, sequence, 5, rng_b));
  }
  CHECK_FALSE(restored.Insert(2, 0, 2, 5, rng_b));
  for (int round = 0; round < 3; ++round) {
    const SampleBatch a = original.Sample(24, rng_a);
    const SampleBatch b = restored.Sample(24, rng_b);
    CHECK(a.keys == b.keys);
    CHECK(a.masses == b.masses);
    CHECK(a.times_sampled == b.times_sampled);
    CHECK(a.columns == b.columns);
  }
  CheckSameTable(original.table, restored.table);
  CHECK(restored.limiter.inserts() == original.limiter.inserts());
}

TEST_CASE("a flipped byte anywhere is refused, naming the section it hit") {
  TempDir dir;
  std::mt19937_64 rng(9);
  ShardState state;
  Populate(state, rng);
  const std::string good = WriteOrDie(dir.File("shard-0-000001.snap"), state.View());
  const std::vector<uint8_t> bytes = ReadBytes(good);
  Result<ShardSnapshot> read = ReadSnapshot(good);
  REQUIRE(read.ok());
  const std::string bad = dir.File("shard-0-000002.snap");
  auto flipped_error = [&](size_t offset) {
    std::vector<uint8_t> copy = bytes;
    copy[offset] ^= 0x5A;
    WriteBytes(bad, copy.data(), copy.size());
    return ReadError(bad);
  };

  uint64_t section_start = 36;  // The first section header follows the file header.
  for (const SnapshotSection& section : read->sections) {
    CAPTURE(section.name);
    const std::string quoted = "section '" + section.name + "'";
    CHECK(flipped_error(section.offset + section.length / 2) ==
          bad + ": " + quoted + " checksum mismatch");
    CHECK(flipped_error(section.offset + section.length - 1).find(quoted + " checksum mismatch") !=
          std::string::npos);
    for (uint64_t offset = section_start; offset < section.offset; ++offset) {
      CAPTURE(offset);
      CHECK(flipped_error(offset).find(quoted) != std::string::npos);
    }
    section_start = section.offset + section.length;
  }
  CHECK(flipped_error(0) == bad + ": not a ferry snapshot (no FRRYSNAP magic)");
  CHECK(flipped_error(9) ==
        bad + ": format version " + std::to_string(1 ^ (0x5A << 8)) + ", this build reads 1");
  for (size_t offset : {12, 20, 28, 33}) {
    CHECK(flipped_error(offset) == bad + ": header checksum mismatch");
  }
  for (size_t back = 1; back <= 16; ++back) {
    CHECK(flipped_error(bytes.size() - back) == bad + ": no end marker after the last section");
  }
}

TEST_CASE("a snapshot cut short anywhere is refused as truncated, never read") {
  TempDir dir;
  std::mt19937_64 rng(10);
  ShardState state(/*capacity=*/8);
  Populate(state, rng);
  const std::string path = WriteOrDie(dir.File("shard-0-000001.snap"), state.View());
  const std::vector<uint8_t> bytes = ReadBytes(path);
  const std::string cut = dir.File("cut.snap");
  WriteBytes(cut, bytes.data(), 0);
  CHECK(ReadError(cut) == cut + ": not a ferry snapshot (no FRRYSNAP magic)");
  for (size_t size = 1; size < bytes.size(); ++size) {
    CAPTURE(size);
    WriteBytes(cut, bytes.data(), size);
    CHECK(ReadError(cut).find(cut + ": truncated ") == 0);
  }
  const Result<ShardSnapshot> whole = ReadSnapshot(path);
  REQUIRE(whole.ok());
  for (const SnapshotSection& section : whole->sections) {
    WriteBytes(cut, bytes.data(), section.offset + section.length / 2);
    CHECK(ReadError(cut) == cut + ": truncated in section '" + section.name + "'");
  }
  WriteBytes(cut, bytes.data(), 20);
  CHECK(ReadError(cut) == cut + ": truncated in the header");
  WriteBytes(cut, bytes.data(), bytes.size() - 16);
  CHECK(ReadError(cut) == cut + ": truncated before the end marker");

  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  WriteBytes(cut, longer.data(), longer.size());
  CHECK(ReadError(cut) == cut + ": 1 unexpected bytes after the end marker");
  CHECK(ReadSnapshot(dir.File("absent.snap")).status().code() == StatusCode::kNotFound);
}

TEST_CASE("other files, other versions and other configurations are refused clearly") {
  TempDir dir;
  std::mt19937_64 rng(11);
  ShardState state;
  Populate(state, rng);
  const std::string path = WriteOrDie(dir.File("shard-0-000001.snap"), state.View());
  std::vector<uint8_t> bytes = ReadBytes(path);

  const std::string other = dir.File("other.snap");
  const std::string text = "# a YAML file, not a snapshot\n";
  WriteBytes(other, reinterpret_cast<const uint8_t*>(text.data()), text.size());
  CHECK(ReadError(other) == other + ": not a ferry snapshot (no FRRYSNAP magic)");
  const uint32_t future = 7;
  std::memcpy(bytes.data() + 8, &future, sizeof(future));
  WriteBytes(other, bytes.data(), bytes.size());
  CHECK(ReadError(other) == other + ": format version 7, this build reads 1");

  Result<ShardSnapshot> read = ReadSnapshot(path);
  REQUIRE(read.ok());
  auto refusal = [&](ShardState& target) {
    const Status s =
        RestoreShard(*read, &target.table, &target.dedup, &target.limiter, &target.stats);
    REQUIRE_FALSE(s.ok());
    CHECK(target.table.size() == 0);
    CHECK(target.limiter.inserts() == 0);
    CHECK(target.dedup.Export().empty());
    return s.message();
  };
  ShardState wider(48, core::TransitionSchema(8, true, 1));
  CHECK(refusal(wider) == path + ": schema " + TestSchema().ToString() +
                              " differs from this shard's " +
                              core::TransitionSchema(8, true, 1).ToString());
  ShardState bigger(64);
  CHECK(refusal(bigger) == path + ": capacity 48 differs from this shard's 64 (replay.capacity)");
  ShardState uniform(48, TestSchema(), 0.6, SelectorKind::kUniform);
  CHECK(refusal(uniform) ==
        path + ": selector prioritized differs from this shard's uniform (replay.selector)");
  ShardState elsewhere(64);
  Snapshotter snapshotter(dir.path(), 0, /*period_seconds=*/0);
  const Status refused =
      snapshotter.Restore(&elsewhere.table, &elsewhere.dedup, &elsewhere.limiter, &elsewhere.stats);
  CHECK(refused.message() == path + ": capacity 48 differs from this shard's 64 (replay.capacity)" +
                                 "; move the snapshots away or set replay.snapshot_dir to start " +
                                 "afresh");
  ShardState flatter(48, TestSchema(), 0.5);
  CHECK(refusal(flatter).find(path + ": alpha 0.600000 differs from this shard's 0.500000") == 0);
}

TEST_CASE("the newest valid snapshot is restored; corrupt ones and leftovers are passed over") {
  TempDir dir;
  std::mt19937_64 rng(12);
  ShardState state;
  std::vector<int64_t> inserts;
  for (uint64_t sequence = 1; sequence <= 3; ++sequence) {
    state.Insert(1, 0, sequence - 1, 5, rng);
    inserts.push_back(state.limiter.inserts());
    WriteOrDie(dir.File(SnapshotFileName(0, sequence)), state.View());
  }
  WriteOrDie(dir.File(SnapshotFileName(1, 9)), state.View());  // Another shard's.
  const std::string newest = dir.File(SnapshotFileName(0, 3));
  std::vector<uint8_t> bytes = ReadBytes(newest);
  Result<ShardSnapshot> read = ReadSnapshot(newest);
  REQUIRE(read.ok());
  bytes[read->sections.at(10).offset] ^= 1;  // masses
  WriteBytes(newest, bytes.data(), bytes.size());
  WriteBytes(dir.File("shard-0-000004.snap.tmp"), bytes.data(), 100);
  WriteBytes(dir.File("notes.txt"), bytes.data(), 10);

  Result<SnapshotListing> listing = ListSnapshots(dir.path(), 0);
  REQUIRE(listing.ok());
  REQUIRE(listing->snapshots.size() == 3);
  CHECK(listing->snapshots[0].sequence == 1);
  CHECK(listing->snapshots[2].path == newest);
  CHECK(listing->leftovers == std::vector<std::string>{dir.File("shard-0-000004.snap.tmp")});
  CHECK(listing->next_sequence == 5);
  std::optional<NewestSnapshot> chosen = ReadNewestSnapshot(*listing);
  REQUIRE(chosen.has_value());
  CHECK(chosen->file.sequence == 2);
  CHECK(chosen->snapshot.limiter_inserts == inserts[1]);

  ShardState restored;
  Snapshotter snapshotter(dir.path(), 0, /*period_seconds=*/0);
  const Status status =
      snapshotter.Restore(&restored.table, &restored.dedup, &restored.limiter, &restored.stats);
  REQUIRE_MESSAGE(status.ok(), status.message());
  CHECK(restored.limiter.inserts() == inserts[1]);
  CHECK(restored.table.size() == inserts[1]);
  CHECK_FALSE(fs::exists(dir.File("shard-0-000004.snap.tmp")));

  Result<SnapshotListing> empty = ListSnapshots(dir.File("missing"), 0);
  REQUIRE(empty.ok());
  CHECK(empty->snapshots.empty());
  CHECK_FALSE(ReadNewestSnapshot(*empty).has_value());
}

TEST_CASE("a forked child writes the state as of the fork; the newest two files are kept") {
  TempDir dir;
  std::mt19937_64 rng(13);
  ShardState state;
  auto files = [&] {
    const Result<SnapshotListing> listing = ListSnapshots(dir.path(), 0);
    REQUIRE(listing.ok());
    std::vector<uint64_t> sequences;
    for (const auto& f : listing->snapshots) sequences.push_back(f.sequence);
    return sequences;
  };
  {
    Snapshotter snapshotter(dir.path(), 0, /*period_seconds=*/1e-6);
    REQUIRE(snapshotter.Restore(&state.table, &state.dedup, &state.limiter, &state.stats).ok());
    snapshotter.Tick([&] { return state.View(); });  // Nothing changed: nothing written.
    state.Insert(1, 0, 0, 10, rng);
    const int64_t at_fork = state.limiter.inserts();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    snapshotter.Tick([&] { return state.View(); });
    state.Insert(1, 0, 1, 10, rng);  // After the fork: only the final snapshot has it.
    const double deadline = core::NowSeconds() + 10;
    while (!fs::exists(dir.File(SnapshotFileName(0, 1))) && core::NowSeconds() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    snapshotter.Finish(state.View());
    CHECK(files() == std::vector<uint64_t>{1, 2});
    CHECK(ReadSnapshot(dir.File(SnapshotFileName(0, 1)))->limiter_inserts == at_fork);
    CHECK(ReadSnapshot(dir.File(SnapshotFileName(0, 2)))->limiter_inserts == at_fork + 10);
  }
  for (uint64_t round = 3; round <= 4; ++round) {
    ShardState restored;
    Snapshotter snapshotter(dir.path(), 0, /*period_seconds=*/0);
    REQUIRE(
        snapshotter.Restore(&restored.table, &restored.dedup, &restored.limiter, &restored.stats)
            .ok());
    CHECK(restored.limiter.inserts() == state.limiter.inserts());
    snapshotter.Finish(restored.View());  // Nothing changed since the restored file.
    CHECK(files().back() == round - 1);
    state.Insert(1, 0, round, 10, rng);
    CHECK(restored.Insert(1, 0, round, 10, rng));
    snapshotter.Finish(restored.View());
    CHECK(files() == std::vector<uint64_t>{round - 1, round});
  }
}

TEST_CASE("stopping abandons a snapshot in progress for the final one") {
  TempDir dir;
  std::mt19937_64 rng(14);
  ShardState state(/*capacity=*/1 << 18);  // Some 20 MB to write: the child is still at it.
  Snapshotter snapshotter(dir.path(), 0, /*period_seconds=*/1e-6);
  REQUIRE(snapshotter.Restore(&state.table, &state.dedup, &state.limiter, &state.stats).ok());
  state.Insert(1, 0, 0, 10, rng);
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  snapshotter.Tick([&] { return state.View(); });
  state.Insert(1, 0, 1, 10, rng);
  snapshotter.Finish(state.View());
  const Result<SnapshotListing> listing = ListSnapshots(dir.path(), 0);
  REQUIRE(listing.ok());
  CHECK(listing->leftovers.empty());
  REQUIRE_FALSE(listing->snapshots.empty());
  CHECK(listing->snapshots.back().sequence == 2);
  CHECK(ReadSnapshot(listing->snapshots.back().path)->limiter_inserts == 20);
}

TEST_CASE("a restored shard gives up the gap of batches it acked after its snapshot") {
  Deduplicator dedup;
  REQUIRE(dedup.Import({{/*actor=*/1, /*epoch=*/3, /*next_unseen=*/10, {}, /*inserted=*/40}}).ok());
  // The actor acked 10..19 from the lost state and never sends them again.
  for (uint64_t sequence = 20; sequence < 20 + Deduplicator::kMaxSeenAhead; ++sequence) {
    CHECK(dedup.Accept(1, 3, sequence));
  }
  CHECK(dedup.Export()[0].next_unseen == 10);
  CHECK(dedup.Export()[0].above.size() == Deduplicator::kMaxSeenAhead);
  CHECK(dedup.Accept(1, 3, 20 + Deduplicator::kMaxSeenAhead));
  const Deduplicator::ActorRecord record = dedup.Export()[0];
  CHECK(record.next_unseen == 21 + Deduplicator::kMaxSeenAhead);
  CHECK(record.above.empty());
  CHECK(record.inserted == 40);
  CHECK_FALSE(dedup.Accept(1, 3, 15));
  CHECK(dedup.Accept(1, 3, 21 + Deduplicator::kMaxSeenAhead));

  Deduplicator invalid;
  CHECK(invalid.Import({{1, 0, 5, {5}, 0}}).message() ==
        "actor 1: sequences above 5 are not ascending and above it");
  CHECK(invalid.Import({{1, 0, 5, {}, 0}, {1, 0, 6, {}, 0}}).message() == "actor 1 appears twice");
}

}  // namespace
}  // namespace ferry::replay
