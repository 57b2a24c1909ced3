// ferry: one binary, one subcommand per role. Parses arguments and dispatches.
//
//   ferry run CONFIG [--set key=value]... [--dry-run]   the whole topology here
//   ferry replay --config CONFIG --shard K               one replay shard
//   ferry paramserver --config CONFIG [--upstream F,B]   the parameter server (or a relay)
//   ferry actor --config CONFIG --id I                   one actor process
//   ferry run --resume RUN_DIR                           continue a stopped run
//   ferry learner --config CONFIG [--resume] [--exit-zero]  one rank (under mpirun)
//   ferry envs [--json]                                  registered environments
//   ferry eval RUN_DIR [--best] [--episodes N] [--seed S] [--json]  a run's policy, greedy
//   ferry inspect TARGET [--json] [--watch [S]] ...      a replay shard or snapshot file
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "actors/actor.h"
#include "cli/paramserver_role.h"
#include "cli/replay_role.h"
#include "core/config.h"
#include "core/curve.h"
#include "core/log.h"
#include "core/malloc_tuning.h"
#include "core/topology.h"
#include "envs/env.h"
#include "launch/plot.h"
#include "launch/supervisor.h"
#include "learner/apex_dqn.h"
#include "learner/evaluation.h"
#include "replay/inspect.h"
#include "replay/shard.h"

namespace {

using ferry::core::Config;

constexpr const char* kUsage =
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
    "  plot RUN_DIR... [--out DIR]           PNG curves (return vs env steps and vs time,\n"
    "                                        throughput) of one or more runs, by gnuplot;\n"
    "                                        DIR defaults to the first RUN_DIR/plots\n"
    "\n"
    "Every role takes --set key.path=value overrides after the config.\n"
    "Exit codes of run and learner: 0 target return reached, 2 budget exhausted, 1 error.\n"
    "A role that cannot run with its configuration exits with 78; run then stops at once.\n";

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

struct Args {
  std::string command;
  std::string config;
  std::vector<std::string> overrides;
  int index = -1;        // --shard or --id.
  std::string upstream;  // paramserver --upstream.
  bool dry_run = false;
  bool resume = false;
  bool exit_zero = false;  // learner --exit-zero.
};

bool ParseInt(const std::string& text, int* out) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 0 || v > INT_MAX) return false;
  *out = static_cast<int>(v);
  return true;
}

// Returns false (after printing why) on a usage error.
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
    } else if (a == "--shard" || a == "--id") {
      const char* v = value(a.c_str());
      if (!v) return false;
      if (!ParseInt(v, &args->index)) {
        std::fprintf(stderr, "ferry %s: %s must be a non-negative integer, got '%s'\n",
                     args->command.c_str(), a.c_str(), v);
        return false;
      }
    } else if (a == "--upstream" && args->command == "paramserver") {
      const char* v = value("--upstream");
      if (!v) return false;
      args->upstream = v;
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

bool ParseSeconds(const std::string& text, double* out) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v <= 0) return false;
  *out = v;
  return true;
}

// ferry inspect's own flags; returns false (after printing why) on a usage error.
bool ParseInspectArgs(int argc, char** argv, ferry::replay::InspectOptions* options,
                      std::string* config) {
  auto usage = [](const std::string& why) {
    std::fprintf(stderr, "ferry inspect: %s\n%s", why.c_str(), kUsage);
    return false;
  };
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string next = i + 1 < argc ? argv[i + 1] : "";
    int count = 0;
    if (a == "--json") {
      options->json = true;
    } else if (a == "--config") {
      if (next.empty()) return usage("--config needs the run's config (for its security keys)");
      *config = next;
      ++i;
    } else if (a == "--watch") {
      options->watch_seconds = 2;
      if (ParseSeconds(next, &options->watch_seconds)) ++i;
    } else if (a == "--timeout") {
      if (!ParseSeconds(next, &options->timeout_seconds)) {
        return usage("--timeout needs a positive number of seconds");
      }
      ++i;
    } else if (a == "--count" || a == "--top" || a == "--sample") {
      if (!ParseInt(next, &count)) return usage(a + " needs a non-negative integer");
      ++i;
      if (a == "--count") options->count = count;
      if (a == "--top") options->top_k = static_cast<uint32_t>(count);
      if (a == "--sample") options->sample_count = static_cast<uint32_t>(count);
    } else if (options->target.empty() && a.rfind("--", 0) != 0) {
      options->target = a;
    } else {
      return usage("unknown argument '" + a + "'");
    }
  }
  if (options->target.empty()) {
    return usage("which shard or snapshot? e.g. ferry inspect tcp://127.0.0.1:5550");
  }
  if (options->count > 0 && options->watch_seconds <= 0) return usage("--count needs --watch");
  return true;
}

bool Load(const Args& args, Config* config) {
  if (args.config.empty()) {
    std::fprintf(stderr, "ferry %s: --config is required\n", args.command.c_str());
    return false;
  }
  auto loaded = ferry::core::LoadConfig(args.config, args.overrides);
  if (!loaded.ok()) {
    std::fprintf(stderr, "ferry %s: %s\n", args.command.c_str(), loaded.status().message().c_str());
    return false;
  }
  *config = std::move(loaded).value();
  return true;
}

int Fail(const ferry::Status& status) {
  ferry::core::Log("error: %s", status.message().c_str());
  return ferry::ExitCodeFor(status);
}

int RunReplay(const Args& args, const Config& config) {
  if (args.index < 0 || args.index >= config.replay.shards) {
    std::fprintf(stderr, "ferry replay: --shard must be in 0..%d\n", config.replay.shards - 1);
    return 1;
  }
  const ferry::Status served = ferry::cli::ServeReplayShard(config, args.index, g_stop);
  return served.ok() ? 0 : Fail(served);
}

int RunParamServer(const Args& args, const Config& config) {
  const ferry::Status served = ferry::cli::ServeParamServer(config, args.upstream, g_stop);
  return served.ok() ? 0 : Fail(served);
}

int RunActorRole(const Args& args, const Config& config) {
  if (args.index < 0 || args.index >= config.actors.count) {
    std::fprintf(stderr, "ferry actor: --id must be in 0..%d\n", config.actors.count - 1);
    return 1;
  }
  ferry::core::SetLogName("actor-" + std::to_string(args.index));
  if (auto s = ferry::core::InstallSocketSecurity(config.security, false, true); !s.ok()) {
    return Fail(s);
  }
  const ferry::Status s = ferry::actors::RunActor(config, args.index, g_stop);
  return s.ok() ? 0 : Fail(s);
}

int RunLearnerRole(const Args& args, const Config& config) {
  if (auto s = ferry::core::InstallSocketSecurity(config.security, false, true); !s.ok()) {
    return Fail(s);
  }
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  auto end = ferry::learner::RunLearner(config, args.resume, g_stop);
  if (!end.ok()) {
    ferry::core::Log("error: %s", end.status().message().c_str());
    // The other ranks would wait in the allreduce forever; mpirun exits with this code.
    MPI_Abort(MPI_COMM_WORLD, ferry::ExitCodeFor(end.status()));
  }
  MPI_Finalize();
  return args.exit_zero ? 0 : static_cast<int>(*end);
}

// A space as a JSON object; bounds with %.9g, which round-trips a float.
std::string SpaceJson(const ferry::envs::Space& space) {
  if (space.kind == ferry::envs::Space::Kind::kDiscrete) {
    return "{\"kind\": \"Discrete\", \"n\": " + std::to_string(space.n) + "}";
  }
  auto list = [](const auto& values, const char* format) {
    std::string out = "[";
    char number[32];
    for (size_t i = 0; i < values.size(); ++i) {
      std::snprintf(number, sizeof(number), format, values[i]);
      out += (i ? ", " : "") + std::string(number);
    }
    return out + "]";
  };
  return "{\"kind\": \"Box\", \"shape\": " + list(space.shape, "%d") +
         ", \"low\": " + list(space.low, "%.9g") + ", \"high\": " + list(space.high, "%.9g") + "}";
}

// ferry envs [--json]: every registered env with its spaces and time limit.
int ListEnvs(int argc, char** argv) {
  bool json = false;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") != 0) {
      std::fprintf(stderr, "ferry envs: unknown argument '%s'\n%s", argv[i], kUsage);
      return 1;
    }
    json = true;
  }
  const std::vector<std::string> ids = ferry::envs::RegisteredEnvs();
  size_t width = 0;
  for (const std::string& id : ids) width = std::max(width, id.size());
  if (json) std::printf("[");
  for (size_t i = 0; i < ids.size(); ++i) {
    auto env = ferry::envs::MakeEnv(ids[i], 0);
    if (!env.ok()) return Fail(env.status());
    const ferry::envs::Env& e = **env;
    if (json) {
      std::printf(
          "%s{\"id\": \"%s\", \"max_episode_steps\": %d, \"observation_space\": %s, "
          "\"action_space\": %s}",
          i ? ",\n " : "", ids[i].c_str(), e.max_episode_steps(),
          SpaceJson(e.observation_space()).c_str(), SpaceJson(e.action_space()).c_str());
      continue;
    }
    const std::string limit =
        e.max_episode_steps() > 0 ? std::to_string(e.max_episode_steps()) + " steps" : "none";
    std::printf("%-*s  time limit %-10s  observation %s  action %s\n", static_cast<int>(width),
                ids[i].c_str(), limit.c_str(), e.observation_space().ToString().c_str(),
                e.action_space().ToString().c_str());
  }
  if (json) std::printf("]\n");
  return 0;
}

std::string SelfPath(const char* argv0) {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return argv0;
  buf[n] = '\0';
  return buf;
}

// ferry keygen PREFIX
int KeyGen(int argc, char** argv) {
  if (argc != 3 || argv[2][0] == '-') {
    std::fprintf(stderr, "ferry keygen: which file prefix? e.g. ferry keygen keys/server\n%s",
                 kUsage);
    return 1;
  }
  auto keys = ferry::core::GenerateKeyFiles(argv[2]);
  if (!keys.ok()) {
    std::fprintf(stderr, "ferry keygen: %s\n", keys.status().message().c_str());
    return 1;
  }
  std::printf("wrote %s.key (secret, mode 0600) and %s.pub\npublic key %s\n", argv[2], argv[2],
              keys->public_key.c_str());
  return 0;
}

// ferry plot RUN_DIR... [--out DIR]
int EvalRun(int argc, char** argv) {
  std::string run_dir;
  int episodes = 100;
  long long seed = -1;
  bool json = false;
  bool best = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--json") {
      json = true;
    } else if (a == "--best") {
      best = true;
    } else if (a == "--episodes" && has_value && ParseInt(argv[i + 1], &episodes) && episodes > 0) {
      ++i;
    } else if (a == "--seed" && has_value) {
      char* end = nullptr;
      seed = std::strtoll(argv[++i], &end, 10);
      if (*argv[i] == '\0' || *end != '\0' || seed < 0) {
        std::fprintf(stderr, "ferry eval: --seed must be a non-negative integer, got '%s'\n",
                     argv[i]);
        return 1;
      }
    } else if (a.rfind("--", 0) != 0 && run_dir.empty()) {
      run_dir = a;
    } else {
      std::fprintf(stderr,
                   "ferry eval: bad argument '%s' (--episodes takes a positive integer)\n%s",
                   a.c_str(), kUsage);
      return 1;
    }
  }
  if (run_dir.empty()) {
    std::fprintf(stderr, "ferry eval: which run? e.g. ferry eval runs/cartpole-20261129-101500\n");
    return 1;
  }
  auto config = ferry::core::LoadConfig(run_dir + "/config.yaml", {"run.dir=" + run_dir});
  if (!config.ok()) {
    std::fprintf(stderr, "ferry eval: %s\n", config.status().message().c_str());
    return 1;
  }
  torch::set_num_threads(1);
  const uint64_t first_seed =
      seed >= 0 ? static_cast<uint64_t>(seed) : ferry::learner::FinalEvalSeed(*config);
  std::string checkpoint;
  int64_t updates = 0;
  auto eval = best ? ferry::learner::EvaluateBestPolicy(*config, episodes, first_seed, &checkpoint,
                                                        &updates)
                   : ferry::learner::EvaluateCheckpoint(*config, episodes, first_seed, &checkpoint,
                                                        &updates);
  if (!eval.ok()) {
    std::fprintf(stderr, "ferry eval: %s\n", eval.status().message().c_str());
    return 1;
  }
  if (json) {
    std::printf(
        "{\"run_dir\": \"%s\", \"checkpoint\": \"%s\", \"updates\": %lld, \"env\": \"%s\", "
        "\"episodes\": %d, \"first_seed\": %llu, \"mean_return\": %.6g, \"std_return\": %.6g}\n",
        run_dir.c_str(), checkpoint.c_str(), static_cast<long long>(updates),
        config->env.id.c_str(), eval->episodes, static_cast<unsigned long long>(first_seed),
        eval->mean_return, eval->std_return);
  } else {
    std::printf(
        "%s after %lld updates, %s: mean return %.2f +- %.2f over %d greedy episodes "
        "(env seeds from %llu)\n",
        checkpoint.c_str(), static_cast<long long>(updates), config->env.id.c_str(),
        eval->mean_return, eval->std_return, eval->episodes,
        static_cast<unsigned long long>(first_seed));
  }
  return 0;
}

int PlotRuns(int argc, char** argv) {
  ferry::launch::PlotRequest request;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      request.out_dir = argv[++i];
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "ferry plot: unknown argument '%s'\n%s", a.c_str(), kUsage);
      return 1;
    } else {
      request.run_dirs.push_back(a);
    }
  }
  auto pngs = ferry::launch::Plot(request);
  if (!pngs.ok()) {
    std::fprintf(stderr, "ferry plot: %s\n", pngs.status().message().c_str());
    return 1;
  }
  for (const std::string& png : *pngs) std::printf("%s\n", png.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ferry::core::KeepLargeBlocksInHeap();
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  if (std::strcmp(argv[1], "envs") == 0) return ListEnvs(argc, argv);
  if (std::strcmp(argv[1], "plot") == 0) return PlotRuns(argc, argv);
  if (std::strcmp(argv[1], "eval") == 0) return EvalRun(argc, argv);
  if (std::strcmp(argv[1], "keygen") == 0) return KeyGen(argc, argv);
  if (std::strcmp(argv[1], "inspect") == 0) {
    ferry::replay::InspectOptions options;
    std::string config_path;
    if (!ParseInspectArgs(argc, argv, &options, &config_path)) return 1;
    if (!config_path.empty()) {  // A shard that speaks CurveZMQ needs the client's keys.
      auto config = ferry::core::LoadConfig(config_path, {});
      ferry::Status secured =
          config.ok() ? ferry::core::InstallSocketSecurity(config->security, false, true)
                      : config.status();
      if (!secured.ok()) {
        std::fprintf(stderr, "ferry inspect: %s\n", secured.message().c_str());
        return 1;
      }
    }
    signal(SIGINT, OnSignal);
    return ferry::replay::RunInspect(options, g_stop);
  }
  Args args;
  if (!ParseArgs(argc, argv, &args)) return 1;
  if (args.command == "run") {
    if (args.config.empty()) {
      std::fprintf(stderr, "ferry run: which config? e.g. ferry run configs/cartpole.yaml\n");
      return 1;
    }
    return ferry::launch::RunTopology(
        {args.config, args.overrides, SelfPath(argv[0]), args.dry_run, args.resume});
  }
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  Config config;
  if (args.command == "replay") return Load(args, &config) ? RunReplay(args, config) : 1;
  if (args.command == "paramserver") return Load(args, &config) ? RunParamServer(args, config) : 1;
  if (args.command == "actor") return Load(args, &config) ? RunActorRole(args, config) : 1;
  if (args.command == "learner") return Load(args, &config) ? RunLearnerRole(args, config) : 1;
  std::fprintf(stderr, "ferry: unknown command '%s'\n%s", args.command.c_str(), kUsage);
  return 1;
}
