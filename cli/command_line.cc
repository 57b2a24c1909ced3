#include "cli/command_line.h"

#include <signal.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>

#include "core/log.h"

namespace ferry::cli {

const char* const kUsage =
    "usage: ferry <command> [options]\n"
    "\n"
    "commands:\n"
    "  run CONFIG [--set key.path=value]... [--dry-run]\n"
    "                      start the whole topology on this machine and supervise it\n"
    "  run --resume RUN_DIR  continue a run from its checkpoints and snapshots\n"
    "  replay --config CONFIG --shard K      serve replay shard K\n"
    "  paramserver --config CONFIG [--upstream FETCH,BROADCAST]\n"
    "                      serve the latest weights; with --upstream, relay those of the\n"
    "                      paramserver at FETCH,BROADCAST (e.g. tcp://h:5540,tcp://h:5541)\n"
    "  actor --config CONFIG --id I          run actor I\n"
    "  learner --config CONFIG [--resume] [--exit-zero]\n"
    "                      run one learner rank (start with mpirun); --exit-zero: status 0\n"
    "                      however the run ended (metrics.jsonl's end record says how)\n"
    "  envs [--json]                         list registered environments, their spaces and\n"
    "                                        time limits\n"
    "  inspect TARGET [--json] [--watch [S]] [--count N] [--top K] [--sample N] [--timeout S]\n"
    "          [--config CONFIG]   (CONFIG: the run's, for its CurveZMQ client keys)\n"
    "                      report on a replay shard (tcp://HOST:PORT) or a snapshot file;\n"
    "                      --watch refreshes every S seconds (default 2) until Ctrl-C or\n"
    "                      N reports, --top lists K items at each end (default 5), --sample\n"
    "                      decodes N stored items, --timeout waits S for a shard (default 3)\n"
    "  keygen PREFIX                         CurveZMQ key pair: PREFIX.key (secret) and\n"
    "                                        PREFIX.pub (security.* keys in the config)\n"
    "  eval RUN_DIR [--best] [--episodes N] [--seed S] [--json]\n"
    "                      evaluate the greedy policy of the run's newest checkpoint (with\n"
    "                      --best: the one its best periodic evaluation kept) on N episodes\n"
    "                      (default 100) from env seed S (default: the seeds of the run's\n"
    "                      final evaluation, which this then repeats)\n"
    "  blas                                  the OPENBLAS_CORETYPE the roles start with:\n"
    "                                        none where OpenBLAS knows this CPU; where it\n"
    "                                        falls back to pre-AVX2 kernels, the faster one\n"
    "  plot RUN_DIR... [--out DIR]           PNG curves (return vs env steps and vs time,\n"
    "                                        throughput) of one or more runs, by gnuplot;\n"
    "                                        DIR defaults to the first RUN_DIR/plots\n"
    "\n"
    "Every role takes --set key.path=value overrides after the config.\n"
    "Exit codes of run and learner: 0 target return reached, 2 budget exhausted, 1 error.\n"
    "A role that cannot run with its configuration exits with 78; run then stops at once.\n";

std::atomic<bool> g_stop{false};

void StopOnSignals() {
  signal(SIGINT, [](int) { g_stop.store(true); });
  signal(SIGTERM, [](int) { g_stop.store(true); });
}

bool ParseInt(const std::string& text, int* out) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 0 || v > INT_MAX) return false;
  *out = static_cast<int>(v);
  return true;
}

bool ParseArgs(int argc, char** argv, Args* args) {
  args->command = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ferry %s: %s needs a value\n", args->command.c_str(), flag);
        return nullptr;
      }
      return argv[++i];
    };
    if (a == "--config") {
      const char* v = value("--config");
      if (!v) return false;
      args->config = v;
    } else if (a == "--set") {
      const char* v = value("--set");
      if (!v) return false;
      args->overrides.push_back(v);
    } else if (a == "--dry-run") {
      args->dry_run = true;
    } else if (a == "--resume" && args->command == "run") {
      const char* v = value("--resume");
      if (!v) return false;
      args->resume = true;
      args->config = std::string(v) + "/config.yaml";
    } else if (a == "--resume") {
      args->resume = true;
    } else if (a == "--exit-zero" && args->command == "learner") {
      args->exit_zero = true;
    } else if (args->command == "run" && args->config.empty() && a.rfind("--", 0) != 0) {
      args->config = a;
    } else {
      std::fprintf(stderr, "ferry %s: unknown argument '%s'\n%s", args->command.c_str(), a.c_str(),
                   kUsage);
      return false;
    }
  }
  return true;
}

bool Load(const Args& args, core::Config* config) {
  if (args.config.empty()) {
    std::fprintf(stderr, "ferry %s: --config is required\n", args.command.c_str());
    return false;
  }
  auto loaded = core::LoadConfig(args.config, args.overrides);
  if (!loaded.ok()) {
    std::fprintf(stderr, "ferry %s: %s\n", args.command.c_str(), loaded.status().message().c_str());
    return false;
  }
  *config = std::move(loaded).value();
  return true;
}

int Fail(const Status& status) {
  core::Log("error: %s", status.message().c_str());
  return ExitCodeFor(status);
}

std::string SelfPath(const char* argv0) {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return argv0;
  buf[n] = '\0';
  return buf;
}

}  // namespace ferry::cli
