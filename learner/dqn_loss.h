// The n-step TD losses of DQN, on batches already in tensors.
//
//   y = reward + discount * Q_next     (discount is gamma^k, 0 after termination)
//   loss = sum_i w_i * huber(y_i - Q_online(s_i, a_i)) / normaliser
//
// Double DQN picks the next action with the online network and values it with
// the target network; plain DQN takes the target network's own maximum.
#ifndef FERRY_LEARNER_DQN_LOSS_H_
#define FERRY_LEARNER_DQN_LOSS_H_

#include <torch/torch.h>

#include "models/q_network.h"

namespace ferry::learner {

struct DqnBatch {
  torch::Tensor obs, action, reward, discount, next_obs, weights;  // action: int64 [B]
  // Optional: the target network's Q-values of next_obs [B, actions], computed ahead of the
  // update (learner/target_ahead.h) by the target network of `target_version`
  // (DqnUpdater::target_version()); undefined when not.
  torch::Tensor target_next_q;
  int64_t target_version = -1;
};

struct DqnLoss {
  torch::Tensor loss;  // Scalar: sum_i w_i * huber(td_i) / normaliser.
  torch::Tensor td;    // [B], detached.
};

// The bootstrap value Q_next of every transition, without gradients.
torch::Tensor BootstrapValues(models::QNetwork& online, models::QNetwork& target,
                              const torch::Tensor& next_obs, bool double_dqn);

// Double DQN: y = r + discount * Q_target(s', argmax_a Q_online(s', a)).
DqnLoss DoubleDqnLoss(models::QNetwork& online, models::QNetwork& target, const DqnBatch& batch,
                      double huber_delta, double normaliser);
// Plain DQN: y = r + discount * max_a Q_target(s', a).
DqnLoss DqnMaxLoss(models::QNetwork& online, models::QNetwork& target, const DqnBatch& batch,
                   double huber_delta, double normaliser);

}  // namespace ferry::learner

#endif  // FERRY_LEARNER_DQN_LOSS_H_
