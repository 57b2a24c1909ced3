// Kills a real `ferry replay` while it writes snapshots and restarts it: what it
// restores is whole and consistent, re-sent batches are stored once, and the
// snapshot it writes on SIGTERM holds everything it acked since.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "core/experience.h"
#include "core/log.h"
#include "replay/snapshot.h"
#include "replay/writer.h"
#include "tests/integration/ports.h"
#include "tests/replay/shard_fixture.h"

namespace {

namespace fs = std::filesystem;
using ferry::core::NowSeconds;
using ferry::replay::ShardSnapshot;

constexpr int kBatch = 64;                   // Rows per InsertBatch; batch b holds ids b * kBatch..
constexpr int64_t kCapacity = 200000;        // Never filled: nothing is evicted in this test.
constexpr int kMaxBatchesPerRound = 900;     // All rounds together stay below kCapacity rows.
constexpr uint32_t kActor = 7;               // Writes through a ReplayWriter.
constexpr uint32_t kRawActor = 8;            // Sends one raw batch per round, and again.
constexpr int64_t kRawFirstBatch = 1 << 20;  // Batch index of its sequence 0.

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Whether a started shard is sent SIGUSR1 ("the learner has ended") before it runs.
enum class EarlyLearnerEnded { kNo, kYes };

// One `ferry replay --shard 0` process, its output in `log`. Killed when the object goes.
class ReplayProcess {
 public:
  ReplayProcess(const std::vector<std::string>& args, fs::path log,
                EarlyLearnerEnded early = EarlyLearnerEnded::kNo)
      : log_(std::move(log)) {
    std::fflush(nullptr);  // Or the child would write our buffered output again.
    pid_ = fork();
    if (pid_ == 0) {
      if (std::freopen(log_.c_str(), "w", stdout) == nullptr) _exit(126);
      dup2(STDOUT_FILENO, STDERR_FILENO);
      if (early == EarlyLearnerEnded::kYes) {
        // As `ferry run` starts a shard (SIGUSR1 blocked across exec), with the signal sent
        // before the shard could install its handler: it stays pending through exec.
        sigset_t usr1;
        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        sigprocmask(SIG_BLOCK, &usr1, nullptr);
        raise(SIGUSR1);
      }
      std::vector<char*> argv = {const_cast<char*>(FERRY_BINARY)};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(FERRY_BINARY, argv.data());
      _exit(127);
    }
  }
  ~ReplayProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  ReplayProcess(const ReplayProcess&) = delete;
  ReplayProcess& operator=(const ReplayProcess&) = delete;

  // Stops it in its tracks (SIGSTOP); a snapshot child it forked goes on writing.
  void Freeze() { kill(pid_, SIGSTOP); }

  // Sends `signal` and waits for the exit (SIGKILL after `timeout` s); the exit
  // code, or 128 + the signal that ended it.
  int Stop(int signal, double timeout) {
    kill(pid_, signal);
    const double deadline = NowSeconds() + timeout;
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) != pid_) {
      if (NowSeconds() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // Whether the log shows `text` within `timeout` s.
  bool WaitForLog(const std::string& text, double timeout) const {
    const double deadline = NowSeconds() + timeout;
    while (NowSeconds() < deadline) {
      if (Log().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  std::string Log() const { return ReadText(log_); }

 private:
  fs::path log_;
  pid_t pid_ = -1;
};

// What a started shard says it restored ("restored N items from PATH (...)"): the path empty and
// the count -1 when it restored nothing.
struct Restored {
  std::string path;
  int64_t items = -1;
};
Restored ParseRestored(const std::string& log) {
  const std::string marker = " items from ";
  const size_t at = log.find(marker);
  if (at == std::string::npos) return {};
  const size_t start = at + marker.size();
  const size_t count = log.rfind(' ', at - 1) + 1;
  return {log.substr(start, log.find(" (", start) - start),
          std::stoll(log.substr(count, at - count))};
}

// Whether a snapshot is being written while one numbered `sequence` or later is complete.
bool WritingAfter(const fs::path& dir, uint64_t sequence) {
  const auto listing = ferry::replay::ListSnapshots(dir.string(), 0);
  REQUIRE(listing.ok());
  return !listing->leftovers.empty() && !listing->snapshots.empty() &&
         listing->snapshots.back().sequence >= sequence;
}

// Checks a snapshot is whole and consistent: every stored row carries its id in
// every column, each batch is stored completely and once, and the batches
// stored are exactly those the deduplicator says were stored. Returns them.
std::set<int64_t> CheckedBatches(const ShardSnapshot& s) {
  INFO(s.path);
  REQUIRE(s.size < s.capacity);
  CHECK(s.limiter_inserts == s.size);
  std::set<int64_t> ids;
  for (int64_t slot = 0; slot < s.size; ++slot) {
    const int64_t id = ferry::replay::testing::RowId(s.columns[ferry::core::kPolicyVersion], slot);
    float obs = 0;
    int32_t action = 0;
    std::memcpy(&obs, s.columns[ferry::core::kObs].data() + slot * 16 + 12, sizeof(obs));
    std::memcpy(&action, s.columns[ferry::core::kAction].data() + slot * 4, sizeof(action));
    if (obs != static_cast<float>(id) || action != static_cast<int32_t>(id)) {
      FAIL("slot " << slot << " holds a torn row of id " << id);
    }
    if (!ids.insert(id).second) FAIL("id " << id << " is stored twice");
  }
  std::set<int64_t> batches;
  for (int64_t id : ids) batches.insert(id / kBatch);
  CHECK(static_cast<int64_t>(batches.size()) * kBatch == s.size);

  std::set<int64_t> deduplicated;
  int64_t inserted = 0;
  for (const auto& record : s.dedup) {
    REQUIRE((record.actor == kActor || record.actor == kRawActor));
    const int64_t first = record.actor == kActor ? 0 : kRawFirstBatch;
    for (uint64_t b = 0; b < record.next_unseen; ++b) deduplicated.insert(first + b);
    for (uint64_t b : record.above) deduplicated.insert(first + b);
    inserted += record.inserted;
  }
  CHECK(inserted == s.size);
  CHECK(deduplicated == batches);
  return batches;
}

bool Stored(const ShardSnapshot& s, uint32_t actor, uint64_t sequence) {
  for (const auto& record : s.dedup) {
    if (record.actor != actor) continue;
    return sequence < record.next_unseen ||
           std::count(record.above.begin(), record.above.end(), sequence) > 0;
  }
  return false;
}

// Rounds 0-2 insert until a snapshot that holds this round's raw batch is
// complete and the next is being written, freeze the shard, fill the writer's
// window with batches the shard never sees, and SIGKILL it. Each restart must
// restore that snapshot whole, refuse the raw batch when it is sent again, and
// store the frozen-out batches once the writer re-sends them. Round 3 stops the
// shard with SIGTERM: its final snapshot must hold everything the writer saw
// acked, also what a kill took before a snapshot held it (durable acks: the
// writer kept those batches and re-sent them to the restarted shard).
TEST_CASE("a replay shard SIGKILLed mid-snapshot restarts exactly-once; SIGTERM saves all") {
  const fs::path dir =
      fs::temp_directory_path() / ("ferry-it-snapshot-" + std::to_string(getpid()));
  const fs::path snapshots = dir / "snapshots";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const int port = ferry::testing::RunPorts();  // Restarted after a SIGKILL.
  const std::string endpoint = ferry::replay::testing::LoopbackEndpoint(port);
  std::vector<std::string> args = {"replay", "--config",
                                   std::string(FERRY_SOURCE_DIR) + "/configs/cartpole.yaml",
                                   "--shard", "0"};
  const std::vector<std::string> overrides = {
      "replay.shards=1",
      "network.replay_port=" + std::to_string(port),
      "replay.capacity=" + std::to_string(kCapacity),
      "replay.min_size_to_sample=" + std::to_string(kCapacity),
      "replay.snapshot_dir=" + snapshots.string(),
      "replay.snapshot_period_seconds=0.2"};
  for (const std::string& override : overrides) {
    args.push_back("--set");
    args.push_back(override);
  }
  const ferry::core::Schema schema = ferry::replay::testing::TestSchema();
  const double deadline = NowSeconds() + 50;

  zmq::context_t context(1);
  ferry::replay::WriterOptions options;
  options.actor_id = kActor;
  options.epoch = 1;
  options.resend_after = 0.3;
  ferry::replay::ReplayWriter writer(context, {endpoint}, schema, options);
  const std::atomic<bool> never{false};
  int64_t batches_written = 0;
  // Writes one batch, never blocking: Write waits only when the window is full.
  auto write_batch = [&] {
    while (writer.in_flight() >= options.max_in_flight) {
      REQUIRE(NowSeconds() < deadline);
      writer.Poll(10);
    }
    const std::vector<float> priorities(kBatch, 1.0f);
    const ferry::Status written = writer.Write(
        kBatch, ferry::replay::testing::MakeColumns(schema, batches_written * kBatch, kBatch),
        priorities, never);
    REQUIRE(written.ok());
    ++batches_written;
  };

  std::set<int64_t> restored_before;
  std::set<int64_t> frozen_out;  // Sent while the shard was frozen, so re-sent after a restart.
  int killed_mid_write = 0;
  for (uint64_t round = 0; round <= 3; ++round) {
    CAPTURE(round);
    ReplayProcess shard(args, dir / ("replay-" + std::to_string(round) + ".log"));
    REQUIRE_MESSAGE(shard.WaitForLog("serving", 20), shard.Log());
    const std::string log = shard.Log();
    INFO(log);
    if (log.find("removing") != std::string::npos) ++killed_mid_write;
    const Restored restored = ParseRestored(log);
    CHECK((round == 0) == restored.path.empty());
    ferry::replay::testing::RawClient client(context, endpoint);
    if (!restored.path.empty()) {
      ferry::Result<ShardSnapshot> snapshot = ferry::replay::ReadSnapshot(restored.path);
      REQUIRE_MESSAGE(snapshot.ok(), snapshot.status().message());
      const std::set<int64_t> batches = CheckedBatches(*snapshot);
      CHECK(std::includes(batches.begin(), batches.end(), restored_before.begin(),
                          restored_before.end()));
      restored_before = batches;
      // The shard restored the snapshot whole. Frozen-out batches that the writer's ZeroMQ
      // socket had not yet handed to the dead shard's connection when it was killed reach the
      // new one once the socket reconnects, test call or not: each is stored once, as new.
      CHECK(restored.items == snapshot->size);
      const ferry::replay::StatsMeta stats = client.Stats();
      const int64_t arrived = stats.mass.size - snapshot->size;
      CHECK(arrived >= 0);
      CHECK(arrived % kBatch == 0);
      CHECK(arrived <= options.max_in_flight * kBatch);
      CHECK(stats.mass.inserted_total == snapshot->limiter_inserts + arrived);
      CHECK(Stored(*snapshot, kRawActor, round - 1));
      const auto again = client.Insert(kRawActor, round - 1, (kRawFirstBatch + round - 1) * kBatch,
                                       kBatch, 1.0f, /*epoch=*/1);
      CHECK(again.duplicate == 1);
    }
    if (round == 3) {
      REQUIRE(writer.Flush(20).ok());  // Re-sends what the last kill left unacked.
      for (int i = 0; i < 100; ++i) write_batch();
      REQUIRE(writer.Flush(20).ok());
      const ferry::replay::StatsMeta stats = client.Stats();
      // No acked transition counted twice: what the shard counts is at most what it
      // acked as new, to the writer and to the three raw batches.
      CHECK(stats.mass.inserted_total == stats.mass.size);
      CHECK(stats.mass.inserted_total <= writer.acked_transitions() + 3 * kBatch);
      CHECK(writer.acked_transitions() == batches_written * kBatch);
      CHECK(shard.Stop(SIGTERM, 20) == 0);
      CHECK(shard.Log().find("final snapshot") != std::string::npos);
      const auto listing = ferry::replay::ListSnapshots(snapshots.string(), 0);
      REQUIRE(listing.ok());
      REQUIRE(listing->snapshots.size() == 2);  // The newest two are kept.
      ferry::Result<ShardSnapshot> final_snapshot =
          ferry::replay::ReadSnapshot(listing->snapshots.back().path);
      REQUIRE_MESSAGE(final_snapshot.ok(), final_snapshot.status().message());
      CHECK(final_snapshot->limiter_inserts == stats.mass.inserted_total);
      const std::set<int64_t> batches = CheckedBatches(*final_snapshot);
      CHECK(std::includes(batches.begin(), batches.end(), restored_before.begin(),
                          restored_before.end()));
      CHECK(std::includes(batches.begin(), batches.end(), frozen_out.begin(), frozen_out.end()));
      for (int64_t b = batches_written - 100; b < batches_written; ++b) CHECK(batches.count(b));
      int64_t acked_missing = 0;  // Every batch the writer wrote was acked (checked above).
      for (int64_t b = 0; b < batches_written; ++b) acked_missing += batches.count(b) == 0;
      CHECK(acked_missing == 0);
      for (int64_t raw = 0; raw < 3; ++raw) CHECK(batches.count(kRawFirstBatch + raw));
      break;
    }
    const auto fresh = client.Insert(kRawActor, round, (kRawFirstBatch + round) * kBatch, kBatch,
                                     1.0f, /*epoch=*/1);
    CHECK(fresh.duplicate == 0);
    const auto listing = ferry::replay::ListSnapshots(snapshots.string(), 0);
    REQUIRE(listing.ok());
    // next_sequence is above every snapshot whose file exists, .tmp included; a snapshot forked
    // just before the raw batch may not have created its .tmp yet and take next_sequence itself,
    // so the first snapshot sure to be forked after the raw batch is the one after.
    const uint64_t holding_raw = listing->next_sequence + 1;
    const double started = NowSeconds();
    bool writing = false;
    for (int i = 0; i < kMaxBatchesPerRound && !writing; ++i) {
      write_batch();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      writing = NowSeconds() - started > 0.25 && WritingAfter(snapshots, holding_raw);
    }
    REQUIRE(writing);
    shard.Freeze();
    while (writer.in_flight() < options.max_in_flight) {
      frozen_out.insert(batches_written);
      write_batch();
    }
    CHECK(shard.Stop(SIGKILL, 10) == 128 + SIGKILL);
  }
  CHECK(killed_mid_write >= 1);
  CHECK(writer.resent_batches() >= static_cast<int64_t>(frozen_out.size()));
  fs::remove_all(dir);
}

// `ferry run` may tell a shard that the learner has ended before the shard has installed its
// handler (a learner that fails at start-up, Ctrl-C): the signal must wait for the handler,
// not end the shard before it writes its final snapshot.
TEST_CASE("a replay shard sent SIGUSR1 before its handler is in place acts on it and serves") {
  const fs::path dir = fs::temp_directory_path() / ("ferry-it-usr1-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const int port = ferry::testing::RunPorts();
  const std::vector<std::string> args = {"replay",
                                         "--config",
                                         std::string(FERRY_SOURCE_DIR) + "/configs/cartpole.yaml",
                                         "--shard",
                                         "0",
                                         "--set",
                                         "replay.shards=1",
                                         "--set",
                                         "network.replay_port=" + std::to_string(port),
                                         "--set",
                                         "replay.snapshot_dir=" + (dir / "snapshots").string()};
  ReplayProcess shard(args, dir / "replay.log", EarlyLearnerEnded::kYes);
  REQUIRE_MESSAGE(shard.WaitForLog("the learner has ended", 20), shard.Log());
  zmq::context_t context(1);
  ferry::replay::testing::RawClient client(context, ferry::replay::testing::LoopbackEndpoint(port));
  CHECK(client.Stats().mass.size == 0);
  CHECK(shard.Stop(SIGTERM, 10) == 0);
  fs::remove_all(dir);
}

}  // namespace
