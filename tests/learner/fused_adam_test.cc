#include "learner/fused_adam.h"

#include <doctest/doctest.h>
#include <torch/torch.h>
#include <xmmintrin.h>

#include <limits>
#include <vector>

namespace ferry::learner {
namespace {

// Two copies of one small network, each with its own Adam; `Step` gives both the same gradients.
struct Twins {
  torch::nn::Linear fused{torch::nn::LinearOptions(7, 5)};
  torch::nn::Linear reference{torch::nn::LinearOptions(7, 5)};
  torch::optim::Adam fused_adam{fused->parameters(), torch::optim::AdamOptions(1e-2)};
  torch::optim::Adam reference_adam{reference->parameters(), torch::optim::AdamOptions(1e-2)};

  Twins() {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < fused->parameters().size(); ++i) {
      reference->parameters()[i].copy_(fused->parameters()[i]);
    }
  }

  void SetGradients(float magnitude, uint64_t seed) {
    torch::manual_seed(seed);
    for (size_t i = 0; i < fused->parameters().size(); ++i) {
      const torch::Tensor g = magnitude * torch::randn_like(fused->parameters()[i]);
      fused->parameters()[i].mutable_grad() = g.clone();
      reference->parameters()[i].mutable_grad() = g.clone();
    }
  }
};

// The first moment Adam keeps for `p`.
torch::Tensor& FirstMoment(torch::optim::Adam& adam, const torch::Tensor& p) {
  return static_cast<torch::optim::AdamParamState&>(*adam.state().at(OptimizerStateKey(adam, p)))
      .exp_avg();
}

void CheckSame(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(torch::allclose(a[i], b[i], /*rtol=*/1e-5, /*atol=*/1e-7));
  }
}

TEST_CASE("the fused step is clip_grad_norm_ then Adam::step, clipping or not") {
  Twins twins;
  // Norms of about 0.3 (under max_norm 1: no clipping) and about 60 (clipped to 1).
  for (int step = 0; step < 6; ++step) {
    CAPTURE(step);
    twins.SetGradients(step % 2 == 0 ? 0.05f : 10.f, 20 + step);
    ClipAndStep(twins.fused_adam, /*max_grad_norm=*/1.0);
    torch::nn::utils::clip_grad_norm_(twins.reference->parameters(), 1.0);
    twins.reference_adam.step();
    CheckSame(twins.fused->parameters(), twins.reference->parameters());
    std::vector<torch::Tensor> fused_grads, reference_grads;
    for (const auto& p : twins.fused->parameters()) fused_grads.push_back(p.grad());
    for (const auto& p : twins.reference->parameters()) reference_grads.push_back(p.grad());
    CheckSame(fused_grads, reference_grads);  // Left clipped, as clip_grad_norm_ leaves them.
  }
}

TEST_CASE("the fused step keeps Adam's own state: the two steps can take turns") {
  Twins twins;
  twins.SetGradients(1.f, 1);
  ClipAndStep(twins.fused_adam, 100.0);
  twins.reference_adam.step();
  twins.SetGradients(1.f, 2);
  twins.fused_adam.step();  // LibTorch's step continues from the fused one's moments...
  ClipAndStep(twins.reference_adam, 100.0);  // ...and the fused from LibTorch's.
  CheckSame(twins.fused->parameters(), twins.reference->parameters());
  for (const auto& p : twins.fused->parameters()) {
    const auto& state = static_cast<const torch::optim::AdamParamState&>(
        *twins.fused_adam.state().at(OptimizerStateKey(twins.fused_adam, p)));
    CHECK(state.step() == 2);
    CHECK(state.exp_avg().abs().max().item<float>() > 0);
  }
}

TEST_CASE("the fused step flushes subnormal moments to zero and leaves the caller's float mode") {
  // MXCSR's control bits: rounding, exception masks, flush-to-zero, denormals-are-zero (the
  // low six bits are sticky exception flags the arithmetic sets).
  const auto modes = [] { return _mm_getcsr() & ~0x3Fu; };
  const unsigned int before = modes();
  Twins twins;
  twins.SetGradients(1.f, 3);
  ClipAndStep(twins.fused_adam, 100.0);
  // A unit whose gradient has been zero long enough: its first moment is subnormal.
  const float subnormal = std::numeric_limits<float>::min() / 4;
  for (auto& p : twins.fused->parameters()) {
    FirstMoment(twins.fused_adam, p).fill_(subnormal);
    p.mutable_grad().zero_();
  }
  ClipAndStep(twins.fused_adam, 100.0);
  CHECK(modes() == before);
  for (const auto& p : twins.fused->parameters()) {
    CHECK(FirstMoment(twins.fused_adam, p).abs().max().item<float>() == 0);  // Not 0.9 x it.
  }
  // The caller's own arithmetic still keeps subnormals.
  volatile float kept = subnormal;
  CHECK(kept * 0.5f > 0);

  // Asked to keep them, the step decays them as LibTorch's does.
  for (const auto& p : twins.fused->parameters()) FirstMoment(twins.fused_adam, p).fill_(subnormal);
  ClipAndStep(twins.fused_adam, 100.0, Subnormals::kKeep);
  for (const auto& p : twins.fused->parameters()) {
    CHECK(FirstMoment(twins.fused_adam, p).min().item<float>() == subnormal * 0.9f);
  }
}

TEST_CASE("the fused step refuses what it does not implement") {
  torch::nn::Linear net(3, 2);
  torch::optim::Adam decaying(net->parameters(), torch::optim::AdamOptions(1e-3).weight_decay(0.1));
  for (auto& p : net->parameters()) p.mutable_grad() = torch::ones_like(p);
  CHECK_THROWS_AS(ClipAndStep(decaying, 1.0), c10::Error);
}

}  // namespace
}  // namespace ferry::learner
