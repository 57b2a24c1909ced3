// The distributed least-squares refit equals a serial solve of the pooled rows, its solvers
// agree, and singular, ill-conditioned and non-finite inputs are handled on every rank.
#include "learner/linalg/least_squares.h"

#include <ATen/CPUGeneratorImpl.h>
#include <doctest/doctest.h>
#include <mpi.h>
#include <torch/linalg.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tests/mpi/world.h"

namespace ferry::learner::linalg {
namespace {

using testing::Rank;
using testing::Ranks;

struct Rows {
  torch::Tensor phi;  // [n, d] float32.
  torch::Tensor y;    // [n] float32.
};

// Makes the features degenerate in a chosen way before the targets are drawn.
using FeatureEdit = std::function<void(torch::Tensor& phi)>;

// Rank r's rows, reproducible on every rank; rank 1 has none, as a rank may.
Rows RowsOf(int rank, int64_t d, uint64_t seed, const FeatureEdit& edit = nullptr) {
  const int64_t n = rank == 1 ? 0 : 150 + 37 * rank;
  auto generator = at::detail::createCPUGenerator(seed * 1000 + static_cast<uint64_t>(rank));
  auto w_true = torch::randn({d}, at::detail::createCPUGenerator(seed), torch::kFloat);
  auto phi = torch::randn({n, d}, generator, torch::kFloat) + 0.5;
  if (edit) edit(phi);
  auto y = phi.mv(w_true) + 0.1 * torch::randn({n}, generator, torch::kFloat);
  return {phi, y};
}

Rows PooledRows(int64_t d, uint64_t seed, const FeatureEdit& edit = nullptr) {
  std::vector<torch::Tensor> phis, ys;
  for (int r = 0; r < Ranks(); ++r) {
    Rows rows = RowsOf(r, d, seed, edit);
    phis.push_back(rows.phi);
    ys.push_back(rows.y);
  }
  return {torch::cat(phis), torch::cat(ys)};
}

torch::Tensor HeadWeights(int64_t d) {
  return torch::randn({d}, at::detail::createCPUGenerator(77), torch::kFloat);
}

// Independent reference in float64: least squares on the rows stacked over sqrt(lambda) I.
torch::Tensor ReferenceSolve(const Rows& pooled, const torch::Tensor& w0, double lambda) {
  const int64_t d = pooled.phi.size(1);
  auto a = torch::cat(
      {pooled.phi.to(torch::kDouble), std::sqrt(lambda) * torch::eye(d, torch::kDouble)});
  auto b = torch::cat({pooled.y.to(torch::kDouble), std::sqrt(lambda) * w0.to(torch::kDouble)});
  return std::get<0>(torch::linalg::lstsq(a, b.unsqueeze(1), c10::nullopt, "gelsd")).squeeze(1);
}

double RelativeError(const torch::Tensor& actual, const torch::Tensor& expected) {
  return ((actual.to(torch::kDouble) - expected.to(torch::kDouble)).norm() /
          expected.to(torch::kDouble).norm())
      .item<double>();
}

double FitResidual(const Rows& pooled, const torch::Tensor& w) {
  return (pooled.phi.to(torch::kDouble).mv(w.to(torch::kDouble)) - pooled.y.to(torch::kDouble))
      .norm()
      .item<double>();
}

NormalEquations ReducedEquations(const Rows& local) {
  NormalEquations equations = FormNormalEquations(local.phi, local.y);
  AllreduceNormalEquations(&equations, MPI_COMM_WORLD);
  return equations;
}

TEST_CASE("the distributed Cholesky refit equals a float64 solve of the pooled rows") {
  for (int64_t d : {8, 64}) {
    for (double lambda : {0.0, 0.5}) {
      CAPTURE(d);
      CAPTURE(lambda);
      const Rows pooled = PooledRows(d, /*seed=*/1);
      const auto w0 = HeadWeights(d);
      const NormalEquations equations = ReducedEquations(RowsOf(Rank(), d, /*seed=*/1));
      CHECK(equations.rows == pooled.phi.size(0));

      auto report = SolveCholesky(equations, w0, lambda);
      REQUIRE(report.ok());
      CHECK((report->w.scalar_type() == torch::kFloat));
      CHECK(RelativeError(report->w, ReferenceSolve(pooled, w0, lambda)) < 1e-4);
      CHECK_FALSE(report->regularised_more);
      CHECK(report->lambda_used == lambda);
      CHECK(report->note.empty());
      CHECK(report->residual_norm < 1e-10);
      CHECK(report->condition_estimate >= 1);
      CHECK(report->condition_estimate < 1e3);
    }
  }
}

TEST_CASE("conjugate gradient agrees with Cholesky, over the rows and over the reduced Gram") {
  for (int64_t d : {8, 64}) {
    CAPTURE(d);
    const double lambda = 0.25;
    const Rows local = RowsOf(Rank(), d, /*seed=*/2);
    const auto w0 = HeadWeights(d);
    const NormalEquations equations = ReducedEquations(local);
    auto cholesky = SolveCholesky(equations, w0, lambda);
    REQUIRE(cholesky.ok());

    auto over_rows = SolveConjugateGradient(local.phi, equations.rhs, w0, lambda, MPI_COMM_WORLD,
                                            /*max_iterations=*/200, /*tolerance=*/1e-6);
    REQUIRE(over_rows.ok());
    CHECK(RelativeError(over_rows->w, cholesky->w) < 1e-4);
    CHECK(over_rows->cg_iterations >= 1);
    CHECK(over_rows->residual_norm < 1e-6);

    auto over_gram = SolveConjugateGradient(equations, w0, lambda, /*max_iterations=*/200,
                                            /*tolerance=*/1e-10);
    REQUIRE(over_gram.ok());
    CHECK(RelativeError(over_gram->w, cholesky->w) < 1e-6);
    CHECK(over_gram->residual_norm < 1e-10);
    CHECK(over_gram->note.empty());
    // The reduced operators are the same on every rank, so every rank stops at the same step.
    int iterations[2] = {over_rows->cg_iterations, -over_rows->cg_iterations};
    MPI_Allreduce(MPI_IN_PLACE, iterations, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(iterations[0] == -iterations[1]);
    // Lanczos sees the unscaled spectrum, which the rows' mean of 0.5 spreads.
    CHECK(over_gram->condition_estimate > 1);
    CHECK(std::isfinite(over_gram->condition_estimate));
  }
}

TEST_CASE("a singular Gram matrix at lambda = 0 is regularised towards w0") {
  const int64_t d = 8;
  // Feature 5 is dead (zero on every row) and feature 7 duplicates feature 3.
  const FeatureEdit degenerate = [](torch::Tensor& phi) {
    phi.select(1, 5).zero_();
    phi.select(1, 7).copy_(phi.select(1, 3));
  };
  const Rows pooled = PooledRows(d, /*seed=*/3, degenerate);
  const auto w0 = HeadWeights(d);
  const NormalEquations equations = ReducedEquations(RowsOf(Rank(), d, /*seed=*/3, degenerate));

  auto report = SolveCholesky(equations, w0, /*lambda=*/0.0);
  REQUIRE(report.ok());
  const auto& w = report->w;
  CHECK(torch::isfinite(w).all().item<bool>());
  CHECK(report->regularised_more);
  CHECK(report->lambda_used > 0);
  CHECK_FALSE(report->note.empty());
  // The fit is as good as the best one, and the directions the data leaves open keep w0's part.
  const double best = FitResidual(pooled, ReferenceSolve(pooled, w0, 0.0));
  CHECK(FitResidual(pooled, w) < best * (1 + 1e-4));
  CHECK(w[5].item<double>() == doctest::Approx(w0[5].item<double>()).epsilon(1e-6));
  CHECK((w[3] - w[7]).item<double>() ==
        doctest::Approx((w0[3] - w0[7]).item<double>()).epsilon(1e-3));

  // CG keeps w0's component in the null space without any extra lambda.
  auto cg = SolveConjugateGradient(equations, w0, /*lambda=*/0.0, /*max_iterations=*/100,
                                   /*tolerance=*/1e-10);
  REQUIRE(cg.ok());
  CHECK(torch::isfinite(cg->w).all().item<bool>());
  CHECK(FitResidual(pooled, cg->w) < best * (1 + 1e-4));
  CHECK(cg->w[5].item<double>() == w0[5].item<double>());
}

TEST_CASE("nearly equal feature columns: solved to the documented accuracy, or regularised") {
  const int64_t d = 8;
  const auto w0 = HeadWeights(d);
  for (double gap : {1e-2, 1e-5}) {
    CAPTURE(gap);
    const FeatureEdit near_duplicate = [gap](torch::Tensor& phi) {
      phi.select(1, 7).copy_(phi.select(1, 3) + gap * torch::sin(phi.select(1, 0) * 10));
    };
    const Rows pooled = PooledRows(d, /*seed=*/4, near_duplicate);
    const NormalEquations equations =
        ReducedEquations(RowsOf(Rank(), d, /*seed=*/4, near_duplicate));

    auto report = SolveCholesky(equations, w0, /*lambda=*/0.0);
    REQUIRE(report.ok());
    CHECK(torch::isfinite(report->w).all().item<bool>());
    CHECK(report->condition_estimate <= kMaxConditionNumber);
    // G is accurate to about float32 precision: w is good to about 1e-7 x condition.
    const auto reference = ReferenceSolve(pooled, w0, report->lambda_used);
    CHECK(RelativeError(report->w, reference) < 1e-7 * report->condition_estimate);
    const double best_fit = FitResidual(pooled, ReferenceSolve(pooled, w0, 0.0));
    if (gap == 1e-2) {
      CHECK_FALSE(report->regularised_more);
      CHECK(FitResidual(pooled, report->w) < best_fit * (1 + 1e-6));
    } else {
      // The exact solution puts weights of about 1e3 on the near-duplicates to fit noise
      // through their 1e-5 difference; the regularised one stays near w0 and fits about as well.
      CHECK(report->regularised_more);
      CHECK((report->w - w0).norm().item<double>() < 10 * w0.norm().item<double>());
      CHECK(FitResidual(pooled, report->w) < best_fit * (1 + 1e-2));
    }
  }
}

TEST_CASE("as lambda grows the refit stays at w0") {
  const int64_t d = 16;
  const Rows local = RowsOf(Rank(), d, /*seed=*/5);
  const auto w0 = HeadWeights(d);
  const NormalEquations equations = ReducedEquations(local);
  auto cholesky = SolveCholesky(equations, w0, /*lambda=*/1e12);
  REQUIRE(cholesky.ok());
  CHECK(RelativeError(cholesky->w, w0) < 1e-6);
  CHECK(cholesky->condition_estimate < 1.01);
  auto cg = SolveConjugateGradient(local.phi, equations.rhs, w0, /*lambda=*/1e12, MPI_COMM_WORLD,
                                   /*max_iterations=*/50, /*tolerance=*/1e-8);
  REQUIRE(cg.ok());
  CHECK(RelativeError(cg->w, w0) < 1e-6);
}

TEST_CASE("features and head weights that require grad, as the network's do, are accepted") {
  const int64_t d = 8;
  Rows local = RowsOf(Rank(), d, /*seed=*/7);
  local.phi.requires_grad_(true);
  const auto w0 = HeadWeights(d).requires_grad_(true);
  const NormalEquations equations = ReducedEquations(local);
  CHECK_FALSE(equations.gram.requires_grad());
  auto cholesky = SolveCholesky(equations, w0, 0.1);
  REQUIRE(cholesky.ok());
  CHECK_FALSE(cholesky->w.requires_grad());
  auto cg = SolveConjugateGradient(local.phi, equations.rhs, w0, 0.1, MPI_COMM_WORLD, 100, 1e-6);
  REQUIRE(cg.ok());
  CHECK_FALSE(cg->w.requires_grad());
  CHECK(RelativeError(cg->w, cholesky->w) < 1e-4);
}

TEST_CASE("non-finite inputs and bad arguments are errors on every rank") {
  const int64_t d = 8;
  const auto w0 = HeadWeights(d);
  const int last = Ranks() - 1;
  Rows local = RowsOf(Rank(), d, /*seed=*/6);
  const NormalEquations clean = ReducedEquations(local);

  SUBCASE("NaN features on one rank") {
    if (Rank() == 0) local.phi[0][2] = std::numeric_limits<float>::quiet_NaN();
    auto report = SolveCholesky(ReducedEquations(local), w0, 0.1);
    REQUIRE_FALSE(report.ok());
    CHECK(report.status().code() == StatusCode::kInvalidArgument);
  }
  SUBCASE("Inf targets on one rank") {
    if (Rank() == 0) local.y[1] = std::numeric_limits<float>::infinity();
    auto report = SolveCholesky(ReducedEquations(local), w0, 0.1);
    REQUIRE_FALSE(report.ok());
    CHECK(report.status().code() == StatusCode::kInvalidArgument);
  }
  SUBCASE("Inf features on the last rank, for CG over the rows") {
    if (Rank() == last) local.phi = torch::ones({4, d}) / 0.0;
    auto report = SolveConjugateGradient(local.phi, clean.rhs, w0, 0.1, MPI_COMM_WORLD, 50, 1e-6);
    REQUIRE_FALSE(report.ok());
    CHECK(report.status().code() == StatusCode::kInvalidArgument);
    const bool names_rank =
        report.status().message().find("rank " + std::to_string(last)) != std::string::npos;
    CHECK(names_rank == (Rank() == last));
  }
  SUBCASE("negative, infinite lambda; bad CG settings; wrong w0 size") {
    CHECK_FALSE(SolveCholesky(clean, w0, -1.0).ok());
    CHECK_FALSE(SolveCholesky(clean, w0, std::numeric_limits<double>::infinity()).ok());
    CHECK_FALSE(SolveCholesky(clean, torch::zeros({d + 1}), 0.1).ok());
    CHECK_FALSE(SolveConjugateGradient(clean, w0, 0.1, /*max_iterations=*/0, 1e-6).ok());
    CHECK_FALSE(SolveConjugateGradient(clean, w0, 0.1, 10, /*tolerance=*/0.0).ok());
    CHECK_FALSE(
        SolveConjugateGradient(local.phi, clean.rhs, w0, -1.0, MPI_COMM_WORLD, 50, 1e-6).ok());
  }
}

}  // namespace
}  // namespace ferry::learner::linalg
