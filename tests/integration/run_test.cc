// Starts the real `ferry` binary: a whole topology on loopback, for short budgets.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/ports.h"

namespace {

namespace fs = std::filesystem;

struct Outcome {
  int exit_code = -1;
  std::string output;
  double seconds = 0;
};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `binary` with `args`; sends SIGINT after `interrupt_after` seconds (if > 0)
// and SIGKILL after `timeout` seconds.
Outcome RunProgram(const std::string& binary, const std::vector<std::string>& args, double timeout,
                   double interrupt_after = 0) {
  const fs::path log =
      fs::temp_directory_path() / ("ferry-it-" + std::to_string(getpid()) + ".out");
  const auto start = std::chrono::steady_clock::now();
  std::fflush(nullptr);  // Or the child flushes our buffered output a second time.
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* out = std::freopen(log.c_str(), "w", stdout);
    if (out == nullptr) _exit(126);
    dup2(STDOUT_FILENO, STDERR_FILENO);
    std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  Outcome outcome;
  bool interrupted = false;
  int status = 0;
  while (true) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    if (interrupt_after > 0 && !interrupted && elapsed > interrupt_after) {
      kill(pid, SIGINT);
      interrupted = true;
    }
    if (elapsed > timeout) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  outcome.output = ReadFile(log);
  fs::remove(log);
  return outcome;
}

Outcome RunFerry(const std::vector<std::string>& args, double timeout, double interrupt_after = 0) {
  return RunProgram(FERRY_BINARY, args, timeout, interrupt_after);
}

// Processes whose command line mentions `needle` (the run directory).
int ProcessesMentioning(const std::string& needle) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = ReadFile(entry.path() / "cmdline");
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    if (cmdline.find(needle) != std::string::npos) ++count;
  }
  return count;
}

fs::path FreshRunDir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("ferry-it-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  return dir;
}

// A number in the run's end record (the last metrics line naming how it ended), or -1.
double AtEnd(const std::string& metrics, const std::string& field) {
  const size_t end = metrics.rfind("\"end\": ");
  if (end == std::string::npos) return -1;
  const size_t line = metrics.rfind('\n', end);
  const std::string key = "\"" + field + "\": ";
  const size_t at = metrics.find(key, line == std::string::npos ? 0 : line);
  if (at == std::string::npos || at > end) return -1;
  return std::stod(metrics.substr(at + key.size()));
}

// Overrides that give a run its own ports, so tests never collide with a run in progress.
std::vector<std::string> Ports(int base) {
  return {"--set", "network.replay_port=" + std::to_string(base),
          "--set", "network.paramserver_port=" + std::to_string(base + 10),
          "--set", "network.broadcast_port=" + std::to_string(base + 11)};
}

std::vector<std::string> ShortRun(const fs::path& dir, int port_base, double seconds) {
  std::vector<std::string> args = {
      "run",   std::string(FERRY_SOURCE_DIR) + "/configs/cartpole.yaml",
      "--set", "run.dir=" + dir.string(),
      "--set", "stop.max_seconds=" + std::to_string(seconds),
      "--set", "learner.eval_period=100",
      "--set", "learner.eval_episodes=10",
      "--set", "learner.update_cpu=1",  // As the tuned configs: roles move once started.
      "--set", "replay.min_size_to_sample=200"};
  for (const auto& a : Ports(port_base)) args.push_back(a);
  return args;
}

TEST_CASE("a short CartPole run starts every role, records metrics and leaves nothing running") {
  const fs::path dir = FreshRunDir("short");
  const int port_base = ferry::testing::RunPorts();
  const Outcome run = RunFerry(ShortRun(dir, port_base, 20), /*timeout=*/120);
  INFO(run.output);
  CHECK((run.exit_code == 0 || run.exit_code == 2));
  CHECK(run.output.find("env steps in") != std::string::npos);  // The summary line.
  CHECK(fs::exists(dir / "config.yaml"));
  for (const char* role :
       {"replay-0", "replay-1", "paramserver", "learner", "actor-0", "actor-1"}) {
    CAPTURE(role);
    CHECK(fs::file_size(dir / "logs" / (std::string(role) + ".log")) > 0);
  }
  const std::string metrics = ReadFile(dir / "metrics.jsonl");
  CHECK(metrics.find("\"eval_return\": ") != std::string::npos);
  CHECK(metrics.find("\"end\": ") != std::string::npos);
  // Actors stored experience and the learner trained on it (a run can reach its target before
  // the first periodic progress record, so the end record is the one that always exists).
  CHECK(AtEnd(metrics, "updates") > 0);
  // The sampling thread computed target values ahead of some of the updates.
  CHECK(AtEnd(metrics, "target_ahead_share") > 0);
  // A run that reaches its target or budget evaluates its final policy on fresh episodes.
  CHECK(metrics.find("\"final_eval_episodes\": 100") != std::string::npos);
  // ... and the policy its best periodic evaluation kept, on the same episodes.
  CHECK(fs::exists(dir / "checkpoints" / "best-policy.pt"));
  CHECK(metrics.find("\"selected_eval_return\": ") != std::string::npos);
  CHECK(ReadFile(dir / "logs" / "replay-0.log").find("0 bad messages") != std::string::npos);
  CHECK(ReadFile(dir / "logs" / "learner.log").find("update thread on CPU") != std::string::npos);
  // Told that the learner had ended, the shards admitted what their rate limiters held, so the
  // actors stopped with every batch acked.
  for (const char* role : {"replay-0", "replay-1"}) {
    CAPTURE(role);
    CHECK(ReadFile(dir / "logs" / (std::string(role) + ".log")).find("the learner has ended") !=
          std::string::npos);
  }
  for (const char* role : {"actor-0", "actor-1"}) {
    CAPTURE(role);
    const std::string log = ReadFile(dir / "logs" / (std::string(role) + ".log"));
    CHECK(log.find("stopped after") != std::string::npos);
    CHECK(log.find("still unacked") == std::string::npos);
  }
  CHECK(ProcessesMentioning(dir.string()) == 0);
  fs::remove_all(dir);
}

TEST_CASE("a run that meets its target early goes on until stop.min_seconds") {
  const fs::path dir = FreshRunDir("min-seconds");
  const int port_base = ferry::testing::RunPorts();
  std::vector<std::string> args = ShortRun(dir, port_base, 60);
  // Met by the first evaluation, whatever its return.
  args.insert(args.end(), {"--set", "stop.target_return=-1e9", "--set", "stop.min_seconds=6"});
  const Outcome run = RunFerry(args, /*timeout=*/120);
  INFO(run.output);
  CHECK(run.exit_code == 0);  // Target reached.
  const std::string metrics = ReadFile(dir / "metrics.jsonl");
  CHECK(metrics.find("\"end\": \"target_reached\"") != std::string::npos);
  CHECK(AtEnd(metrics, "time") >= 6);
  CHECK(AtEnd(metrics, "time") < 30);
  CHECK(ProcessesMentioning(dir.string()) == 0);
  fs::remove_all(dir);
}

TEST_CASE("Ctrl-C stops every process of a run") {
  const fs::path dir = FreshRunDir("interrupt");
  const int port_base = ferry::testing::RunPorts();
  // An unreachable target: a lucky 10-episode evaluation must not end the run before Ctrl-C.
  std::vector<std::string> args = ShortRun(dir, port_base, 200);
  args.insert(args.end(), {"--set", "stop.target_return=100000"});
  const Outcome run = RunFerry(args, /*timeout=*/60, /*interrupt_after=*/6);
  INFO(run.output);
  CHECK(run.exit_code == 130);
  CHECK(run.seconds < 30);
  CHECK(run.output.find("interrupted") != std::string::npos);
  CHECK(ProcessesMentioning(dir.string()) == 0);
  fs::remove_all(dir);
}

TEST_CASE("a stopped run resumes from its learner checkpoint") {
  const fs::path dir = FreshRunDir("resume");
  const int port_base = ferry::testing::RunPorts();
  // An unreachable target: a quick learner must not end the run before the interruption.
  std::vector<std::string> first_args = ShortRun(dir, port_base, 200);
  first_args.insert(first_args.end(), {"--set", "stop.target_return=100000"});
  const Outcome first = RunFerry(first_args, /*timeout=*/60, /*interrupt_after=*/12);
  INFO(first.output);
  REQUIRE(first.exit_code == 130);
  bool have_checkpoint = false;
  for (const auto& f : fs::directory_iterator(dir / "checkpoints")) {
    have_checkpoint |= f.path().extension() == ".pt";
  }
  REQUIRE(have_checkpoint);

  std::vector<std::string> args = {"run", "--resume", dir.string(), "--set", "stop.max_seconds=22"};
  for (const auto& a : Ports(port_base)) args.push_back(a);
  const Outcome resumed = RunFerry(args, /*timeout=*/90);
  INFO(resumed.output);
  CHECK((resumed.exit_code == 0 || resumed.exit_code == 2));
  CHECK(ReadFile(dir / "logs" / "learner.log").find("resumed from") != std::string::npos);
  // The second session's end record continues the first session's update count.
  const std::string metrics = ReadFile(dir / "metrics.jsonl");
  const size_t first_end = metrics.find("\"end\": \"stopped\"");
  REQUIRE(first_end != std::string::npos);
  CHECK(metrics.find("\"end\": ", first_end + 1) != std::string::npos);
  CHECK(ProcessesMentioning(dir.string()) == 0);
  fs::remove_all(dir);
}

TEST_CASE("--dry-run prints every process, where it listens and its command, and starts none") {
  const fs::path dir = FreshRunDir("dryrun");
  std::vector<std::string> args = {"run",
                                   std::string(FERRY_SOURCE_DIR) + "/configs/cartpole.yaml",
                                   "--dry-run",
                                   "--set",
                                   "run.dir=" + dir.string(),
                                   "--set",
                                   "network.replay_hosts=hostA,hostB"};
  for (const auto& a : Ports(31000)) args.push_back(a);
  const Outcome run = RunFerry(args, /*timeout=*/20);
  INFO(run.output);
  CHECK(run.exit_code == 0);
  for (const char* line : {"replay-0     localhost  tcp://127.0.0.1:31000",
                           "replay-1     localhost  tcp://127.0.0.1:31001",
                           "paramserver  localhost  tcp://127.0.0.1:31010,tcp://127.0.0.1:31011",
                           "learner      localhost  -", "actor-1      localhost  -",
                           "clients connect to replay tcp://hostA:31000,tcp://hostB:31001, "
                           "paramserver tcp://127.0.0.1:31010"}) {
    CAPTURE(line);
    CHECK(run.output.find(line) != std::string::npos);
  }
  CHECK(run.output.find("mpirun") != std::string::npos);
  CHECK_FALSE(fs::exists(dir));  // Nothing written, nothing started.

  // Ports the kernel may give to outgoing connections are warned of, naming the server.
  int ephemeral_first = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_first;
  CHECK(run.output.find("warning") == std::string::npos);
  args.resize(args.size() - Ports(0).size());
  for (const auto& a : Ports(ephemeral_first)) args.push_back(a);
  const Outcome ephemeral = RunFerry(args, /*timeout=*/20);
  INFO(ephemeral.output);
  CHECK(ephemeral.exit_code == 0);
  CHECK(ephemeral.output.find("warning: paramserver listens on port " +
                              std::to_string(ephemeral_first + 10) + ", inside the range") !=
        std::string::npos);
}

TEST_CASE("security.curve: a run trains over CurveZMQ, and a client with another key is refused") {
  const fs::path dir = FreshRunDir("curve");
  const fs::path keys = FreshRunDir("curve-keys");
  fs::create_directories(keys);
  for (const char* who : {"server", "client", "stranger"}) {
    const Outcome made = RunFerry({"keygen", (keys / who).string()}, /*timeout=*/10);
    INFO(made.output);
    REQUIRE(made.exit_code == 0);
  }
  std::ofstream(keys / "authorized") << ReadFile(keys / "client.pub");
  const int port_base = ferry::testing::RunPorts();
  const auto security = [&](const std::string& client) {
    return std::vector<std::string>{
        "--set", "security.curve=true",
        "--set", "security.server_key=" + (keys / "server.key").string(),
        "--set", "security.server_public_key=" + (keys / "server.pub").string(),
        "--set", "security.client_key=" + (keys / (client + ".key")).string(),
        "--set", "security.authorized_keys=" + (keys / "authorized").string()};
  };
  std::vector<std::string> args = ShortRun(dir, port_base, 20);
  for (const auto& a : security("client")) args.push_back(a);
  const Outcome run = RunFerry(args, /*timeout=*/120);
  INFO(run.output);
  CHECK((run.exit_code == 0 || run.exit_code == 2));
  // Actors stored experience and the learner trained on it, all through CURVE sockets.
  CHECK(AtEnd(ReadFile(dir / "metrics.jsonl"), "updates") > 0);

  // The shards' last snapshots are served again by one shard, which a stranger cannot query.
  std::vector<std::string> shard = {"replay", "--config", (dir / "config.yaml").string(), "--shard",
                                    "0"};
  std::fflush(nullptr);  // Or the child flushes our buffered output a second time.
  const pid_t server = fork();
  if (server == 0) {
    std::vector<char*> argv = {const_cast<char*>(FERRY_BINARY)};
    for (auto& a : shard) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    execv(FERRY_BINARY, argv.data());
    _exit(127);
  }
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port_base);
  const auto inspect = [&](const std::string& client) {
    // The run's config with this client's key in place of the authorized one.
    std::string text = ReadFile(dir / "config.yaml");
    const std::string authorized_key = (keys / "client.key").string();
    const size_t at = text.find(authorized_key);
    REQUIRE(at != std::string::npos);
    text.replace(at, authorized_key.size(), (keys / (client + ".key")).string());
    const fs::path config = dir / (client + ".yaml");
    std::ofstream(config) << text;
    return RunFerry({"inspect", endpoint, "--timeout", "3", "--config", config.string()},
                    /*timeout=*/20);
  };
  const Outcome allowed = inspect("client");
  const Outcome refused = inspect("stranger");
  kill(server, SIGTERM);
  waitpid(server, nullptr, 0);
  INFO(allowed.output);
  INFO(refused.output);
  CHECK(allowed.exit_code == 0);
  CHECK(allowed.output.find("size") != std::string::npos);
  CHECK(refused.exit_code != 0);
  CHECK(refused.output.find(endpoint) != std::string::npos);
  CHECK(ProcessesMentioning(dir.string()) == 0);
  fs::remove_all(dir);
  fs::remove_all(keys);
}

TEST_CASE("a misspelt config key stops the run before anything starts, naming the key") {
  const fs::path dir = FreshRunDir("badconfig");
  const Outcome run = RunFerry({"run", std::string(FERRY_SOURCE_DIR) + "/configs/cartpole.yaml",
                                "--set", "run.dir=" + dir.string(), "--set", "replay.alhpa=0.5"},
                               /*timeout=*/20);
  CHECK(run.exit_code == 1);
  CHECK(run.output.find("replay.alhpa") != std::string::npos);
  CHECK(run.output.find("replay.alpha") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "logs"));
}

TEST_CASE("a server port another program holds stops the run before anything starts, naming it") {
  const fs::path dir = FreshRunDir("port-taken");
  const int port_base = ferry::testing::RunPorts();
  const int paramserver_port = port_base + 10;  // Ports() in this file.
  const int holder = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(holder >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(paramserver_port));
  REQUIRE(bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  REQUIRE(listen(holder, 1) == 0);
  const Outcome run = RunFerry(ShortRun(dir, port_base, 20), /*timeout=*/30);
  close(holder);
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(run.output.find(
            "paramserver cannot listen on tcp://127.0.0.1:" + std::to_string(paramserver_port) +
            ": Address already in use") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "logs"));  // Refused before the run directory was made.
  CHECK(run.seconds < 10);
  CHECK(ProcessesMentioning(dir.string()) == 0);
  fs::remove_all(dir);
}

TEST_CASE("a role that cannot run with its configuration stops the run at once, with its error") {
  // Passes every per-key check, but no transition of 52 bytes fits in 10: the shards refuse it.
  const fs::path dir = FreshRunDir("roleconfig");
  std::vector<std::string> args = {
      "run",   std::string(FERRY_SOURCE_DIR) + "/configs/cartpole.yaml",
      "--set", "run.dir=" + dir.string(),
      "--set", "replay.capacity_bytes=10"};
  for (const auto& a : Ports(ferry::testing::RunPorts())) args.push_back(a);
  const Outcome run = RunFerry(args, /*timeout=*/60);
  CHECK(run.exit_code == 1);
  CHECK(run.output.find("cannot run with this configuration: replay.capacity_bytes: 10 bytes "
                        "hold no transition") != std::string::npos);
  CHECK(run.output.find("restarting") == std::string::npos);
  CHECK(run.seconds < 30);
  fs::remove_all(dir);
}

TEST_CASE(
    "the lean roles' own binaries answer a bad argument with their usage, a bad value as 78") {
  const std::string config = std::string(FERRY_SOURCE_DIR) + "/configs/cartpole.yaml";
  for (const char* role : {"replay", "paramserver", "actor"}) {
    const std::string binary = std::string(FERRY_BINARY) + "-" + role;
    CAPTURE(binary);
    const Outcome unknown =
        RunProgram(binary, {"--config", config, "--shards", "0"}, /*timeout=*/10);
    CHECK(unknown.exit_code == 1);
    CHECK(unknown.output.find("unknown argument '--shards'") != std::string::npos);
    CHECK(unknown.output.find("usage: " + binary.substr(binary.rfind('/') + 1) +
                              " --config CONFIG") != std::string::npos);
    const Outcome no_value = RunProgram(binary, {"--config"}, /*timeout=*/10);
    CHECK(no_value.exit_code == 1);
    CHECK(no_value.output.find("--config needs a value") != std::string::npos);
  }
  const Outcome shard =
      RunProgram(std::string(FERRY_BINARY) + "-replay", {"--config", config, "--shard", "7"}, 10);
  CHECK(shard.exit_code == 78);
  CHECK(shard.output.find("--shard must be in 0..1, got '7'") != std::string::npos);
  const Outcome upstream = RunProgram(std::string(FERRY_BINARY) + "-paramserver",
                                      {"--config", config, "--upstream", "tcp://h:1"}, 10);
  CHECK(upstream.exit_code == 78);
  CHECK(upstream.output.find("--upstream needs FETCH,BROADCAST") != std::string::npos);
}

TEST_CASE("ferry hands each role to its own binary with the arguments unchanged") {
  const std::string config = std::string(FERRY_SOURCE_DIR) + "/configs/cartpole.yaml";
  const Outcome actor = RunFerry({"actor", "--config", config, "--id", "9"}, /*timeout=*/30);
  CHECK(actor.exit_code == 78);
  CHECK(actor.output.find("--id must be in 0..1, got '9'") != std::string::npos);
  const Outcome eval = RunFerry({"eval", "/nonexistent-run"}, /*timeout=*/30);
  CHECK(eval.exit_code == 1);
  CHECK(eval.output.find("ferry eval: cannot read config file '/nonexistent-run/config.yaml'") !=
        std::string::npos);
  const Outcome shard = RunFerry({"replay", "--config", config, "--shard", "7"}, /*timeout=*/10);
  CHECK(shard.exit_code == 78);
  CHECK(shard.output.find("--shard must be in 0..1, got '7'") != std::string::npos);
  // `ferry` itself loads no LibTorch, so `ferry run` starts its roles at once.
  const Outcome linked = RunProgram("/usr/bin/ldd", {FERRY_BINARY}, /*timeout=*/10);
  CHECK(linked.exit_code == 0);
  CHECK(linked.output.find("libtorch") == std::string::npos);
  CHECK(linked.output.find("libmpi") == std::string::npos);
  // Nor do actors: their network runs on the BLAS alone (models/fast_mlp.h).
  const Outcome actor_linked =
      RunProgram("/usr/bin/ldd", {std::string(FERRY_BINARY) + "-actor"}, /*timeout=*/10);
  CHECK(actor_linked.exit_code == 0);
  CHECK(actor_linked.output.find("libtorch") == std::string::npos);
  CHECK(actor_linked.output.find("libmpi") == std::string::npos);
  CHECK(actor_linked.output.find("libblas") != std::string::npos);
  // Without the role's binary beside it, ferry says which file it could not start.
  const fs::path alone = fs::temp_directory_path() / ("ferry-alone-" + std::to_string(getpid()));
  fs::create_directories(alone);
  fs::copy_file(FERRY_BINARY, alone / "ferry");
  const Outcome missing =
      RunProgram((alone / "ferry").string(), {"learner", "--config", config}, /*timeout=*/10);
  fs::remove_all(alone);
  CHECK(missing.exit_code == 1);
  CHECK(missing.output.find("ferry learner: cannot start " + (alone / "ferry-torch").string() +
                            ": No such file or directory") != std::string::npos);
}

}  // namespace
