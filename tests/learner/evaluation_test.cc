// Greedy evaluation plays the same episodes on the fast MLP forward as on LibTorch's, and picks
// greedy actions as torch::argmax does: the first of equal maxima, else the first NaN.
#include <torch/torch.h>
// After LibTorch: the glog it includes defines CHECK too, and doctest's must win.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "envs/env.h"
#include "learner/evaluation.h"
#include "models/fast_mlp.h"

namespace ferry::learner {
namespace {

constexpr uint64_t kSeed = 21;
constexpr int kEpisodes = 10;

models::QNetwork SeededNet(uint64_t seed) {
  torch::manual_seed(seed);
  models::QNetwork net(4, 2, std::vector<int>{64, 64});  // CartPole: 4 observations, 2 actions.
  net->eval();
  return net;
}

// A network whose greedy policy pushes the cart toward the side the pole falls to (angle plus
// angular velocity), blurred by small random weights: every action depends on the observation,
// and the episodes run long.
models::QNetwork BalancingNet(uint64_t seed) {
  models::QNetwork net = SeededNet(seed);
  torch::NoGradGuard no_grad;
  const auto p = net->parameters();  // Layer 1 weight, bias, layer 2 weight, bias, head's.
  for (const auto& t : p) t.mul_(0.01);
  for (int side : {0, 1}) {
    const float sign = side == 0 ? 1.f : -1.f;
    p[0][side][2] = sign;  // Unit 0: relu(angle + angular velocity); unit 1: its negative.
    p[0][side][3] = sign;
    p[2][side][side] = 1.f;
  }
  p[4][1][0] = 1.f;  // Q(push right) = unit 0, Q(push left) = unit 1.
  p[4][0][1] = 1.f;
  return net;
}

// The mean return of kEpisodes CartPole episodes from kSeed on, each action `action`.
double FixedActionReturn(int action) {
  double sum = 0;
  for (int i = 0; i < kEpisodes; ++i) {
    auto env = envs::MakeEnv("CartPole-v1", kSeed + i);
    REQUIRE(env.ok());
    std::vector<float> obs(4);
    (*env)->Reset(obs.data());
    const float a = static_cast<float>(action);
    for (;;) {
      const envs::StepResult r = (*env)->Step(&a, obs.data());
      sum += r.reward;
      if (r.terminated || r.truncated) break;
    }
  }
  return sum / kEpisodes;
}

// Sets the head so that every observation's Q-values are `q0` and `q1`.
void ConstantHead(models::QNetwork& net, float q0, float q1) {
  torch::NoGradGuard no_grad;
  net->head()->weight.zero_();
  net->head()->bias.copy_(torch::tensor({q0, q1}));
}

EvalResult Evaluate(models::QNetwork& net, models::Inference inference) {
  auto r = EvaluateGreedy(net, "CartPole-v1", kEpisodes, kSeed, inference);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  return *r;
}

TEST_CASE("greedy evaluation plays the same episodes on the fast forward as on LibTorch's") {
  if (!models::FastMlp::Available()) return;  // A LibTorch on MKL: LibTorch alone.
  models::QNetwork net = BalancingNet(1);
  const EvalResult fast = Evaluate(net, models::Inference::kFastMlp);
  const EvalResult libtorch = Evaluate(net, models::Inference::kLibTorch);
  const EvalResult automatic = Evaluate(net, models::Inference::kAuto);
  CHECK(fast.steps == libtorch.steps);
  CHECK(fast.mean_return == libtorch.mean_return);
  CHECK(fast.std_return == libtorch.std_return);
  CHECK(automatic.steps == fast.steps);
  // The figures tell policies apart: other weights play other episodes.
  models::QNetwork other = BalancingNet(2);
  CHECK(Evaluate(other, models::Inference::kLibTorch).steps != libtorch.steps);
  CHECK(libtorch.steps > 20 * kEpisodes);
}

TEST_CASE("greedy evaluation breaks ties and NaNs as torch::argmax does") {
  // The rule it follows, on the LibTorch this build has.
  CHECK(torch::tensor({1.f, 1.f}).argmax().item<int64_t>() == 0);
  CHECK(torch::tensor({1.f, NAN}).argmax().item<int64_t>() == 1);
  REQUIRE(FixedActionReturn(0) != FixedActionReturn(1));
  models::QNetwork net = SeededNet(3);
  for (models::Inference inference : {models::Inference::kAuto, models::Inference::kLibTorch}) {
    ConstantHead(net, 0.5f, 0.5f);
    CHECK(Evaluate(net, inference).mean_return == FixedActionReturn(0));
    ConstantHead(net, 0.5f, NAN);
    CHECK(Evaluate(net, inference).mean_return == FixedActionReturn(1));
    ConstantHead(net, NAN, NAN);
    CHECK(Evaluate(net, inference).mean_return == FixedActionReturn(0));
  }
}

}  // namespace
}  // namespace ferry::learner
