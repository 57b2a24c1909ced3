// A random DQN batch for the learner's tests: TD errors on both sides of a Huber delta of 0.5,
// a row of zeros (ReLUs exactly at 0), a terminal transition and every action used.
#ifndef FERRY_TESTS_LEARNER_RANDOM_BATCH_H_
#define FERRY_TESTS_LEARNER_RANDOM_BATCH_H_

#include <torch/torch.h>

#include <cstdint>

#include "learner/dqn_loss.h"

namespace ferry::learner::testing {

inline DqnBatch RandomBatch(int rows, int obs_dim, int actions, uint64_t seed) {
  torch::manual_seed(seed);
  DqnBatch b;
  b.obs = torch::randn({rows, obs_dim});
  b.obs[0].zero_();
  b.next_obs = torch::randn({rows, obs_dim});
  b.action = torch::randint(0, actions, {rows}, torch::kInt64);
  b.reward = 2 * torch::randn({rows});
  b.discount = torch::full({rows}, 0.97f);
  b.discount[1] = 0;  // A terminal transition.
  b.weights = torch::rand({rows});
  return b;
}

}  // namespace ferry::learner::testing

#endif  // FERRY_TESTS_LEARNER_RANDOM_BATCH_H_
