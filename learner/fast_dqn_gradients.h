// DqnUpdater::ComputeGradients without autograd, for MLP Q-networks on the CPU: the
// TD loss of a batch (learner/dqn_loss.h) and its gradients, written straight into the
// online network's .grad() tensors by the sgemm_ LibTorch itself calls.
//
//   online(obs), keeping each layer's output    target(next_obs), online(next_obs)
//         |                                              | (bias rows + sgemm: the forward
//         v                                              v  bits of models/fast_mlp.h)
//   q = Q[i, a_i]              y = r + discount * Q_target(s', argmax or max)
//   td = y - q,  dLoss/dq_i = w_i * clamp(q - y, -delta, delta) / normaliser
//         |
//   last layer first: dW = G^T x, db = column sums of G, G <- (G W) masked where x <= 0
//
// At batch 64 of a 256x256 MLP the five 64x256x256 products take 0.43 ms; with them the
// loss and backward take 0.49 ms here and 0.70 ms through autograd, the rest being per-op
// dispatch, graph building and allocation (docs/BENCHMARKS.md, "Updates per second").
// The forward passes are LibTorch's bits, so the TD errors are equal to the autograd
// path's; the gradients and the loss agree to float rounding (sums in another order). Not
// used with the overlapped allreduce, whose hooks ride on autograd, nor on CUDA.
#ifndef FERRY_LEARNER_FAST_DQN_GRADIENTS_H_
#define FERRY_LEARNER_FAST_DQN_GRADIENTS_H_

#include <torch/torch.h>

#include <vector>

#include "learner/dqn_loss.h"
#include "models/q_network.h"

namespace ferry::learner {

class FastDqnGradients {
 public:
  // Whether this process has the BLAS sgemm_ (models::FastMlp::Available()).
  static bool Available();

  // Loss and TD errors of `batch` as DoubleDqnLoss (double_dqn) or DqnMaxLoss compute them,
  // with d loss / d parameter in each parameter's grad() of `online` (allocated if
  // undefined, overwritten, not accumulated). Both networks are float32 on the CPU. With
  // `target_next_q` (row-major [rows, actions]: `target` on next_obs, computed ahead) the
  // target network's forward pass is skipped and those values used.
  // Throws c10::Error, as LibTorch's gather would, for an action outside the network's range.
  DqnLoss Compute(models::QNetworkImpl& online, models::QNetworkImpl& target, const DqnBatch& batch,
                  bool double_dqn, double huber_delta, double normaliser,
                  const float* target_next_q = nullptr);

 private:
  // Scratch, grown to the largest batch seen and never shrunk, so a warm Compute does not
  // allocate but for the TD errors and the loss it returns.
  std::vector<torch::Tensor> outputs_;  // Online layer l's output on obs (after its ReLU).
  torch::Tensor target_next_[2];        // Ping-pong activations of each network on next_obs.
  torch::Tensor online_next_[2];
  torch::Tensor grad_[2];  // Ping-pong: d loss / d a layer's output.
};

}  // namespace ferry::learner

#endif  // FERRY_LEARNER_FAST_DQN_GRADIENTS_H_
