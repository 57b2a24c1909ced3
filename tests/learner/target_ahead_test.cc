#include "learner/target_ahead.h"

#include <doctest/doctest.h>
#include <torch/torch.h>

#include <vector>

#include "learner/dqn_updater.h"
#include "tests/learner/random_batch.h"

namespace ferry::learner {
namespace {

using testing::RandomBatch;

UpdaterOptions SmallNetwork() {
  UpdaterOptions o;
  o.obs_dim = 5;
  o.num_actions = 3;
  o.hidden = {32, 16};
  o.target_update_period = 4;
  return o;
}

std::vector<torch::Tensor> Grads(DqnUpdater& updater) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : updater.online()->parameters()) grads.push_back(p.grad().clone());
  return grads;
}

bool Equal(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return a.size() == b.size();
}

TEST_CASE("target values computed ahead are the target network's bits on next_obs") {
  REQUIRE(TargetAhead::Available());
  torch::manual_seed(1);
  models::QNetwork target(5, 3, std::vector<int>{32, 16});
  TargetAhead ahead(*target, /*version=*/7);
  DqnBatch b = RandomBatch(24, 5, 3, 2);
  ahead.Fill(&b);
  CHECK(b.target_version == 7);
  torch::NoGradGuard no_grad;
  CHECK(torch::equal(b.target_next_q, target->forward(b.next_obs)));

  // A published copy is used from the next batch on, with its version.
  for (auto& p : target->parameters()) p.add_(0.5);
  DqnBatch before = RandomBatch(24, 5, 3, 2);
  ahead.Fill(&before);
  CHECK(before.target_version == 7);
  CHECK_FALSE(torch::equal(before.target_next_q, target->forward(before.next_obs)));
  ahead.Publish(*target, 8);
  DqnBatch after = RandomBatch(24, 5, 3, 2);
  ahead.Fill(&after);
  CHECK(after.target_version == 8);
  CHECK(torch::equal(after.target_next_q, target->forward(after.next_obs)));

  // The version already published is nothing new: the update thread publishes after every
  // update, and only a copy of the target network changes what Fill uses.
  for (auto& p : target->parameters()) p.add_(0.5);
  ahead.Publish(*target, 8);
  DqnBatch same = RandomBatch(24, 5, 3, 2);
  ahead.Fill(&same);
  CHECK(torch::equal(same.target_next_q, after.target_next_q));
}

TEST_CASE("an update with target values computed ahead is the same update, to the bit") {
  for (const bool double_dqn : {true, false}) {
    CAPTURE(double_dqn);
    UpdaterOptions o = SmallNetwork();
    o.double_dqn = double_dqn;
    torch::manual_seed(3);
    DqnUpdater updater(o, torch::kCPU);
    for (int step = 0; step < 6; ++step) {  // Past a target copy (every 4 updates).
      DqnBatch b = RandomBatch(32, 5, 3, 10 + step);
      const DqnLoss plain = updater.ComputeGradients(b, 32);
      const std::vector<torch::Tensor> plain_grads = Grads(updater);
      TargetAhead ahead(*updater.target(), updater.target_version());
      ahead.Fill(&b);
      const DqnLoss filled = updater.ComputeGradients(b, 32);
      CHECK(torch::equal(filled.td, plain.td));
      CHECK(filled.loss.item<float>() == plain.loss.item<float>());
      CHECK(Equal(Grads(updater), plain_grads));
      updater.ApplyGradients();
    }
  }
}

TEST_CASE("target values of another target network are not used") {
  torch::manual_seed(5);
  DqnUpdater updater(SmallNetwork(), torch::kCPU);
  DqnBatch b = RandomBatch(16, 5, 3, 6);
  const DqnLoss plain = updater.ComputeGradients(b, 16);
  b.target_next_q = torch::full({16, 3}, 1000.f);  // Nothing a target network here computes.
  b.target_version = updater.target_version() + 1;
  CHECK(torch::equal(updater.ComputeGradients(b, 16).td, plain.td));
  // Of this target network they are taken as they are: the check above could not fail otherwise.
  b.target_version = updater.target_version();
  CHECK_FALSE(torch::equal(updater.ComputeGradients(b, 16).td, plain.td));
  // A tensor of the wrong shape is an error that says what it got.
  b.target_next_q = torch::zeros({16, 2});
  try {
    updater.ComputeGradients(b, 16);
    FAIL("no error");
  } catch (const c10::Error& e) {
    CHECK(std::string(e.what_without_backtrace())
              .find("target values computed ahead of shape [16, 2] for a batch of 16 rows and 3 "
                    "actions") != std::string::npos);
  }
}

}  // namespace
}  // namespace ferry::learner
