// ferry: one binary for the commands that need no Q-network, and the way in to the
// ones that do (cli/command_line.h). Parses arguments and dispatches.
//
//   ferry run CONFIG [--set key=value]... [--dry-run]   the whole topology here
//   ferry replay --config CONFIG --shard K               one replay shard
//   ferry paramserver --config CONFIG [--upstream F,B]   the parameter server (or a relay)
//   ferry actor --config CONFIG --id I                   one actor process     (ferry-actor)
//   ferry run --resume RUN_DIR                           continue a stopped run
//   ferry learner --config CONFIG [--resume] [--exit-zero]  one rank (under mpirun; ferry-torch)
//   ferry envs [--json]                                  registered environments
//   ferry eval RUN_DIR [--best] [--episodes N] [--seed S] [--json]  a run's policy (ferry-torch)
//   ferry inspect TARGET [--json] [--watch [S]] ...      a replay shard or snapshot file
//   ferry blas                                           the OpenBLAS core type roles get
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli/command_line.h"
#include "cli/paramserver_role.h"
#include "cli/replay_role.h"
#include "core/blas_kernels.h"
#include "core/config.h"
#include "core/curve.h"
#include "core/log.h"
#include "core/malloc_tuning.h"
#include "envs/env.h"
#include "launch/plot.h"
#include "launch/supervisor.h"
#include "replay/inspect.h"

namespace ferry::cli {
namespace {

using core::Config;

// The binary beside this one that runs `command`, whether it takes the command word
// (ferry-torch runs two roles; the others only their own) and whether it calls BLAS; "" for this
// binary's own.
struct RoleBinary {
  const char* suffix;
  bool takes_command;
  bool calls_blas;
};
RoleBinary BinaryFor(const char* command) {
  for (const char* torch_role : {"learner", "eval"}) {
    if (std::strcmp(command, torch_role) == 0) return {"-torch", true, true};
  }
  if (std::strcmp(command, "actor") == 0) return {"-actor", false, true};
  if (std::strcmp(command, "replay") == 0) return {"-replay", false, false};
  if (std::strcmp(command, "paramserver") == 0) return {"-paramserver", false, false};
  return {"", false, false};
}

// Replaces this process with the role's binary on the same arguments.
int ExecRole(int argc, char** argv, const RoleBinary& role) {
  const std::string binary = SelfPath(argv[0]) + role.suffix;
  std::vector<char*> args = {const_cast<char*>(binary.c_str())};
  args.insert(args.end(), argv + (role.takes_command ? 1 : 2), argv + argc);
  args.push_back(nullptr);
  execv(binary.c_str(), args.data());
  std::fprintf(stderr, "ferry %s: cannot start %s: %s\n", argv[1], binary.c_str(),
               std::strerror(errno));
  return 1;
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

// ferry blas: prints the OPENBLAS_CORETYPE the roles start with (nothing for OpenBLAS's own
// choice), for scripts that start BLAS-calling binaries themselves; says why on stderr.
int ReportBlas(int argc, char** argv) {
  if (argc > 2) {
    std::fprintf(stderr, "ferry blas: unknown argument '%s'\n%s", argv[2], kUsage);
    return 1;
  }
  if (const char* set = std::getenv("OPENBLAS_CORETYPE")) {
    std::printf("%s\n", set);
    std::fprintf(stderr, "ferry blas: OPENBLAS_CORETYPE=%s, from the environment\n", set);
    return 0;
  }
  const ferry::core::BlasChoice choice = ferry::core::ProbeBlas();
  if (choice.openblas_core.empty()) {
    std::fprintf(stderr, "ferry blas: no OpenBLAS here; nothing to set\n");
    return 0;
  }
  if (choice.core_type.empty()) {
    std::fprintf(stderr, "ferry blas: OpenBLAS chooses its %s kernels here; that stands\n",
                 choice.openblas_core.c_str());
    return 0;
  }
  std::printf("%s\n", choice.core_type.c_str());
  std::fprintf(stderr,
               "ferry blas: OpenBLAS would choose its %s kernels here; the roles start with %s\n",
               choice.openblas_core.c_str(), choice.core_type.c_str());
  return 0;
}

// The command, as main runs it.
int Main(int argc, char** argv) {
  ferry::core::KeepLargeBlocksInHeap();
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  if (std::strcmp(argv[1], "envs") == 0) return ListEnvs(argc, argv);
  if (std::strcmp(argv[1], "plot") == 0) return PlotRuns(argc, argv);
  if (std::strcmp(argv[1], "blas") == 0) return ReportBlas(argc, argv);
  if (const RoleBinary role = BinaryFor(argv[1]); *role.suffix != '\0') {
    if (role.calls_blas) ferry::core::SetFastBlasCoreType();
    return ExecRole(argc, argv, role);
  }
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
    signal(SIGINT, [](int) { g_stop.store(true); });
    return ferry::replay::RunInspect(options, g_stop);
  }
  Args args;
  if (!ParseArgs(argc, argv, &args)) return 1;
  if (args.command == "run") {
    if (args.config.empty()) {
      std::fprintf(stderr, "ferry run: which config? e.g. ferry run configs/cartpole.yaml\n");
      return 1;
    }
    ferry::core::SetFastBlasCoreType();  // For every role it starts.
    return ferry::launch::RunTopology(
        {args.config, args.overrides, SelfPath(argv[0]), args.dry_run, args.resume});
  }
  std::fprintf(stderr, "ferry: unknown command '%s'\n%s", args.command.c_str(), kUsage);
  return 1;
}

}  // namespace
}  // namespace ferry::cli

int main(int argc, char** argv) { return ferry::cli::Main(argc, argv); }
