// Faults during a real CartPole run: every role is killed (or stopped) once, and the run must
// still reach its return threshold, each victim restarted the way its role recovers.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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
    // Shards run as ferry-replay beside ferry, with no role word.
    const bool lean_shard = role == "replay" && !args.empty() &&
                            args[0] == std::string(FERRY_BINARY) + "-replay";
    if (!lean_shard && (args.size() < 4 || args[0] != FERRY_BINARY || args[1] != role)) continue;
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

TEST_CASE("SIGKILL of an actor, a shard, the paramserver and a learner rank, and a stopped "
          "actor: the run still reaches its target") {
  const fs::path dir = fs::temp_directory_path() / ("ferry-it-faults-" + std::to_string(getpid()));
  fs::remove_all(dir);
  const int port_base = 23000 + getpid() % 1000 * 16;
  const fs::path log = dir.string() + ".out";
  std::vector<std::string> args = {
      "run", std::string(FERRY_SOURCE_DIR) + "/configs/cartpole.yaml",
      "--set", "run.dir=" + dir.string(),
      "--set", "stop.max_seconds=240",
      "--set", "learner.checkpoint_period_seconds=2",
      "--set", "replay.snapshot_period_seconds=2",
      "--set", "network.replay_port=" + std::to_string(port_base),
      "--set", "network.paramserver_port=" + std::to_string(port_base + 10),
      "--set", "network.broadcast_port=" + std::to_string(port_base + 11)};
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

  // Each fault at its time after the start, once its victim is found: late enough that the
  // shard has snapshotted and the learner checkpointed, early enough to precede the target.
  struct Fault {
    double at;
    std::string what;
    std::function<pid_t()> find;
    int signal;
    bool done = false;
  };
  pid_t stopped_actor = -1;
  std::vector<Fault> faults = {
      {6, "SIGKILL actor-0", [&] { return FindRole(dir, "actor", "--id", "0"); }, SIGKILL},
      {10, "SIGKILL replay-1", [&] { return FindRole(dir, "replay", "--shard", "1"); }, SIGKILL},
      {13, "SIGKILL paramserver", [&] { return FindRole(dir, "paramserver"); }, SIGKILL},
      {16, "SIGKILL one learner rank", [&] { return FindRole(dir, "learner"); }, SIGKILL},
      {19, "SIGSTOP actor-1", [&] { return stopped_actor = FindRole(dir, "actor", "--id", "1"); },
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
      }
    }
    if (stopped_actor > 0 && !resumed_actor && elapsed > 29) {
      kill(stopped_actor, SIGCONT);  // After 10 s.
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
  fs::remove_all(dir);
  fs::remove(log);
}

}  // namespace
