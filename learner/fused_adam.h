// torch::nn::utils::clip_grad_norm_ followed by torch::optim::Adam::step, in one pass
// over each parameter instead of a dozen LibTorch ops per tensor, whose dispatch was
// most of the step: 0.05 ms for the 67k parameters of a 256x256 MLP against 0.16 ms
// (one core; docs/BENCHMARKS.md, "Updates per second", has the whole update).
//
//   norm = sqrt(sum of every gradient squared)    scale = min(1, max_norm / (norm + 1e-6))
//   per value: g *= scale; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2
//              p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
//
// It reads and writes the optimizer's own state (moments, step count) under the keys
// Adam::step uses, so the two steps can take turns and checkpoints do not tell which ran.
// Values agree with LibTorch's to float rounding, except that values under float's smallest
// normal (1.2e-38) are taken and written as zero: the step runs with the SSE unit's flush-to-
// zero and denormals-are-zero modes on, and restores the caller's mode before it returns.
// For float32 CPU parameters and Adam without weight decay or AMSGrad (c10::Error otherwise).
#ifndef FERRY_LEARNER_FUSED_ADAM_H_
#define FERRY_LEARNER_FUSED_ADAM_H_

#include <torch/torch.h>

#include <sstream>
#include <string>
#include <type_traits>

namespace ferry::learner {

// Whether the step flushes subnormals to zero (the learner's) or keeps them, as LibTorch's step
// does (bench/learner_bench/adam.cc times the two).
enum class Subnormals { kFlush, kKeep };

// The key under which `optimizer` keeps `param`'s state: LibTorch 1.x spells the TensorImpl's
// address as text (as an ostream writes a pointer), 2.x keys by the address itself.
template <typename Optimizer>
auto OptimizerStateKey(const Optimizer& optimizer, const torch::Tensor& param) {
  using Key = typename std::remove_reference_t<decltype(optimizer.state())>::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;
    text << param.unsafeGetTensorImpl();
    return text.str();
  } else {
    return static_cast<Key>(param.unsafeGetTensorImpl());
  }
}

void ClipAndStep(torch::optim::Adam& optimizer, double max_grad_norm,
                 Subnormals subnormals = Subnormals::kFlush);

}  // namespace ferry::learner

#endif  // FERRY_LEARNER_FUSED_ADAM_H_
