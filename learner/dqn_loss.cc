#include "learner/dqn_loss.h"

namespace ferry::learner {
namespace {

DqnLoss TdLoss(models::QNetwork& online, const DqnBatch& batch, const torch::Tensor& q_next,
               double huber_delta, double normaliser) {
  const torch::Tensor y = batch.reward + batch.discount * q_next;
  const torch::Tensor q =
      online->forward(batch.obs).gather(1, batch.action.unsqueeze(1)).squeeze(1);
  const torch::Tensor huber = torch::nn::functional::huber_loss(
      q, y,
      torch::nn::functional::HuberLossFuncOptions().reduction(torch::kNone).delta(huber_delta));
  return {(batch.weights * huber).sum() / normaliser, (y - q).detach()};
}

}  // namespace

torch::Tensor BootstrapValues(models::QNetwork& online, models::QNetwork& target,
                              const torch::Tensor& next_obs, bool double_dqn) {
  torch::NoGradGuard no_grad;
  const torch::Tensor q_target = target->forward(next_obs);
  if (!double_dqn) return std::get<0>(q_target.max(1));
  const torch::Tensor best = online->forward(next_obs).argmax(1, /*keepdim=*/true);
  return q_target.gather(1, best).squeeze(1);
}

DqnLoss DoubleDqnLoss(models::QNetwork& online, models::QNetwork& target, const DqnBatch& batch,
                      double huber_delta, double normaliser) {
  return TdLoss(online, batch, BootstrapValues(online, target, batch.next_obs, true), huber_delta,
                normaliser);
}

DqnLoss DqnMaxLoss(models::QNetwork& online, models::QNetwork& target, const DqnBatch& batch,
                   double huber_delta, double normaliser) {
  return TdLoss(online, batch, BootstrapValues(online, target, batch.next_obs, false), huber_delta,
                normaliser);
}

}  // namespace ferry::learner
