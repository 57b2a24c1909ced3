// Greedy evaluation: `episodes` envs, one episode each, stepped together with
// one batched forward pass per step on a separate set of envs (own seeds).
#ifndef FERRY_LEARNER_EVALUATION_H_
#define FERRY_LEARNER_EVALUATION_H_

#include <cstdint>
#include <string>

#include "core/config.h"
#include "core/metrics.h"
#include "core/status.h"
#include "models/fast_mlp.h"
#include "models/q_network.h"

namespace ferry::learner {

struct EvalResult {
  double mean_return = 0;
  double std_return = 0;
  int episodes = 0;
  int64_t steps = 0;
};

// The forward pass is FastMlp's where it gives LibTorch's bits (kAuto), so both play the same
// episodes; `inference` forces one (kFastMlp: InvalidArgument where it would not be exact).
Result<EvalResult> EvaluateGreedy(models::QNetwork& net, const std::string& env_id, int episodes,
                                  uint64_t seed,
                                  models::Inference inference = models::Inference::kAuto);

// The first env seed of every periodic evaluation of a run: the same start states each time.
uint64_t PeriodicEvalSeed(const core::Config& config);

// The first env seed of a run's final evaluation: episodes no periodic evaluation plays.
uint64_t FinalEvalSeed(const core::Config& config);

class DqnUpdater;

// The records a finished run ends with: its final policy (updater.policy()) and the policy its
// periodic evaluations selected (BestPolicyPath(checkpoint_dir), when there is one), each
// evaluated on config's learner.final_eval_episodes episodes from FinalEvalSeed, which no
// periodic evaluation plays: the best periodic figure is a maximum over many evaluations of the
// same episodes, so it flatters. Adds final_eval_* and selected_* to `record` and logs both;
// where the final policy is a weight average, also online_eval_*, the online network's return
// on the same episodes.
Status AddFinalEvaluations(const core::Config& config, DqnUpdater& updater,
                           const std::string& checkpoint_dir, core::MetricsRecord* record);

// `ferry eval`: the greedy policy of the newest loadable checkpoint in
// <config.run.dir>/checkpoints, evaluated as EvaluateGreedy does; `checkpoint`
// gets the file's path and `updates` its update count.
Result<EvalResult> EvaluateCheckpoint(const core::Config& config, int episodes, uint64_t seed,
                                      std::string* checkpoint, int64_t* updates);

// `ferry eval --best`: the same for the policy the run's periodic evaluations selected
// (learner::BestPolicyPath in its checkpoint directory).
Result<EvalResult> EvaluateBestPolicy(const core::Config& config, int episodes, uint64_t seed,
                                      std::string* path, int64_t* updates);

}  // namespace ferry::learner

#endif  // FERRY_LEARNER_EVALUATION_H_
