#include "learner/dqn_updater.h"

#include <doctest/doctest.h>
#include <torch/torch.h>

namespace ferry::learner {
namespace {

UpdaterOptions DecayingOptions(double final_fraction) {
  UpdaterOptions o;
  o.obs_dim = 4;
  o.num_actions = 2;
  o.hidden = {8};
  o.learning_rate = 1e-2;
  o.learning_rate_final_fraction = final_fraction;
  o.decay_env_steps = 1000;
  return o;
}

DqnBatch OneBatch() {
  torch::manual_seed(5);
  DqnBatch b;
  b.obs = torch::randn({16, 4});
  b.next_obs = torch::randn({16, 4});
  b.action = torch::randint(0, 2, {16}, torch::kInt64);
  b.reward = torch::randn({16});
  b.discount = torch::full({16}, 0.99f);
  b.weights = torch::ones({16});
  return b;
}

// The largest parameter change of one Adam step taken at `env_steps`. Adam's first step moves
// every parameter with a non-zero gradient by the learning rate (bias-corrected m / sqrt(v) is
// the gradient's sign), so the change reads the rate the optimizer used.
double FirstStepSize(double final_fraction, int64_t env_steps) {
  torch::manual_seed(1);
  DqnUpdater updater(DecayingOptions(final_fraction), torch::kCPU);
  std::vector<torch::Tensor> before;
  for (const auto& p : updater.online()->parameters()) before.push_back(p.detach().clone());
  updater.ComputeGradients(OneBatch(), /*normaliser=*/16);
  updater.ScheduleLearningRate(env_steps);
  updater.ApplyGradients();
  double largest = 0;
  const auto after = updater.online()->parameters();
  for (size_t i = 0; i < after.size(); ++i) {
    largest = std::max(largest, (after[i] - before[i]).abs().max().item<double>());
  }
  return largest;
}

TEST_CASE("the learning rate falls linearly in env steps to its final fraction, then stays") {
  DqnUpdater updater(DecayingOptions(0.1), torch::kCPU);
  CHECK(updater.learning_rate() == doctest::Approx(1e-2));
  updater.ScheduleLearningRate(500);
  CHECK(updater.learning_rate() == doctest::Approx(1e-2 * 0.55));
  updater.ScheduleLearningRate(1000);
  CHECK(updater.learning_rate() == doctest::Approx(1e-3));
  updater.ScheduleLearningRate(5000);
  CHECK(updater.learning_rate() == doctest::Approx(1e-3));

  DqnUpdater constant(DecayingOptions(1.0), torch::kCPU);
  constant.ScheduleLearningRate(800);
  CHECK(constant.learning_rate() == doctest::Approx(1e-2));
}

TEST_CASE("the optimizer steps with the scheduled learning rate") {
  CHECK(FirstStepSize(1.0, 0) == doctest::Approx(1e-2).epsilon(1e-3));
  CHECK(FirstStepSize(0.1, 0) == doctest::Approx(1e-2).epsilon(1e-3));
  CHECK(FirstStepSize(0.1, 500) == doctest::Approx(5.5e-3).epsilon(1e-3));
  CHECK(FirstStepSize(0.1, 1000) == doctest::Approx(1e-3).epsilon(1e-3));
}

TEST_CASE("the policy is the online network, or with policy_average the average of its weights") {
  DqnUpdater plain(DecayingOptions(1.0), torch::kCPU);
  CHECK(plain.policy().get() == plain.online().get());

  UpdaterOptions options = DecayingOptions(1.0);
  options.policy_average = 0.75;
  torch::manual_seed(1);
  DqnUpdater averaged(options, torch::kCPU);
  std::vector<torch::Tensor> expected;
  for (const auto& p : averaged.online()->parameters()) expected.push_back(p.detach().clone());
  for (int step = 0; step < 3; ++step) {
    averaged.ComputeGradients(OneBatch(), /*normaliser=*/16);
    averaged.ApplyGradients();
    const auto online = averaged.online()->parameters();
    for (size_t i = 0; i < expected.size(); ++i) {
      expected[i] = 0.75 * expected[i] + 0.25 * online[i].detach();
    }
  }
  const auto policy = averaged.policy()->parameters();
  const auto online = averaged.online()->parameters();
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(torch::allclose(policy[i], expected[i], /*rtol=*/1e-5, /*atol=*/1e-7));
    CHECK_FALSE(torch::allclose(policy[i], online[i]));
  }
}

}  // namespace
}  // namespace ferry::learner
