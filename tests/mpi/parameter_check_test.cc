// The learner's periodic parameter check: ranks holding the same bits agree, and one rank
// whose parameters differ in a single bit, or by two swapped values (which a sum would not
// see), stops every rank with an error.
#include <torch/torch.h>
// After LibTorch: the glog it includes defines CHECK too, and doctest's must win.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cstring>
#include <string>

#include "learner/apex_dqn.h"
#include "tests/mpi/world.h"

namespace ferry::learner {
namespace {

UpdaterOptions Options() {
  UpdaterOptions o;
  o.obs_dim = 4;
  o.num_actions = 2;
  o.hidden = {16};
  return o;
}

// The first weight matrix of the online network, as floats this test may change.
float* FirstWeights(DqnUpdater& updater) {
  return updater.online()->parameters().front().data_ptr<float>();
}

void CheckEveryRankRefuses(DqnUpdater& updater) {
  const Status status = CheckParametersAgree(updater, MPI_COMM_WORLD);
  REQUIRE_FALSE(status.ok());
  CHECK(status.message().find("learner ranks hold different parameters after 0 updates") !=
        std::string::npos);
}

TEST_CASE("parameter checks pass on identical ranks and stop all of them on one bit or a swap") {
  torch::manual_seed(11);  // The same network on every rank.
  DqnUpdater updater(Options(), torch::kCPU);
  REQUIRE(CheckParametersAgree(updater, MPI_COMM_WORLD).ok());
  if (testing::Ranks() < 2) return;
  const bool changed = testing::Rank() == testing::Ranks() - 1;
  float* w = FirstWeights(updater);

  const float original = w[0];
  if (changed) {
    uint32_t bits = 0;
    std::memcpy(&bits, &w[0], sizeof(bits));
    bits ^= 1u;  // The lowest mantissa bit.
    std::memcpy(&w[0], &bits, sizeof(bits));
  }
  CheckEveryRankRefuses(updater);
  w[0] = original;
  REQUIRE(CheckParametersAgree(updater, MPI_COMM_WORLD).ok());

  REQUIRE(w[0] != w[1]);
  if (changed) std::swap(w[0], w[1]);
  CheckEveryRankRefuses(updater);
}

}  // namespace
}  // namespace ferry::learner
