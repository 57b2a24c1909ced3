// The Ape-X DQN learner, one process per MPI rank.
//
//   each rank: sample its share of the global batch from every shard
//           -> Double-DQN n-step loss with IS weights (Huber)
//           -> backward -> gradients fused into one buffer, with a few
//              control slots (stop code, ranks without data, loss)
//           -> MPI allreduce -> identical clipped Adam step on every rank
//           -> |TD| priorities back to the owning shards
//   rank 0: publishes weights every publish_period updates, evaluates the
//           greedy policy every eval_period updates, writes metrics.jsonl,
//           and decides when the run ends (target return or budget).
//
// The ranks stay in lock-step: every iteration is one allreduce on every rank,
// even for a rank whose sampling failed (it contributes zeros and the step is
// skipped everywhere), so parameters never diverge.
#ifndef FERRY_LEARNER_APEX_DQN_H_
#define FERRY_LEARNER_APEX_DQN_H_

#include <atomic>

#include <torch/torch.h>

#include "core/config.h"
#include "core/status.h"
#include "models/q_network.h"

namespace ferry::learner {

// How a learner run ended; the process exit code.
enum class RunEnd : int { kTargetReached = 0, kError = 1, kBudgetExhausted = 2, kStopped = 3 };

struct DqnBatch {
  torch::Tensor obs, action, reward, discount, next_obs, weights;  // action: int64 [B]
};

struct DqnLoss {
  torch::Tensor loss;  // Scalar: sum_i w_i * huber(td_i) / normaliser.
  torch::Tensor td;    // [B], detached.
};

// Double DQN: y = r + discount * Q_target(s', argmax_a Q_online(s', a)).
DqnLoss DoubleDqnLoss(models::QNetwork& online, models::QNetwork& target, const DqnBatch& batch,
                      double huber_delta, double normaliser);
// Plain DQN: y = r + discount * max_a Q_target(s', a).
DqnLoss DqnMaxLoss(models::QNetwork& online, models::QNetwork& target, const DqnBatch& batch,
                   double huber_delta, double normaliser);

// Runs this rank's learner (MPI must be initialised) until the run ends.
Result<RunEnd> RunLearner(const core::Config& config, const std::atomic<bool>& stop);

}  // namespace ferry::learner

#endif  // FERRY_LEARNER_APEX_DQN_H_
