#include "learner/linalg/least_squares.h"

#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "bench/learner_bench/common.h"
#include "core/log.h"

namespace ferry::bench::learner_bench {
namespace {

constexpr int64_t kFeatureBlock = 4096;
constexpr int64_t kInputPoolRows = 16384;
constexpr int kCgMaxIterations = 1000;
constexpr double kCgTolerance = 1e-6;
// CG over the rows passes over all features twice per iteration: its time per iteration is
// measured over this many, once per case.
constexpr int kCgRowsIterations = 5;
// Refit cases too slow for Settings::rounds repeats within their budget run this many.
constexpr int kMinRefitRepeats = 3;

struct RefitCase {
  int64_t rows;
  int64_t d;
};

struct RefitTimes {
  double features = 0, gram = 0, allreduce = 0, cholesky = 0, cg_gram = 0;
  int cg_iterations = 0;
};

// One rank's data for a refit: features from the body's last layer (d -> d, ReLU) over a pool
// of 16k random inputs repeated down the rows, which costs what distinct rows cost and keeps G
// full rank, and random targets.
class RefitData {
 public:
  RefitData(int64_t rows, int64_t d, torch::Tensor& storage)
      : layer_(d, d),
        inputs_(torch::randn({kInputPoolRows, d})),
        targets_(torch::randn({rows})),
        w0_(torch::randn({d}) * 0.1) {
    const int64_t needed = rows * d;
    if (storage.numel() < needed) {
      storage = torch::empty({0});  // Freed before the larger one is touched.
      storage = torch::zeros({needed});
    }
    features_ = storage.narrow(0, 0, needed).view({rows, d});
  }

  void ComputeFeatures() {
    torch::NoGradGuard no_grad;
    const auto weight_t = layer_->weight.t();
    const int64_t rows = features_.size(0);
    for (int64_t start = 0; start < rows; start += kFeatureBlock) {
      const int64_t n = std::min(kFeatureBlock, rows - start);
      auto out = features_.narrow(0, start, n);
      const int64_t pool_start = start % kInputPoolRows;
      torch::addmm_out(out, layer_->bias, inputs_.narrow(0, pool_start, n), weight_t);
      out.relu_();
    }
  }

  const torch::Tensor& features() const { return features_; }
  const torch::Tensor& targets() const { return targets_; }
  const torch::Tensor& w0() const { return w0_; }

 private:
  torch::nn::Linear layer_;
  torch::Tensor inputs_;
  torch::Tensor targets_;
  torch::Tensor w0_;
  torch::Tensor features_;
};

// The slowest rank's seconds for `op`, started together.
double TimePhase(MPI_Comm comm, const std::function<void()>& op) {
  return SecondsPerCall(comm, 1, op).wall;
}

struct RefitRun {
  std::vector<RefitTimes> repeats;
  double cg_rows_ms_per_iteration = 0;
};

// Every repeat of a refit on the ranks of `comm`, each holding its share of `c.rows`.
RefitRun RunRefit(const RefitCase& c, int repeats, MPI_Comm comm, torch::Tensor& storage) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  const int64_t rows = c.rows / ranks + (rank < c.rows % ranks ? 1 : 0);
  RefitData data(rows, c.d, storage);
  const double lambda = 1e-4 * static_cast<double>(c.rows);
  RefitRun run;
  for (int r = 0; r < repeats; ++r) {
    RefitTimes t;
    learner::linalg::NormalEquations equations;
    t.features = TimePhase(comm, [&] { data.ComputeFeatures(); });
    t.gram = TimePhase(comm, [&] {
      equations = learner::linalg::FormNormalEquations(data.features(), data.targets());
    });
    t.allreduce =
        TimePhase(comm, [&] { learner::linalg::AllreduceNormalEquations(&equations, comm); });
    t.cholesky = TimePhase(comm, [&] {
      FERRY_CHECK(learner::linalg::SolveCholesky(equations, data.w0(), lambda).ok());
    });
    t.cg_gram = TimePhase(comm, [&] {
      auto report = learner::linalg::SolveConjugateGradient(equations, data.w0(), lambda,
                                                            kCgMaxIterations, kCgTolerance);
      FERRY_CHECK(report.ok());
      t.cg_iterations = report->cg_iterations;
    });
    if (r == 0) {
      run.cg_rows_ms_per_iteration =
          1e3 / kCgRowsIterations * TimePhase(comm, [&] {
            FERRY_CHECK(learner::linalg::SolveConjugateGradient(
                            data.features(), equations.rhs, data.w0(), lambda, comm,
                            kCgRowsIterations, /*tolerance=*/1e-30)
                            .ok());
          });
    }
    run.repeats.push_back(t);
  }
  return run;
}

double MedianOf(const std::vector<RefitTimes>& repeats, double RefitTimes::*field) {
  std::vector<double> values;
  for (const RefitTimes& t : repeats) values.push_back(t.*field);
  return Median(values);
}

void AddRefit(JsonLine& line, const std::string& prefix, const RefitRun& run) {
  const auto median_ms = [&](double RefitTimes::*field) {
    return 1e3 * MedianOf(run.repeats, field);
  };
  line.Add(prefix + "features_ms", median_ms(&RefitTimes::features))
      .Add(prefix + "gram_ms", median_ms(&RefitTimes::gram))
      .Add(prefix + "allreduce_ms", median_ms(&RefitTimes::allreduce))
      .Add(prefix + "cholesky_ms", median_ms(&RefitTimes::cholesky))
      .Add(prefix + "refit_ms", median_ms(&RefitTimes::features) + median_ms(&RefitTimes::gram) +
                                    median_ms(&RefitTimes::allreduce) +
                                    median_ms(&RefitTimes::cholesky))
      .Add(prefix + "cg_gram_ms", median_ms(&RefitTimes::cg_gram))
      .Add(prefix + "cg_iterations", run.repeats.front().cg_iterations)
      .Add(prefix + "cg_rows_ms_per_iteration", run.cg_rows_ms_per_iteration);
}

}  // namespace

void LeastSquaresBench(const Settings& s) {
  const int ranks = Ranks();
  // In order of cost, so that each case's time can be foreseen from the last one's.
  std::vector<RefitCase> cases = {{65536, 256},   {65536, 512},   {262144, 256},
                                  {65536, 1024},  {262144, 512},  {1048576, 256},
                                  {262144, 1024}, {1048576, 512}, {1048576, 1024}};
  if (s.quick) cases.resize(1);
  torch::Tensor storage = torch::empty({0});
  double seconds_per_flop = 0;  // Of features + Gram at R = 1, from the last case run.
  for (const RefitCase& c : cases) {
    // Features (the d -> d layer) and Gram, 2 N d^2 FLOPs each, dominate; R ranks take 1/R.
    const double flops = 4.0 * static_cast<double>(c.rows) * static_cast<double>(c.d * c.d);
    const double repeat_s = flops * seconds_per_flop * (1 + (ranks > 1 ? 1.0 / ranks : 0.0));
    int repeats = s.rounds;
    while (repeats > kMinRefitRepeats && repeats * repeat_s > s.refit_case_budget_s) --repeats;
    JsonLine line("least_squares");
    line.Add("rows", c.rows).Add("d", c.d);
    if (repeats * repeat_s > s.refit_case_budget_s) {
      line.Add("skipped",
               std::to_string(repeats) + " repeats would take about " +
                   std::to_string(static_cast<int>(repeats * repeat_s)) + " s, over the " +
                   std::to_string(static_cast<int>(s.refit_case_budget_s)) + " s budget of a case");
      Emit(line);
      continue;
    }
    RefitRun alone;
    if (Rank() == 0) alone = RunRefit(c, repeats, MPI_COMM_SELF, storage);
    SleepingBarrier();
    RefitRun together;
    if (ranks > 1) together = RunRefit(c, repeats, MPI_COMM_WORLD, storage);
    if (Rank() == 0) {
      seconds_per_flop = (MedianOf(alone.repeats, &RefitTimes::features) +
                          MedianOf(alone.repeats, &RefitTimes::gram)) /
                         flops;
      line.Add("repeats", repeats);
      AddRefit(line, "r1_", alone);
      if (ranks > 1) AddRefit(line, "r" + std::to_string(ranks) + "_", together);
      line.Print();
    }
    MPI_Bcast(&seconds_per_flop, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  }
}

}  // namespace ferry::bench::learner_bench
