#include "learner/target_ahead.h"

#include <cstring>

namespace ferry::learner {

bool TargetAhead::Available() { return models::FastMlp::Available(); }

TargetAhead::TargetAhead(models::QNetworkImpl& target, int64_t version)
    : incoming_(models::FastMlpOf(target)),
      incoming_version_(version),
      net_(models::FastMlpOf(target)),
      version_(version) {}

void TargetAhead::Publish(models::QNetworkImpl& target, int64_t version) {
  std::lock_guard<std::mutex> lock(mu_);
  if (version == incoming_version_) return;
  models::CopyWeights(target, incoming_);
  incoming_version_ = version;
  fresh_ = true;
}

void TargetAhead::Fill(DqnBatch* batch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (fresh_) {
      net_.SwapWeights(incoming_);
      version_ = incoming_version_;
      fresh_ = false;
    }
  }
  const torch::Tensor next_obs = batch->next_obs.contiguous();
  const int rows = static_cast<int>(next_obs.size(0));
  TORCH_CHECK(next_obs.dim() == 2 && next_obs.size(1) == net_.obs_dim(),
              "next observations of shape ", next_obs.sizes(), " for a network with ",
              net_.obs_dim(), " inputs");
  const float* q = net_.Forward(next_obs.data_ptr<float>(), rows);
  batch->target_next_q = torch::empty({rows, net_.num_actions()}, torch::kFloat32);
  std::memcpy(batch->target_next_q.data_ptr<float>(), q,
              sizeof(float) * static_cast<size_t>(rows) * net_.num_actions());
  batch->target_version = version_;
}

}  // namespace ferry::learner
