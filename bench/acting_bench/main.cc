// Acting throughput, each figure beside a baseline measured in the same run.
//
//   env_steps  raw Env::Step on one core for every registered env, no policy:
//              random actions drawn from the action space before timing, Reset
//              when an episode ends (its cost counted, as EnvPool counts it)
//                vs copying one stored observation's bytes per step, the least
//                any acting loop does to hand an observation on
//   actor_steps  an actor's acting on one core, CartPole with the 2x64 MLP, for
//              E = 1, 8, 32, 128 envs: actors::VectorActor::Step (one batched
//              inference, Ape-X epsilon-greedy, Env::Step and Reset, n-step
//              accumulation, initial priorities from the acting Q-values) and
//              TakeBatch every insert_batch complete transitions (the columns
//              built as ReplayWriter::Write takes them, then dropped: no
//              network send)
//                vs the same E envs stepped alone, actions drawn before timing
//                (what the acting costs beyond the envs); the inference calls
//                alone, fast (models::FastMlp, as actors run it) and LibTorch's
//                forward on the same weights, timed the same way, say where the
//                time goes
//   greedy_eval  the learner's greedy evaluation (learner::EvaluateGreedy) of a 256x256
//              MLP on 20 and 100 MountainCar episodes of 200 steps, one core
//                fast inference vs LibTorch, same episodes
//   broadcast  a weight blob of 100 KB, 10 MB, 100 MB from the learner's
//              WeightsPublisher::Publish through a ParamServer until 1, 16, 64
//              WeightsSubscriber threads (each its own sockets, loopback TCP)
//              hold the new version; and 10 MB to 64 subscribers spread over 4
//              relay ParamServers (one more hop). Blobs over 1 MB are fetched
//              in chunks, and go through a second ferry route that sends them
//              whole too, in the same reps, where memory allows
//                vs raw ZeroMQ PUB -> SUB of the same bytes, reps alternated
//   server_memory  the root paramserver's peak resident memory (a child process)
//              while 10 MB blobs reach 16 and 64 subscribers, 100 MB ones 16,
//              chunked and whole
//                vs its resident memory before the first blob, and beside the
//                blob times the subscribers (what a copy per subscriber needs)
//   step_gap   the longest pause between an actor's steps (a 10 MB model,
//              versions received and prepared on its WeightsFollower thread
//              and swapped in between steps) while 10 MB versions are broadcast;
//              once with all threads sharing both cores, once with the acting
//              thread alone on one core
//                vs the same loop with nothing broadcast
//   follow     the CPU of 2 and 8 actors' WeightsFollower threads while CartPole's
//              4-256-256-2 network is published every 7 ms (as cartpole_zoo's
//              learner does) and each actor takes a version every 60 ms (an
//              actor of 8 envs among 8), with the versions prepared per second
//                vs the same followers taken every 1 ms, so that every version
//                is prepared
//
// Single-threaded figures count this thread's CPU time (bench/bench.h says
// why), so they are per core; inference runs on one thread, as in an actor.
// Broadcast and step gap figures are wall-clock latencies; follow figures are the follower
// threads' own CPU clocks.
//   usage: acting_bench [--quick] [--only=envs|actor|eval|broadcast|step_gap|follow] [--env=ID]
#include <iostream>
#include <string>

#include "bench/acting_bench/common.h"
#include "bench/bench.h"
#include "core/blas_kernels.h"
#include "core/log.h"
#include "core/malloc_tuning.h"
#include "envs/env.h"
#include "models/q_network.h"

namespace ferry::bench::acting_bench {
namespace {

int Main(int argc, char** argv) {
  core::KeepLargeBlocksInHeap();  // As ferry's own processes run, baselines included.
  core::WarnIfBlasIsGeneric("acting_bench");
  Settings s;
  std::string env_id;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      s = QuickSettings();
    } else if (arg.rfind("--env=", 0) == 0) {
      env_id = arg.substr(6);
    } else if (arg == "--only=envs" || arg == "--only=actor" || arg == "--only=eval" ||
               arg == "--only=broadcast" || arg == "--only=step_gap" || arg == "--only=follow") {
      only = arg.substr(7);
    } else {
      std::cerr << "usage: acting_bench [--quick] "
                   "[--only=envs|actor|eval|broadcast|step_gap|follow] [--env=ID]\n";
      return 2;
    }
  }
  const double start = core::NowSeconds();
  PrintMachineLine(s.quick);
  models::UseOneInferenceThread();  // LibTorch's figures on one thread, as FastMlp's run.
  if (only.empty() || only == "envs") {
    if (!env_id.empty()) {
      EnvStepsBench(s, env_id);  // Dies naming the registered ids if there is no such env.
    } else {
      for (const std::string& id : envs::RegisteredEnvs()) EnvStepsBench(s, id);
    }
  }
  if (only.empty() || only == "actor") {
    for (int num_envs : {1, 8, 32, 128}) ActorStepsBench(s, num_envs);
  }
  if (only.empty() || only == "eval") {
    for (int episodes : {20, 100}) GreedyEvalBench(s, episodes);
  }
  if (only.empty() || only == "broadcast") BroadcastSection(s);
  if (only.empty() || only == "step_gap") StepGapSection(s);
  if (only.empty() || only == "follow") FollowSection(s);
  JsonLine("done").Add("seconds", core::NowSeconds() - start).Add("load1", Load1()).Print();
  return 0;
}

}  // namespace
}  // namespace ferry::bench::acting_bench

int main(int argc, char** argv) { return ferry::bench::acting_bench::Main(argc, argv); }
