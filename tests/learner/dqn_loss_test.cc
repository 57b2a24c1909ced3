#include <torch/torch.h>
// After LibTorch: the glog it includes defines CHECK too, and doctest's must win.
#include <doctest/doctest.h>

#include <vector>

#include "learner/dqn_loss.h"
#include "models/q_network.h"

namespace ferry::learner {
namespace {

// Networks obs 2 -> 2 -> 2 whose hidden layer is the identity (then ReLU), so
// Q(s) = head_weight * relu(s) and every number below can be worked by hand.
models::QNetwork MakeNetwork(const std::vector<float>& head_weight) {
  models::QNetwork net(2, 2, std::vector<int>{2});
  torch::NoGradGuard no_grad;
  auto params = net->named_parameters();
  REQUIRE(params.contains("body.0.weight"));
  REQUIRE(params.contains("head.weight"));
  params["body.0.weight"].copy_(torch::eye(2));
  params["body.0.bias"].zero_();
  params["head.weight"].copy_(torch::tensor(head_weight).view({2, 2}));
  params["head.bias"].zero_();
  return net;
}

// Online: Q(s) = (relu(s0), relu(s1)). Target: Q(s) = (3 relu(s1), relu(s0)).
// On every next state below the two disagree on the best action.
models::QNetwork Online() { return MakeNetwork({1, 0, 0, 1}); }
models::QNetwork Target() { return MakeNetwork({0, 3, 1, 0}); }

torch::Tensor Floats(const std::vector<float>& values) { return torch::tensor(values); }

// Three transitions:
//   0: s=(0.5,1.5) a=0 r=0.2 d=0.9 s'=(1,2): online argmax 1, Q_target(s')=(6,1)
//      y = 0.2 + 0.9*1 = 1.1 (plain DQN would use 6), Q(s,a) = 0.5, td = 0.6
//   1: s=(3,0) a=1 r=4 d=0.5 s'=(4,1): online argmax 0, Q_target(s')=(3,4)
//      y = 4 + 0.5*3 = 5.5, Q(s,a) = 0, td = 5.5
//   2: s=(1,1) a=1 r=0.7 d=0 s'=(100,50): terminal, y = 0.7, Q(s,a) = 1, td = -0.3
DqnBatch HandBatch() {
  DqnBatch batch;
  batch.obs = Floats({0.5f, 1.5f, 3, 0, 1, 1}).view({3, 2});
  batch.action = torch::tensor({0, 1, 1}, torch::kInt64);
  batch.reward = Floats({0.2f, 4, 0.7f});
  batch.discount = Floats({0.9f, 0.5f, 0});
  batch.next_obs = Floats({1, 2, 4, 1, 100, 50}).view({3, 2});
  batch.weights = Floats({1, 0.5f, 2});
  return batch;
}

void CheckClose(const torch::Tensor& actual, const std::vector<float>& expected) {
  REQUIRE(actual.numel() == static_cast<int64_t>(expected.size()));
  const torch::Tensor flat = actual.reshape({-1});
  for (size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(flat[i].item<float>() == doctest::Approx(expected[i]).epsilon(1e-5));
  }
}

TEST_CASE("DoubleDqnLoss evaluates the online argmax with the target network") {
  auto online = Online();
  auto target = Target();
  const DqnLoss loss = DoubleDqnLoss(online, target, HandBatch(), /*huber_delta=*/1.0,
                                     /*normaliser=*/4.0);
  CheckClose(loss.td, {0.6f, 5.5f, -0.3f});
  // Huber with delta 1: 0.5*0.6^2 = 0.18, 5.5 - 0.5 = 5, 0.5*0.3^2 = 0.045;
  // weighted (1, 0.5, 2) and summed: 0.18 + 2.5 + 0.09 = 2.77; over 4.
  CHECK(loss.loss.dim() == 0);
  CHECK(loss.loss.item<float>() == doctest::Approx(0.6925).epsilon(1e-5));
}

TEST_CASE("DqnMaxLoss bootstraps from the target network's own maximum") {
  auto online = Online();
  auto target = Target();
  const DqnLoss loss = DqnMaxLoss(online, target, HandBatch(), /*huber_delta=*/1.0,
                                  /*normaliser=*/1.0);
  // 0: y = 0.2 + 0.9*6 = 5.6, td = 5.1;  1: y = 4 + 0.5*4 = 6, td = 6;  2: td = -0.3.
  CheckClose(loss.td, {5.1f, 6.0f, -0.3f});
  // Huber: 4.6 + 0.5*5.5 + 2*0.045 = 4.6 + 2.75 + 0.09.
  CHECK(loss.loss.item<float>() == doctest::Approx(7.44).epsilon(1e-5));
}

TEST_CASE("DoubleDqnLoss is quadratic below the Huber delta and linear above") {
  auto online = Online();
  auto target = Target();
  DqnBatch batch = HandBatch();
  batch.weights = Floats({1, 1, 1});
  auto loss_of = [&](int64_t row, double delta) {
    DqnBatch one;
    one.obs = batch.obs.narrow(0, row, 1);
    one.action = batch.action.narrow(0, row, 1);
    one.reward = batch.reward.narrow(0, row, 1);
    one.discount = batch.discount.narrow(0, row, 1);
    one.next_obs = batch.next_obs.narrow(0, row, 1);
    one.weights = batch.weights.narrow(0, row, 1);
    return DoubleDqnLoss(online, target, one, delta, /*normaliser=*/1.0).loss.item<double>();
  };
  CHECK(loss_of(0, 1.0) == doctest::Approx(0.5 * 0.6 * 0.6).epsilon(1e-5));     // |td| < delta.
  CHECK(loss_of(1, 1.0) == doctest::Approx(1.0 * (5.5 - 0.5)).epsilon(1e-5));   // |td| > delta.
  CHECK(loss_of(1, 2.0) == doctest::Approx(2.0 * (5.5 - 1.0)).epsilon(1e-5));   // Slope delta.
  CHECK(loss_of(1, 10.0) == doctest::Approx(0.5 * 5.5 * 5.5).epsilon(1e-5));    // Now below.
  CHECK(loss_of(2, 0.1) == doctest::Approx(0.1 * (0.3 - 0.05)).epsilon(1e-5));  // Negative td.
}

TEST_CASE("DoubleDqnLoss scales each sample's loss by its importance weight") {
  auto online = Online();
  auto target = Target();
  DqnBatch batch = HandBatch();
  const DqnLoss base = DoubleDqnLoss(online, target, batch, 1.0, 4.0);

  batch.weights = Floats({2, 1, 4});
  const DqnLoss doubled = DoubleDqnLoss(online, target, batch, 1.0, 4.0);
  CHECK(doubled.loss.item<float>() == doctest::Approx(2 * base.loss.item<float>()));
  CHECK(torch::equal(doubled.td, base.td));  // Weights scale the loss, never the TD error.

  batch.weights = Floats({0, 1, 0});
  CHECK(DoubleDqnLoss(online, target, batch, 1.0, 4.0).loss.item<float>() ==
        doctest::Approx(5.0 / 4).epsilon(1e-5));

  batch.weights = Floats({1, 0.5f, 2});
  CHECK(DoubleDqnLoss(online, target, batch, 1.0, 1.0).loss.item<float>() ==
        doctest::Approx(2.77).epsilon(1e-5));
}

TEST_CASE("DoubleDqnLoss with discount 0 ignores the next state") {
  auto online = Online();
  auto target = Target();
  DqnBatch batch = HandBatch();
  const DqnLoss before = DoubleDqnLoss(online, target, batch, 1.0, 4.0);
  batch.next_obs = Floats({1, 2, 4, 1, -7, 9}).view({3, 2});
  const DqnLoss after = DoubleDqnLoss(online, target, batch, 1.0, 4.0);
  CHECK(torch::equal(after.td, before.td));
  CHECK(after.loss.item<float>() == before.loss.item<float>());
  CHECK(after.td[2].item<float>() == doctest::Approx(-0.3f));
}

TEST_CASE("DoubleDqnLoss sends gradients into the online network only") {
  auto online = Online();
  auto target = Target();
  const DqnLoss loss = DoubleDqnLoss(online, target, HandBatch(), 1.0, 4.0);
  CHECK(loss.loss.requires_grad());
  CHECK_FALSE(loss.td.requires_grad());
  loss.loss.backward();

  for (const auto& p : target->parameters()) CHECK_FALSE(p.grad().defined());
  // dL/dQ(s_i, a_i) = -w_i * clamp(td_i, -1, 1) / 4: -0.15 (row 0, action 0),
  // -0.125 and +0.15 (rows 1 and 2, action 1). Nothing comes through y.
  CheckClose(online->head()->bias.grad(), {-0.15f, 0.025f});
  // Times each row's features relu(s): (0.5, 1.5), (3, 0), (1, 1).
  CheckClose(online->head()->weight.grad(), {-0.075f, -0.225f, -0.225f, 0.15f});
}

}  // namespace
}  // namespace ferry::learner
