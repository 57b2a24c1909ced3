// ferry-torch: the roles of ferry that train or load a LibTorch Q-network, and so load LibTorch
// (and MPI):
//
//   ferry learner --config CONFIG [--resume] [--exit-zero]  one rank (under mpirun)
//   ferry eval RUN_DIR [--best] [--episodes N] [--seed S] [--json]  a run's policy, greedy
//
// `ferry` (cli/main.cc) hands these commands here with their arguments as they are, and
// `ferry run` starts learner ranks here directly. Loading LibTorch costs a process about 0.5 s
// of CPU, which the other commands, actors included (ferry-actor), do not pay.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli/command_line.h"
#include "core/blas_kernels.h"
#include "core/config.h"
#include "core/curve.h"
#include "core/log.h"
#include "core/malloc_tuning.h"
#include "learner/apex_dqn.h"
#include "learner/evaluation.h"

namespace ferry::cli {
namespace {

using core::Config;

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

// ferry eval RUN_DIR [--best] [--episodes N] [--seed S] [--json]
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

// The command, as main runs it.
int Main(int argc, char** argv) {
  ferry::core::KeepLargeBlocksInHeap();
  ferry::core::WarnIfBlasIsGeneric("ferry-torch");
  if (argc >= 2 && std::strcmp(argv[1], "eval") == 0) return EvalRun(argc, argv);
  Args args;
  if (argc < 2 || !ParseArgs(argc, argv, &args)) {
    if (argc < 2) std::fputs(kUsage, stderr);
    return 1;
  }
  StopOnSignals();
  Config config;
  if (args.command == "learner") return Load(args, &config) ? RunLearnerRole(args, config) : 1;
  std::fprintf(stderr, "ferry-torch: '%s' is not one of its commands (learner, eval)\n%s",
               args.command.c_str(), kUsage);
  return 1;
}

}  // namespace
}  // namespace ferry::cli

int main(int argc, char** argv) { return ferry::cli::Main(argc, argv); }
