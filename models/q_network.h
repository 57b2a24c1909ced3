// The Q-network (an MLP over flat observations) and its flat weight blob.
//
//   obs [B, obs_dim] -> (Linear -> ReLU) x hidden.size() -> features [B, H]
//                    -> Linear head -> Q [B, num_actions]
//
// Weights travel as one blob: every parameter in registration order, float32,
// concatenated. The blob layout is fixed by the architecture, so FromBlob
// refuses a blob of the wrong size instead of loading garbage.
#ifndef FERRY_MODELS_Q_NETWORK_H_
#define FERRY_MODELS_Q_NETWORK_H_

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "core/status.h"

namespace ferry::models {

class QNetworkImpl : public torch::nn::Module {
 public:
  QNetworkImpl(int obs_dim, int num_actions, const std::vector<int>& hidden);

  torch::Tensor forward(const torch::Tensor& obs);
  // Penultimate-layer activations, the input of the linear head.
  torch::Tensor Features(const torch::Tensor& obs);
  torch::nn::Linear& head() { return head_; }
  int num_actions() const { return num_actions_; }

 private:
  torch::nn::Sequential body_;
  torch::nn::Linear head_{nullptr};
  int num_actions_;
};
TORCH_MODULE(QNetwork);

// Number of float32 values in the blob of `module`.
int64_t ParameterCount(torch::nn::Module& module);
std::vector<uint8_t> ToBlob(torch::nn::Module& module);
Status FromBlob(torch::nn::Module& module, const uint8_t* data, size_t bytes);
// Copies every parameter of `from` into `to` (same architecture).
void CopyParameters(torch::nn::Module& from, torch::nn::Module& to);

}  // namespace ferry::models

#endif  // FERRY_MODELS_Q_NETWORK_H_
