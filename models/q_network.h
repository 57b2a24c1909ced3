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

#include <torch/torch.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "core/status.h"
#include "models/fast_mlp.h"

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

// A QNetwork's forward pass on models::FastMlp, LibTorch's bits without its per-call dispatch.

// Which forward pass a caller runs its policy with.
enum class Inference {
  kAuto,  // FastMlp where it is bit-exact with LibTorch, LibTorch otherwise.
  kLibTorch,
  kFastMlp,  // Refused (InvalidArgument) where it is not bit-exact.
};

// A FastMlp shaped as `net`, with its current weights. Requires FastMlp::Available().
FastMlp FastMlpOf(QNetworkImpl& net);
// Makes `fast` (shaped as `net`) hold `net`'s current weights.
void CopyWeights(QNetworkImpl& net, FastMlp& fast);

// Whether fast.Forward gives exactly the bits of net->forward on `batch`
// observations drawn from N(0, 1) with `seed` (and a few set to 0 and -0).
bool ForwardMatchesLibTorch(QNetworkImpl& net, FastMlp& fast, int batch, uint64_t seed);

// A FastMlp of `net` (on the CPU) where its forward gives net->forward's bits at every batch
// size in `batches` (ForwardMatchesLibTorch, seeded with the size); nothing without the BLAS
// sgemm_ or where the bits differ.
std::optional<FastMlp> ExactFastMlp(QNetworkImpl& net, std::initializer_list<int> batches);

// Keeps LibTorch's intra-op pool at one thread, for a process that shares its core. The
// BLAS's own threads cannot be set from here: Debian's libblas.so.3 (the OpenBLAS that LibTorch
// and FastMlp call) reads OPENBLAS_NUM_THREADS when it loads and exports no call to change it,
// so a process that must stay on one core is started with OPENBLAS_NUM_THREADS=1. Without it
// OpenBLAS splits a layer with batch x in x out above 2^18 (batch 128 of a 64-wide MLP) over
// every core; that changes no bits.
void UseOneInferenceThread();

}  // namespace ferry::models

#endif  // FERRY_MODELS_Q_NETWORK_H_
