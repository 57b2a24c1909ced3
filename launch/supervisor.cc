#include "launch/supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <zmq.hpp>

#include "core/cpu_affinity.h"
#include "core/log.h"
#include "core/status.h"
#include "core/topology.h"

namespace ferry::launch {
namespace {

namespace fs = std::filesystem;

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

constexpr int kMaxRestarts = 5;
constexpr double kShutdownGrace = 10.0;

struct Child {
  Child(std::string name, std::vector<std::string> argv, bool is_learner = false)
      : name(std::move(name)), argv(std::move(argv)), is_learner(is_learner) {}
  std::string name;
  std::vector<std::string> argv;
  bool is_learner = false;
  std::vector<std::string> listens;  // Endpoints a server binds.
  pid_t pid = -1;
  int restarts = 0;
  double restart_at = -1;  // When a crashed child is due to start again.
};

// The message of the last "error: " line a process wrote to its log, or where to look.
std::string LastError(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line, last;
  constexpr std::string_view kMarker = "error: ";
  while (std::getline(in, line)) {
    if (const size_t at = line.find(kMarker); at != std::string::npos) {
      last = line.substr(at + kMarker.size());
    }
  }
  return last.empty() ? "see " + log_path : last;
}

bool IsReplay(const Child& child) { return child.name.rfind("replay-", 0) == 0; }

pid_t Spawn(const Child& child, const std::string& log_path) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  // Child: own process group (so mpirun and its ranks are signalled together),
  // die with the supervisor, output to the per-process log.
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(127);
  const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
  const int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, STDIN_FILENO);
  // A shard is told the learner has ended by SIGUSR1 (StopAll), which ends a process that has
  // no handler for it yet: blocked across exec, one sent early waits until the shard's handler
  // is in place (cli/replay_role.cc unblocks it then).
  if (IsReplay(child)) {
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, nullptr);
  }
  std::vector<char*> args;
  for (const auto& a : child.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::fprintf(stderr, "cannot start %s: %s\n", args[0], std::strerror(errno));
  _exit(127);
}

std::string Timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return buf;
}

// The number after "key": in a flat JSON line, if present.
std::optional<double> JsonNumber(const std::string& line, const std::string& key) {
  const std::string needle = "\"" + key + "\": ";
  const size_t at = line.find(needle);
  if (at == std::string::npos) return std::nullopt;
  const char* start = line.c_str() + at + needle.size();
  char* end = nullptr;
  const double v = std::strtod(start, &end);
  if (end == start) return std::nullopt;
  return v;
}

std::optional<std::string> JsonText(const std::string& line, const std::string& key) {
  const std::string needle = "\"" + key + "\": \"";
  const size_t at = line.find(needle);
  if (at == std::string::npos) return std::nullopt;
  const size_t from = at + needle.size();
  const size_t to = line.find('"', from);
  if (to == std::string::npos) return std::nullopt;
  return line.substr(from, to - from);
}

// What the supervisor knows of the learner's progress, from metrics.jsonl.
struct Progress {
  double env_steps = 0, env_steps_per_s = 0, updates = 0, updates_per_s = 0;
  double last_eval = NAN, best_eval = NAN;
  // Where the learner's time went since the previous record: waiting for
  // replay (the rate limiter or the shards), in the allreduce, computing.
  double replay_share = 0, allreduce_share = 0, compute_share = 0;
  double rate_limited_share = 0;  // Of the sampling thread's time, held by rate limiters.
  double policy_lag = NAN;        // Median updates between acting and training on a step.
  std::string end;

  void Read(const std::string& line) {
    if (auto v = JsonNumber(line, "env_steps")) env_steps = *v;
    if (auto v = JsonNumber(line, "env_steps_per_s")) env_steps_per_s = *v;
    if (auto v = JsonNumber(line, "updates")) updates = *v;
    if (auto v = JsonNumber(line, "updates_per_s")) updates_per_s = *v;
    if (auto v = JsonNumber(line, "policy_lag_median")) policy_lag = *v;
    if (auto v = JsonNumber(line, "eval_return")) {
      last_eval = *v;
      if (std::isnan(best_eval) || *v > best_eval) best_eval = *v;
    }
    const auto replay = JsonNumber(line, "wait_replay_s");
    const auto allreduce = JsonNumber(line, "allreduce_s");
    const auto compute = JsonNumber(line, "compute_s");
    if (replay && allreduce && compute) {
      const double d_replay = *replay - replay_s_, d_allreduce = *allreduce - allreduce_s_,
                   d_compute = *compute - compute_s_;
      const double total = d_replay + d_allreduce + d_compute;
      if (total > 0) {
        replay_share = d_replay / total;
        allreduce_share = d_allreduce / total;
        compute_share = d_compute / total;
        if (auto limited = JsonNumber(line, "rate_limited_s")) {
          rate_limited_share = std::min(1.0, (*limited - rate_limited_s_) / total);
          rate_limited_s_ = *limited;
        }
      }
      replay_s_ = *replay;
      allreduce_s_ = *allreduce;
      compute_s_ = *compute;
    }
    if (auto v = JsonText(line, "end")) end = *v;
  }

  std::string Line(double elapsed) const {
    char buf[320];
    std::snprintf(buf, sizeof(buf),
                  "[%6.1fs] env steps %9.0f (%7.0f/s)  updates %7.0f (%6.1f/s)  eval return %s"
                  "  lag %s  | learner: replay %2.0f%% allreduce %2.0f%% compute %2.0f%%%s",
                  elapsed, env_steps, env_steps_per_s, updates, updates_per_s,
                  std::isnan(last_eval) ? "-" : std::to_string(last_eval).substr(0, 6).c_str(),
                  std::isnan(policy_lag) ? "-" : std::to_string(std::lround(policy_lag)).c_str(),
                  100 * replay_share, 100 * allreduce_share, 100 * compute_share,
                  rate_limited_share > 0.1 ? " (rate-limited)" : "");
    return buf;
  }

 private:
  // Cumulative seconds in the last record.
  double replay_s_ = 0, allreduce_s_ = 0, compute_s_ = 0, rate_limited_s_ = 0;
};

class MetricsTail {
 public:
  // Starts reading at `offset`: a resumed run's earlier records are history.
  MetricsTail(std::string path, std::streamoff offset) : path_(std::move(path)), offset_(offset) {}
  void Poll(Progress* progress) {
    std::ifstream in(path_);
    if (!in) return;
    in.seekg(offset_);
    std::string line;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // A half-written last line: read it next time.
      offset_ += static_cast<std::streamoff>(line.size() + 1);
      progress->Read(line);
    }
  }

 private:
  std::string path_;
  std::streamoff offset_ = 0;
};

std::vector<Child> Topology(const core::Config& config, const std::string& binary,
                            const std::string& config_file, bool resume) {
  std::vector<Child> children;
  const std::vector<std::string> common = {"--config", config_file};
  // Each role runs as its own binary beside ferry (cli/command_line.h); all but the learner's
  // (ferry-torch) run that one role and take no command word.
  auto lean = [&](const std::string& name, const std::string& word,
                  const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {binary + "-" + word};
    argv.insert(argv.end(), common.begin(), common.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    children.push_back(Child{name, std::move(argv)});
  };
  for (int k = 0; k < config.replay.shards; ++k) {
    lean("replay-" + std::to_string(k), "replay", {"--shard", std::to_string(k)});
    children.back().listens = {core::ReplayBindEndpoint(config, k)};
  }
  lean("paramserver", "paramserver", {});
  children.back().listens = {core::ParamServerBindEndpoint(config),
                             core::BroadcastBindEndpoint(config)};
  std::vector<std::string> mpi = {"mpirun"};
  if (geteuid() == 0) mpi.push_back("--allow-run-as-root");
  // Ranks share the cores with actors and shards: no pinning, and ranks waiting
  // in a collective yield the CPU instead of spinning on it. They all run on this machine, so
  // point-to-point goes over shared memory (ob1 over vader) without probing the network
  // transports first: MPI_Init takes 0.09 s instead of 0.32 s.
  for (const char* a : {"--oversubscribe", "--bind-to", "none", "--mca", "pml", "ob1", "--mca",
                        "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none",
                        "--mca", "mpi_yield_when_idle", "1", "-np"}) {
    mpi.push_back(a);
  }
  mpi.push_back(std::to_string(config.learner.ranks));
  for (const std::string& a :
       {binary + "-torch", std::string("learner"), std::string("--config"), config_file}) {
    mpi.push_back(a);
  }
  if (resume) mpi.push_back("--resume");
  // This supervisor reads how the run ended from the learner's end record; a rank that exits
  // nonzero (budget's 2) would keep mpirun waiting 2 s before it exits.
  mpi.push_back("--exit-zero");
  children.push_back(Child{"learner", mpi, /*is_learner=*/true});
  for (int i = 0; i < config.actors.count; ++i) {
    lean("actor-" + std::to_string(i), "actor", {"--id", std::to_string(i)});
  }
  return children;
}

// A server port in the kernel's ephemeral range can be held as the local end of any outgoing
// connection on the machine (the run's own too) while its server is down; a restarted server
// then cannot bind it.
void WarnOfEphemeralPorts(const std::vector<Child>& children) {
  int first = 0, last = -1;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> first >> last;
  for (const Child& c : children) {
    for (const std::string& endpoint : c.listens) {
      const int port = std::atoi(endpoint.substr(endpoint.rfind(':') + 1).c_str());
      if (port < first || port > last) continue;
      std::fprintf(stderr,
                   "ferry run: warning: %s listens on port %d, inside the range %d-%d the kernel "
                   "gives outgoing connections their ports from: restarted, it may find its port "
                   "taken\n",
                   c.name.c_str(), port, first, last);
    }
  }
}

// Why a server of the run could not listen where it should, or "" if every one can: checked
// before anything starts, so that a port another program holds (often a second run with the
// same network.*_port) is one clear error instead of a server that crashes until the run
// gives up. A probe binds as the server will (ZeroMQ, SO_REUSEADDR) and lets go at once.
std::string PortTaken(const std::vector<Child>& children) {
  zmq::context_t context(1);
  for (const Child& c : children) {
    for (const std::string& endpoint : c.listens) {
      zmq::socket_t probe(context, zmq::socket_type::router);
      try {
        probe.bind(endpoint);
      } catch (const zmq::error_t& e) {
        return c.name + " cannot listen on " + endpoint + ": " + e.what() +
               " (another run on the same ports? set network.replay_port, "
               "network.paramserver_port and network.broadcast_port)";
      }
    }
  }
  return "";
}

// Whether the learner has written a checkpoint it can resume from.
bool HasCheckpoint(const std::string& run_dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(run_dir) / "checkpoints", ec)) {
    if (entry.path().extension() == ".pt") return true;
  }
  return false;
}

// SIGTERM to the children `pick` selects (whole process groups), SIGKILL to
// those still running after the grace period.
template <typename Pick>
void StopGroup(std::vector<Child>& children, Pick pick) {
  for (auto& c : children) {
    if (c.pid > 0 && pick(c)) kill(-c.pid, SIGTERM);
  }
  const double deadline = core::NowSeconds() + kShutdownGrace;
  while (core::NowSeconds() < deadline) {
    bool any = false;
    for (auto& c : children) {
      if (c.pid <= 0 || !pick(c)) continue;
      if (waitpid(c.pid, nullptr, WNOHANG) == c.pid) {
        c.pid = -1;
      } else {
        any = true;
      }
    }
    if (!any) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& c : children) {
    if (c.pid <= 0 || !pick(c)) continue;
    std::fprintf(stderr, "ferry run: %s did not stop in %.0f s; killing it\n", c.name.c_str(),
                 kShutdownGrace);
    kill(-c.pid, SIGKILL);
    waitpid(c.pid, nullptr, 0);
    c.pid = -1;
  }
}

// The learner stops first, while the shards still serve it, so it can finish
// its step and write its final checkpoint; then the actors; then the shards
// (which write their final snapshots) and the paramserver. A learner that has
// written its end record has finished all of that: the others stop while its
// mpirun winds down. Before the actors stop, the shards learn that the learner
// has ended (SIGUSR1, cli/replay_role.h) and admit what their rate limiters
// hold, so the actors' last batches are acked at once instead of at the end of
// the actors' wait for them, and go into the final snapshots.
void StopAll(std::vector<Child>& children, bool learner_finished) {
  auto is_learner = [](const Child& c) { return c.is_learner; };
  if (!learner_finished) StopGroup(children, is_learner);
  for (auto& c : children) {
    if (c.pid > 0 && IsReplay(c)) kill(-c.pid, SIGUSR1);
  }
  StopGroup(children, [](const Child& c) { return c.name.rfind("actor-", 0) == 0; });
  StopGroup(children, [&](const Child& c) { return !c.is_learner; });
  StopGroup(children, is_learner);
}

}  // namespace

int RunTopology(const RunRequest& request) {
  auto loaded = core::LoadConfig(request.config_path, request.overrides);
  if (!loaded.ok()) {
    std::fprintf(stderr, "ferry run: %s\n", loaded.status().message().c_str());
    return 1;
  }
  core::Config config = std::move(loaded).value();
  if (request.resume) config.run.dir = fs::path(request.config_path).parent_path().string();
  if (config.run.dir.empty()) config.run.dir = "runs/" + config.run.name + "-" + Timestamp();
  config.run.dir = fs::absolute(config.run.dir).string();
  const std::string config_file = config.run.dir + "/config.yaml";
  std::vector<Child> children = Topology(config, request.ferry_binary, config_file, request.resume);
  WarnOfEphemeralPorts(children);
  if (request.dry_run) {
    // Every process runs on this machine; clients reach the servers at the connect endpoints
    // (network.replay_hosts, network.paramserver_host where set).
    std::printf("%-12s %-10s %-44s %s\n", "process", "host", "listens on", "command line");
    for (const auto& c : children) {
      std::string listens;
      for (const auto& e : c.listens) listens += (listens.empty() ? "" : ",") + e;
      std::printf("%-12s %-10s %-44s", c.name.c_str(), "localhost",
                  listens.empty() ? "-" : listens.c_str());
      for (const auto& a : c.argv) std::printf(" %s", a.c_str());
      std::printf("\n");
    }
    const auto shards = core::ReplayEndpoints(config);
    std::string connect;
    for (const auto& e : shards) connect += (connect.empty() ? "" : ",") + e;
    std::printf("clients connect to replay %s, paramserver %s, broadcast %s\n", connect.c_str(),
                core::ParamServerEndpoint(config).c_str(), core::BroadcastEndpoint(config).c_str());
    return 0;
  }
  if (const std::string taken = PortTaken(children); !taken.empty()) {
    std::fprintf(stderr, "ferry run: %s\n", taken.c_str());
    return 1;
  }
  std::error_code ec;
  fs::create_directories(fs::path(config.run.dir) / "logs", ec);
  if (ec) {
    std::fprintf(stderr, "ferry run: cannot create run directory %s: %s\n", config.run.dir.c_str(),
                 ec.message().c_str());
    return 1;
  }
  {
    std::ofstream out(config_file);
    out << core::ConfigToYaml(config);
    if (!out) {
      std::fprintf(stderr, "ferry run: cannot write %s\n", config_file.c_str());
      return 1;
    }
  }
  // Children share 2 cores with each other: one compute thread each.
  setenv("OMP_NUM_THREADS", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  // Every role starts on every CPU (loading LibTorch is spread over them all), then moves to the
  // CPUs the learner's update threads leave, each update thread to its own (core/cpu_affinity.h).
  std::vector<int> cpus_left;
  if (config.learner.update_cpu >= 0) {
    cpus_left = core::CpusLeft(config.learner.update_cpu, config.learner.ranks);
    // Tried here, before any role starts, so that a CPU this process may not use is one clear
    // error; it comes back to every CPU it had until the roles have started.
    const std::vector<int> all = core::AllowedCpus();
    if (const Status placed = core::RunOn(cpus_left); !placed.ok()) {
      std::fprintf(stderr, "ferry run: learner.update_cpu: %s\n", placed.message().c_str());
      return 1;
    }
    if (const Status back = core::RunOn(all); !back.ok()) {
      std::fprintf(stderr, "ferry run: %s\n", back.message().c_str());
      return 1;
    }
    const std::string listed = core::FormatCpuList(cpus_left);
    setenv(core::kRunCpusEnv, listed.c_str(), 1);
    std::printf("ferry run: learner update thread of rank 0 on CPU %d, the rest of the run on %s\n",
                core::UpdateCpu(config.learner.update_cpu, 0), listed.c_str());
  }

  const double start = core::NowSeconds();
  const std::string logs = config.run.dir + "/logs/";
  std::printf("ferry run: %s on %s, run directory %s\n", config.run.name.c_str(),
              config.env.id.c_str(), config.run.dir.c_str());
  for (auto& c : children) c.pid = Spawn(c, logs + c.name + ".log");
  // Its own polling, and roles it restarts, on the CPUs left.
  if (!cpus_left.empty() && !core::RunOn(cpus_left).ok()) {
    std::fprintf(stderr, "ferry run: cannot move to CPUs %s\n",
                 core::FormatCpuList(cpus_left).c_str());
  }

  const bool tty = isatty(STDOUT_FILENO);
  Progress progress;
  const std::string metrics_path = config.run.dir + "/metrics.jsonl";
  std::error_code size_error;
  const auto metrics_size = fs::file_size(metrics_path, size_error);
  MetricsTail tail(metrics_path,
                   request.resume && !size_error ? static_cast<std::streamoff>(metrics_size) : 0);
  double last_line = start;
  int learner_status = -1;
  std::string failure;
  while (!g_stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // How soon an end is seen.
    const double now = core::NowSeconds();
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      for (auto& c : children) {
        if (c.pid != pid) continue;
        c.pid = -1;
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code == kConfigErrorExit) {
          failure =
              c.name + " cannot run with this configuration: " + LastError(logs + c.name + ".log");
          break;
        }
        if (c.is_learner) {
          // The learner ends a run itself (target, budget), records why and exits 0
          // (--exit-zero); any other exit is a crash of some rank, and MPI has no fault
          // tolerance: the whole learner starts again, from its newest checkpoint once it has one.
          tail.Poll(&progress);
          if (!progress.end.empty() || code == 0) {
            learner_status = code;
            break;
          }
          if (HasCheckpoint(config.run.dir) &&
              std::find(c.argv.begin(), c.argv.end(), "--resume") == c.argv.end()) {
            c.argv.push_back("--resume");
          }
        }
        if (++c.restarts > kMaxRestarts) {
          failure = c.name + " crashed " + std::to_string(c.restarts) + " times; giving up (" +
                    LastError(logs + c.name + ".log") + ")";
          break;
        }
        const double backoff = std::min(30.0, std::pow(2.0, c.restarts - 1));
        std::fprintf(stderr, "\nferry run: %s exited (%s %d); restarting in %.0f s\n",
                     c.name.c_str(), WIFEXITED(status) ? "status" : "signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), backoff);
        c.restart_at = now + backoff;
      }
    }
    if (learner_status >= 0 || !failure.empty()) break;
    for (auto& c : children) {
      if (c.pid < 0 && c.restart_at >= 0 && now >= c.restart_at) {
        c.pid = Spawn(c, logs + c.name + ".log");
        c.restart_at = -1;
      }
    }
    tail.Poll(&progress);
    if (!progress.end.empty()) break;  // The learner's last record: the run is over.
    if (tty) {
      std::printf("\r%s", progress.Line(now - start).c_str());
      std::fflush(stdout);
    } else if (now - last_line >= 10.0) {
      std::printf("%s\n", progress.Line(now - start).c_str());
      std::fflush(stdout);
      last_line = now;
    }
    if (now - start > config.stop.max_seconds + 120) {
      failure = "the learner did not end within stop.max_seconds + 120 s";
      break;
    }
  }
  StopAll(children, /*learner_finished=*/!progress.end.empty());
  tail.Poll(&progress);
  if (tty) std::printf("\n");

  const double elapsed = core::NowSeconds() - start;
  int code;
  std::string outcome;
  if (!failure.empty()) {
    code = 1;
    outcome = "failed: " + failure;
  } else if (progress.end == "target_reached") {
    code = 0;
    outcome = "target reached";
  } else if (progress.end == "budget_exhausted") {
    code = 2;
    outcome = "budget exhausted";
  } else if (g_stop.load()) {
    code = 130;
    outcome = "interrupted";
  } else {
    code = 1;
    outcome = "learner exited with status " + std::to_string(learner_status) + " (see " + logs +
              "learner.log)";
  }
  std::printf("ferry run: %s: %.0f env steps in %.1f s, best eval return %s; run dir %s\n",
              outcome.c_str(), progress.env_steps, elapsed,
              std::isnan(progress.best_eval) ? "-" : std::to_string(progress.best_eval).c_str(),
              config.run.dir.c_str());
  return code;
}

}  // namespace ferry::launch
