// The LS-DQN head refit recovers a linear target from every rank's rows and
// leaves every rank with the same head.
#include <torch/torch.h>
// After LibTorch: the glog it includes defines CHECK too, and doctest's must win.
#include <doctest/doctest.h>
#include <mpi.h>

#include <vector>

#include "learner/ls_refit.h"

namespace ferry::learner {
namespace {

UpdaterOptions Options() {
  UpdaterOptions o;
  o.obs_dim = 3;
  o.num_actions = 2;
  o.hidden = {8};
  return o;
}

// Terminal transitions (discount 0), so the regression target is the reward,
// set to true_w[a] . [features, 1] for the action taken.
std::vector<DqnBatch> LinearBatches(DqnUpdater& updater, const torch::Tensor& true_w, int rank,
                                    int batches) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(1000 + rank);
  std::vector<DqnBatch> out;
  for (int i = 0; i < batches; ++i) {
    DqnBatch b;
    b.obs = torch::randn({64, 3});
    b.next_obs = torch::randn({64, 3});
    b.action = torch::randint(0, 2, {64}, torch::kInt64);
    b.discount = torch::zeros({64});
    b.weights = torch::ones({64});
    const torch::Tensor phi = torch::cat(
        {updater.online()->Features(b.obs), torch::ones({64, 1})}, 1).to(torch::kFloat64);
    b.reward = (phi * true_w.index_select(0, b.action)).sum(1).to(torch::kFloat32);
    out.push_back(b);
  }
  return out;
}

TEST_CASE("RefitHead solves for a linear head from all ranks' rows") {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  torch::manual_seed(5);  // Same network on every rank.
  DqnUpdater updater(Options(), torch::kCPU);
  torch::manual_seed(6);
  const torch::Tensor true_w = torch::randn({2, 9}, torch::kFloat64);
  // Rank 0 holds too few rows to determine the head alone when ranks > 1.
  const auto batches = LinearBatches(updater, true_w, rank, rank == 0 ? 1 : 8);

  for (const char* solver : {"cholesky", "cg"}) {
    CAPTURE(solver);
    auto report = RefitHead(updater, batches, /*lambda=*/1e-6, solver, MPI_COMM_WORLD);
    REQUIRE(report.ok());
    CHECK(report->rows == 64 * (1 + 8 * (ranks - 1)));
    auto& head = updater.online()->head();
    const torch::Tensor fitted =
        torch::cat({head->weight, head->bias.unsqueeze(1)}, 1).to(torch::kFloat64);
    // Features of an 8-unit ReLU layer can be dead for every sample; those
    // columns keep their old weight, so compare predictions instead.
    torch::NoGradGuard no_grad;
    for (const auto& b : batches) {
      const torch::Tensor q = updater.online()->forward(b.obs).gather(1, b.action.unsqueeze(1));
      CHECK(torch::allclose(q.squeeze(1), b.reward, /*rtol=*/1e-3, /*atol=*/1e-3));
    }
    // Every rank holds the same head, bit for bit.
    double sum = fitted.sum().item<double>();
    double bounds[2] = {sum, -sum};
    MPI_Allreduce(MPI_IN_PLACE, bounds, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CHECK(bounds[0] == -bounds[1]);
  }
}

}  // namespace
}  // namespace ferry::learner
