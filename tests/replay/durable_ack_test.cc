// Durable acks: a shard's acks say how far each actor's batches are in a
// complete snapshot, and ReplayWriter keeps the rest to re-send when the shard
// comes back from that snapshot. A SIGKILL is played in-process by restoring a
// copy of the snapshot files taken at the "kill", not the final snapshot a
// stopping shard writes. A shard that is restarted on the same port gets a
// context of its own: closing that context closes the listening socket, so the
// next shard can bind the port at once.
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/log.h"
#include "core/wire.h"
#include "replay/snapshot.h"
#include "replay/writer.h"
#include "tests/replay/shard_fixture.h"

namespace ferry::replay {
namespace {

namespace fs = std::filesystem;
using testing::RawClient;
using testing::ShardThread;
using testing::TestSchema;

constexpr int kBatch = 16;  // Rows per batch; batch b holds row ids b * kBatch..
constexpr uint32_t kActor = 5;

// A directory of its own under the system's temporary one, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static int count = 0;
    path_ = fs::temp_directory_path() /
            ("ferry-durable-test-" + std::to_string(getpid()) + "-" + std::to_string(count++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string Sub(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// Writes batches numbered from 0 through one writer; row ids follow the batch number.
class NumberedWriter {
 public:
  NumberedWriter(zmq::context_t& context, const std::string& endpoint, WriterOptions options)
      : writer_(context, {endpoint}, TestSchema(), options) {}

  void WriteBatch() {
    const std::atomic<bool> never{false};
    const Status written =
        writer_.Write(kBatch, testing::MakeColumns(TestSchema(), batches_ * kBatch, kBatch),
                      std::vector<float>(kBatch, 1.0f), never);
    REQUIRE_MESSAGE(written.ok(), written.message());
    ++batches_;
  }
  void Flush() {
    const Status flushed = writer_.Flush(/*timeout_seconds=*/10);
    REQUIRE_MESSAGE(flushed.ok(), flushed.message());
  }

  ReplayWriter& writer() { return writer_; }
  int64_t batches() const { return batches_; }

 private:
  ReplayWriter writer_;
  int64_t batches_ = 0;
};

WriterOptions TestWriterOptions() {
  WriterOptions options;
  options.actor_id = kActor;
  options.epoch = 1;
  options.resend_after = 0.2;
  return options;
}

// Copies the complete snapshot files of `from` to `to`: what a shard killed now restores.
void CopySnapshots(const std::string& from, const std::string& to) {
  fs::create_directories(to);
  const Result<SnapshotListing> listing = ListSnapshots(from, 0);
  REQUIRE_MESSAGE(listing.ok(), listing.status().message());
  int copied = 0;
  for (const auto& file : listing->snapshots) {
    std::error_code ec;  // The shard may delete an old one meanwhile.
    fs::copy_file(file.path, fs::path(to) / fs::path(file.path).filename(), ec);
    copied += ec ? 0 : 1;
  }
  REQUIRE(copied > 0);
}

// The row ids the newest snapshot in `dir` holds, each checked to be there once.
std::set<int64_t> SnapshotRowIds(const std::string& dir, uint32_t actor, int64_t* inserted) {
  const Result<SnapshotListing> listing = ListSnapshots(dir, 0);
  REQUIRE_MESSAGE(listing.ok(), listing.status().message());
  REQUIRE_FALSE(listing->snapshots.empty());
  const Result<ShardSnapshot> snapshot = ReadSnapshot(listing->snapshots.back().path);
  REQUIRE_MESSAGE(snapshot.ok(), snapshot.status().message());
  std::set<int64_t> ids;
  for (int64_t slot = 0; slot < snapshot->size; ++slot) {
    const int64_t id = testing::RowId(snapshot->columns[core::kPolicyVersion], slot);
    if (!ids.insert(id).second) FAIL("row id " << id << " is stored twice");
  }
  *inserted = 0;
  for (const auto& record : snapshot->dedup) {
    if (record.actor == actor) *inserted = record.inserted;
  }
  return ids;
}

std::set<int64_t> FirstIds(int64_t count) {
  std::set<int64_t> ids;
  for (int64_t id = 0; id < count; ++id) ids.insert(id);
  return ids;
}

TEST_CASE("acks carry the shard's incarnation and how far an actor's batches are durable") {
  TempDir dir;
  zmq::context_t context;
  ShardOptions options = testing::TestShardOptions();
  options.snapshot_dir = dir.Sub("snapshots");
  options.snapshot_period_seconds = 0.05;
  ShardThread shard(context, options);
  RawClient client(context, shard.endpoint());

  const InsertAckMeta first = client.Insert(kActor, 0, 0, kBatch, 1.0f, /*epoch=*/1);
  CHECK(first.snapshots == 1);
  CHECK(first.incarnation != 0);
  CHECK(first.durable_through == 0);  // No snapshot holds it when it is acked.

  // Once a snapshot that holds batch 0 is complete, acks say so.
  uint64_t sequence = 1;
  InsertAckMeta ack;
  const double deadline = core::NowSeconds() + 10;
  do {
    REQUIRE(core::NowSeconds() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ack = client.Insert(kActor, sequence, sequence * kBatch, kBatch, 1.0f, /*epoch=*/1);
    CHECK(ack.durable_through <= sequence);  // Never the batch just stored.
    ++sequence;
  } while (ack.durable_through == 0);
  CHECK(ack.incarnation == first.incarnation);

  // Durability is per (actor, epoch): another actor, or this one restarted, has none yet.
  CHECK(client.Insert(kActor + 1, 0, 1 << 20, kBatch, 1.0f, /*epoch=*/1).durable_through == 0);
  CHECK(client.Insert(kActor, 0, 2 << 20, kBatch, 1.0f, /*epoch=*/2).durable_through == 0);

  ShardOptions elsewhere = testing::TestShardOptions(1);
  ShardThread other(context, elsewhere);
  RawClient other_client(context, other.endpoint());
  const InsertAckMeta unsnapshotted = other_client.Insert(kActor, 0, 0, kBatch, 1.0f, 1);
  CHECK(unsnapshotted.snapshots == 0);
  CHECK(unsnapshotted.incarnation != 0);
  CHECK(unsnapshotted.incarnation != first.incarnation);
}

TEST_CASE("a shard restored from its snapshot gets every acked batch back from the writer, once") {
  TempDir dir;
  zmq::context_t context;
  ShardOptions options = testing::TestShardOptions();
  options.capacity = 4096;
  options.snapshot_dir = dir.Sub("live");
  options.snapshot_period_seconds = 1.0;  // The kill below comes well before the next one.
  NumberedWriter numbered(context, options.endpoint, TestWriterOptions());
  ReplayWriter& writer = numbered.writer();

  int64_t retained_at_kill = 0;
  {
    zmq::context_t shard_context;
    ShardThread shard(shard_context, options);
    // Until acks report a snapshot complete: the writer lets go of what it holds, keeping
    // only the batches acked since that snapshot started.
    const double deadline = core::NowSeconds() + 10;
    do {
      REQUIRE(core::NowSeconds() < deadline);
      numbered.WriteBatch();
      numbered.Flush();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (writer.retained_transitions() == numbered.batches() * kBatch);
    CHECK(writer.retained_transitions() >= kBatch);  // Never the batch just acked.

    // Acked right after a snapshot completed: none of these is durable yet.
    for (int b = 0; b < 12; ++b) numbered.WriteBatch();
    numbered.Flush();
    retained_at_kill = writer.retained_transitions();
    CHECK(retained_at_kill >= kBatch);
    CopySnapshots(options.snapshot_dir, dir.Sub("at-kill"));
  }
  CHECK(writer.restart_resent_transitions() == 0);

  ShardOptions restarted = options;
  restarted.snapshot_dir = dir.Sub("at-kill");
  restarted.snapshot_period_seconds = 0;  // Only the final one, read below.
  const int64_t written = (numbered.batches() + 1) * kBatch;
  {
    zmq::context_t shard_context;
    ShardThread shard(shard_context, restarted);
    // The ack of a new batch shows the new incarnation; the writer re-sends what it retained.
    numbered.WriteBatch();
    numbered.Flush();
    CHECK(writer.restart_resent_transitions() == retained_at_kill);
    CHECK(writer.acked_transitions() == written);  // Re-sent batches are not counted again.
    CHECK(writer.unprotected_transitions() == 0);

    RawClient client(context, shard.endpoint());
    const core::Message reply = client.StatsReply();
    CHECK(testing::PerActorCounts(reply).at(kActor) == static_cast<uint64_t>(written));
    CHECK(testing::DecodeStats(reply).mass.size == written);
  }
  int64_t inserted = 0;
  CHECK(SnapshotRowIds(restarted.snapshot_dir, kActor, &inserted) == FirstIds(written));
  CHECK(inserted == written);
}

TEST_CASE("past retain_bytes the writer lets go of its oldest retained batches and counts them") {
  TempDir dir;
  zmq::context_t context;
  ShardOptions options = testing::TestShardOptions();
  options.snapshot_dir = dir.Sub("never-periodic");  // Snapshots only when stopped.
  const int64_t batch_bytes = static_cast<int64_t>(core::MetaBytes<InsertMeta>()) +
                              kBatch * (TestSchema().row_bytes() + sizeof(float));
  WriterOptions writer_options = TestWriterOptions();
  writer_options.retain_bytes = batch_bytes * 7 / 2;  // Room for three batches.
  NumberedWriter numbered(context, options.endpoint, writer_options);
  ReplayWriter& writer = numbered.writer();
  {
    zmq::context_t shard_context;
    ShardThread shard(shard_context, options);
    for (int b = 0; b < 10; ++b) numbered.WriteBatch();
    numbered.Flush();
    CHECK(writer.acked_transitions() == 10 * kBatch);
    CHECK(writer.retained_transitions() == 3 * kBatch);
    CHECK(writer.retained_bytes() == 3 * batch_bytes);
    CHECK(writer.unprotected_transitions() == 7 * kBatch);
  }
  // A shard that lost everything gets the newest three back, and the batch that shows it.
  ShardOptions fresh = options;
  fresh.snapshot_dir = dir.Sub("fresh");
  {
    zmq::context_t shard_context;
    ShardThread shard(shard_context, fresh);
    numbered.WriteBatch();
    numbered.Flush();
    CHECK(writer.restart_resent_transitions() == 3 * kBatch);
  }
  int64_t inserted = 0;
  std::set<int64_t> expected;
  for (int64_t id = 7 * kBatch; id < 11 * kBatch; ++id) expected.insert(id);
  CHECK(SnapshotRowIds(fresh.snapshot_dir, kActor, &inserted) == expected);
  CHECK(inserted == 4 * kBatch);
}

TEST_CASE("a writer retains nothing for shards that never snapshot") {
  zmq::context_t context;
  ShardOptions options = testing::TestShardOptions();
  NumberedWriter numbered(context, options.endpoint, TestWriterOptions());
  ReplayWriter& writer = numbered.writer();
  ShardThread shard(context, options);
  for (int b = 0; b < 10; ++b) numbered.WriteBatch();
  numbered.Flush();
  CHECK(writer.acked_transitions() == 10 * kBatch);
  CHECK(writer.retained_transitions() == 0);
  CHECK(writer.retained_bytes() == 0);
  CHECK(writer.unprotected_transitions() == 0);
}

}  // namespace
}  // namespace ferry::replay
