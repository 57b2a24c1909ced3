// Greedy evaluation: `episodes` envs, one episode each, stepped together with
// one batched forward pass per step on a separate set of envs (own seeds).
#ifndef FERRY_LEARNER_EVALUATION_H_
#define FERRY_LEARNER_EVALUATION_H_

#include <cstdint>
#include <string>

#include "core/status.h"
#include "models/q_network.h"

namespace ferry::learner {

struct EvalResult {
  double mean_return = 0;
  double std_return = 0;
  int episodes = 0;
  int64_t steps = 0;
};

Result<EvalResult> EvaluateGreedy(models::QNetwork& net, const std::string& env_id, int episodes,
                                  uint64_t seed);

}  // namespace ferry::learner

#endif  // FERRY_LEARNER_EVALUATION_H_
