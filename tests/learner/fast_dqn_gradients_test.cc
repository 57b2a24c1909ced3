#include "learner/fast_dqn_gradients.h"

#include <doctest/doctest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "learner/dqn_updater.h"
#include "tests/learner/random_batch.h"

namespace ferry::learner {
namespace {

using testing::RandomBatch;

struct Gradients {
  DqnLoss loss;
  std::vector<torch::Tensor> grads;
};

Gradients Autograd(models::QNetwork& online, models::QNetwork& target, const DqnBatch& b,
                   bool double_dqn) {
  online->zero_grad();
  DqnLoss loss = (double_dqn ? DoubleDqnLoss : DqnMaxLoss)(online, target, b, /*huber_delta=*/0.5,
                                                           /*normaliser=*/100);
  loss.loss.backward();
  Gradients g{loss, {}};
  for (const auto& p : online->parameters()) g.grads.push_back(p.grad().clone());
  return g;
}

Gradients Fast(FastDqnGradients& fast, models::QNetwork& online, models::QNetwork& target,
               const DqnBatch& b, bool double_dqn) {
  Gradients g{fast.Compute(*online, *target, b, double_dqn, /*huber_delta=*/0.5,
                           /*normaliser=*/100),
              {}};
  for (const auto& p : online->parameters()) g.grads.push_back(p.grad().clone());
  return g;
}

TEST_CASE("without autograd: the TD errors are autograd's bits, the loss and gradients agree") {
  REQUIRE(FastDqnGradients::Available());
  for (const bool double_dqn : {true, false}) {
    for (const std::vector<int>& hidden : {std::vector<int>{8}, std::vector<int>{64, 32}}) {
      CAPTURE(double_dqn);
      CAPTURE(hidden.size());
      torch::manual_seed(3);
      models::QNetwork online(5, 3, hidden), target(5, 3, hidden);
      const DqnBatch b = RandomBatch(48, 5, 3, 11);
      const Gradients expected = Autograd(online, target, b, double_dqn);
      FastDqnGradients fast;
      const Gradients got = Fast(fast, online, target, b, double_dqn);
      CHECK(torch::equal(got.loss.td, expected.loss.td));
      CHECK(got.loss.loss.item<float>() ==
            doctest::Approx(expected.loss.loss.item<float>()).epsilon(1e-6));
      REQUIRE(got.grads.size() == expected.grads.size());
      for (size_t i = 0; i < got.grads.size(); ++i) {
        CAPTURE(i);
        CHECK(expected.grads[i].abs().max().item<float>() > 0);
        CHECK(torch::allclose(got.grads[i], expected.grads[i], /*rtol=*/1e-5, /*atol=*/1e-7));
      }
      // Double DQN and plain DQN bootstrap from different actions here, so mixing them up fails.
      const Gradients other = Fast(fast, online, target, b, !double_dqn);
      CHECK_FALSE(torch::equal(other.loss.td, got.loss.td));
    }
  }
}

TEST_CASE("without autograd: gradients are overwritten, not accumulated") {
  torch::manual_seed(4);
  models::QNetwork online(4, 2, std::vector<int>{16}), target(4, 2, std::vector<int>{16});
  FastDqnGradients fast;
  const DqnBatch b = RandomBatch(16, 4, 2, 5);
  const Gradients first = Fast(fast, online, target, b, true);
  Fast(fast, online, target, RandomBatch(32, 4, 2, 6), true);  // Larger: the scratch grows.
  const Gradients again = Fast(fast, online, target, b, true);
  for (size_t i = 0; i < first.grads.size(); ++i)
    CHECK(torch::equal(again.grads[i], first.grads[i]));
}

TEST_CASE("without autograd: an action outside the network's range is an error naming it") {
  models::QNetwork online(4, 2, std::vector<int>{8}), target(4, 2, std::vector<int>{8});
  FastDqnGradients fast;
  DqnBatch b = RandomBatch(8, 4, 2, 1);
  b.action[5] = 2;
  try {
    fast.Compute(*online, *target, b, true, 1.0, 8);
    FAIL("no error");
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    CHECK(what.find("action 2 of transition 5 is outside [0, 2)") != std::string::npos);
  }
}

TEST_CASE("an updater without autograd trains as one with it, to float rounding") {
  UpdaterOptions o;
  o.obs_dim = 6;
  o.num_actions = 3;
  o.hidden = {32, 32};
  o.learning_rate = 1e-3;
  o.target_update_period = 5;
  torch::manual_seed(9);
  DqnUpdater fast(o, torch::kCPU);
  o.autograd = true;
  torch::manual_seed(9);
  DqnUpdater autograd(o, torch::kCPU);
  const torch::Tensor initial = fast.online()->parameters()[0].detach().clone();
  for (int step = 0; step < 20; ++step) {
    const DqnBatch b = RandomBatch(32, 6, 3, 100 + step);
    const DqnLoss a = fast.ComputeGradients(b, 32);
    const DqnLoss c = autograd.ComputeGradients(b, 32);
    CHECK(torch::allclose(a.td, c.td, 1e-4, 1e-5));
    fast.ApplyGradients();
    autograd.ApplyGradients();
  }
  const auto p = fast.online()->parameters();
  const auto q = autograd.online()->parameters();
  for (size_t i = 0; i < p.size(); ++i) CHECK(torch::allclose(p[i], q[i], 1e-4, 1e-6));
  CHECK_FALSE(torch::allclose(p[0], initial, 1e-4, 1e-6));  // Training moved them.
}

}  // namespace
}  // namespace ferry::learner
