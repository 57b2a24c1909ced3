// Faults during a real CartPole run: every role is killed (or stopped) once, and the run must
// still reach its return threshold, each victim restarted the way its role recovers. Across
// the shard's SIGKILL no acked transition is lost or duplicated: the shards' final snapshots
// hold, for the actor that was never killed, exactly the transitions its writer saw acked.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "replay/snapshot.h"
#include "tests/integration/ports.h"

namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> CommandLine(pid_t pid) {
  const std::string raw = ReadFile(fs::path("/proc") / std::to_string(pid) / "cmdline");
  std::vector<std::string> args;
  std::string arg;
  for (char c : raw) {
    if (c == '\0') {
      args.push_back(arg);
      arg.clear();
    } else {
      arg += c;
    }
  }
  return args;
}

// The pid of a ferry process of the run in `dir` whose arguments after the binary begin with
// `role` (e.g. {"actor", "--config", ..., "--id", "0"} matches {"actor"} and "--id 0"); -1 if none.
pid_t FindRole(const fs::path& dir, const std::string& role, const std::string& id_flag = "",
               const std::string& id = "") {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::stoi(name);
    const std::vector<std::string> args = CommandLine(pid);
    // Servers and actors run as ferry-replay, ferry-paramserver and ferry-actor, with no role
    // word; learner ranks as ferry-torch learner.
    const bool lean = !args.empty() && args[0] == std::string(FERRY_BINARY) + "-" + role;
    const bool torch_role =
        args.size() >= 4 && args[0] == std::string(FERRY_BINARY) + "-torch" && args[1] == role;
    if (!lean && !torch_role) continue;
    bool in_run = false, has_id = id_flag.empty();
    for (size_t i = 2; i < args.size(); ++i) {
      in_run |= args[i].find(dir.string()) != std::string::npos;
      if (!id_flag.empty() && args[i] == id_flag && i + 1 < args.size() && args[i + 1] == id) {
        has_id = true;
      }
    }
    if (in_run && has_id) return pid;
  }
  return -1;
}

// What an actor's last log line says its writer did ("actor K: stopped after ...").
struct ActorTotals {
  bool found = false;
  int64_t acked = 0;
  int64_t resent_after_restarts = 0;
  int64_t unprotected = 0;
};

ActorTotals FinalActorLine(const std::string& log, int actor) {
  const std::regex line(
      "actor " + std::to_string(actor) +
      ": stopped after \\d+ steps, (\\d+) transitions acked, retained \\d+ "
      "\\([0-9.]+ MB\\), re-sent after shard restarts (\\d+), unprotected (\\d+)");
  ActorTotals totals;
  std::smatch match;
  if (!std::regex_search(log, match, line)) return totals;
  totals.found = true;
  totals.acked = std::stoll(match[1]);
  totals.resent_after_restarts = std::stoll(match[2]);
  totals.unprotected = std::stoll(match[3]);
  return totals;
}

// Transitions of `actor` that shard `shard`'s newest snapshot in `dir` holds (its final one).
int64_t SnapshotInserted(const fs::path& dir, uint32_t shard, uint32_t actor) {
  const auto listing = ferry::replay::ListSnapshots(dir.string(), shard);
  REQUIRE(listing.ok());
  REQUIRE_FALSE(listing->snapshots.empty());
  const auto snapshot = ferry::replay::ReadSnapshot(listing->snapshots.back().path);
  REQUIRE_MESSAGE(snapshot.ok(), snapshot.status().message());
  for (const auto& record : snapshot->dedup) {
    if (record.actor == actor) return record.inserted;
  }
  return 0;
}

TEST_CASE(
    "SIGKILL of an actor, a shard, the paramserver and a learner rank, and a stopped "
    "actor: the run still reaches its target") {
  const fs::path dir = fs::temp_directory_path() / ("ferry-it-faults-" + std::to_string(getpid()));
  fs::remove_all(dir);
  const int port_base = ferry::testing::RunPorts();
  const fs::path log = dir.string() + ".out";
  // stop.min_seconds keeps the run going until the last fault has happened: without it, one
  // run solved CartPole in 8 s, before most of them.
  std::vector<std::string> args = {
      "run",   std::string(FERRY_SOURCE_DIR) + "/configs/cartpole.yaml",
      "--set", "run.dir=" + dir.string(),
      "--set", "stop.min_seconds=30",
      "--set", "stop.max_seconds=240",
      "--set", "learner.checkpoint_period_seconds=2",
      "--set", "replay.snapshot_period_seconds=2",
      "--set", "network.replay_port=" + std::to_string(port_base),
      "--set", "network.paramserver_port=" + std::to_string(port_base + 10),
      "--set", "network.broadcast_port=" + std::to_string(port_base + 11)};
  std::fflush(nullptr);  // Or the child flushes our buffered output a second time.
  const pid_t ferry = fork();
  if (ferry == 0) {
    FILE* out = std::freopen(log.c_str(), "w", stdout);
    if (out == nullptr) _exit(126);
    dup2(STDOUT_FILENO, STDERR_FILENO);
    std::vector<char*> argv = {const_cast<char*>(FERRY_BINARY)};
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(FERRY_BINARY, argv.data());
    _exit(127);
  }

  // Each fault at its time after the start, once its victim is found, and the shard and the
  // learner only once they have written a snapshot and a checkpoint to come back from (a loaded
  // machine may start slowly); early enough to precede the target.
  struct Fault {
    double at;
    std::string what;
    std::function<pid_t()> find;
    int signal;
    bool done = false;
  };
  const auto snapshotted = [&] {
    return ReadFile(dir / "logs" / "replay-1.log").find("by a forked child") != std::string::npos;
  };
  const auto checkpointed = [&] {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir / "checkpoints", ec)) {
      if (entry.path().extension() == ".pt") return true;
    }
    return false;
  };
  bool shard_killed = false;
  pid_t stopped_actor = -1;
  double stopped_at = 0;
  std::vector<Fault> faults = {
      {6, "SIGKILL actor-0", [&] { return FindRole(dir, "actor", "--id", "0"); }, SIGKILL},
      {10, "SIGKILL replay-1",
       [&] {
         // Once the learner trains (it has checkpointed), so the actors' inserts flow.
         const bool ready = snapshotted() && checkpointed();
         const pid_t shard = ready ? FindRole(dir, "replay", "--shard", "1") : -1;
         shard_killed = shard > 0;
         return shard;
       },
       SIGKILL},
      {13, "SIGKILL paramserver", [&] { return FindRole(dir, "paramserver"); }, SIGKILL},
      {16, "SIGKILL one learner rank",
       [&] { return checkpointed() ? FindRole(dir, "learner") : -1; }, SIGKILL},
      // After the shard's kill, so actor 1 was sending to it then and has acked batches to re-send.
      {19, "SIGSTOP actor-1",
       [&] { return stopped_actor = shard_killed ? FindRole(dir, "actor", "--id", "1") : -1; },
       SIGSTOP},
  };
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  bool exited = false, resumed_actor = false;
  while (!exited) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waitpid(ferry, &status, WNOHANG) == ferry) {
      exited = true;
      break;
    }
    for (Fault& f : faults) {
      if (f.done || elapsed < f.at) continue;
      const pid_t victim = f.find();
      if (victim > 0) {
        MESSAGE(f.what << " (pid " << victim << ") at " << elapsed << " s");
        kill(victim, f.signal);
        f.done = true;
        if (f.signal == SIGSTOP) stopped_at = elapsed;
      }
    }
    if (stopped_actor > 0 && !resumed_actor && elapsed > stopped_at + 10) {
      kill(stopped_actor, SIGCONT);
      resumed_actor = true;
    }
    if (elapsed > 300) {
      kill(ferry, SIGKILL);
      waitpid(ferry, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (stopped_actor > 0 && !resumed_actor) kill(stopped_actor, SIGCONT);
  const std::string output = ReadFile(log);
  INFO(output);
  for (const Fault& f : faults) {
    CAPTURE(f.what);
    CHECK(f.done);  // Every fault happened before the run ended.
  }
  REQUIRE(exited);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // Target reached.
  for (const char* role : {"actor-0", "replay-1", "paramserver", "learner"}) {
    CAPTURE(role);
    CHECK(output.find(std::string("ferry run: ") + role + " exited") != std::string::npos);
  }
  // The learner came back from its checkpoint, the shard from its snapshot.
  CHECK(ReadFile(dir / "logs" / "learner.log").find("resumed from") != std::string::npos);
  CHECK(ReadFile(dir / "logs" / "replay-1.log").find("restored") != std::string::npos);
  for (const char* shard : {"replay-0", "replay-1"}) {
    CAPTURE(shard);
    CHECK(ReadFile(dir / "logs" / (std::string(shard) + ".log")).find(" 0 bad messages") !=
          std::string::npos);
  }
  // Actor 1 was stopped and resumed, never killed: one writer from start to end.
  const ActorTotals actor1 = FinalActorLine(ReadFile(dir / "logs" / "actor-1.log"), 1);
  REQUIRE(actor1.found);
  const int64_t stored =
      SnapshotInserted(dir / "snapshots", 0, 1) + SnapshotInserted(dir / "snapshots", 1, 1);
  MESSAGE("actor 1: " << actor1.acked << " transitions acked, " << stored
                      << " stored by the shards, " << actor1.resent_after_restarts
                      << " re-sent after the shard restart");
  CHECK(actor1.unprotected == 0);
  CHECK(actor1.acked > 0);
  CHECK(stored == actor1.acked);
  fs::remove_all(dir);
  fs::remove(log);
}

}  // namespace
