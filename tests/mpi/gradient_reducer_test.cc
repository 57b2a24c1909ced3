// The learner's gradient reduction: every algorithm, with and without overlap, in one bucket or
// many, gives every rank the sum of all ranks' gradients and control slots; one rank copies
// nothing.
#include <torch/torch.h>
// After LibTorch: the glog it includes defines CHECK too, and doctest's must win.
#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "learner/gradient_reducer.h"
#include "models/q_network.h"
#include "tests/mpi/world.h"

namespace ferry::learner {
namespace {

using Algorithm = linalg::Allreducer::Algorithm;

using testing::Rank;
using testing::Ranks;

models::QNetwork Network() {
  torch::manual_seed(7);  // The same parameters on every rank.
  return models::QNetwork(/*obs_dim=*/6, /*num_actions=*/3, std::vector<int>{32, 32});
}

// Rank r's loss: different data and scale per rank.
torch::Tensor Loss(models::QNetwork& net, int rank) {
  torch::manual_seed(100 + rank);
  const torch::Tensor x = torch::randn({16, 6});
  return net->forward(x).pow(2).sum() * static_cast<double>(rank + 1);
}

// Every rank's gradients, summed here in double, in parameter order; `skip` has none.
std::vector<double> SerialSum(int skip) {
  models::QNetwork net = Network();
  std::vector<double> sum(static_cast<size_t>(models::ParameterCount(*net)), 0.0);
  for (int r = 0; r < Ranks(); ++r) {
    if (r == skip) continue;
    for (auto& p : net->parameters()) p.mutable_grad() = torch::Tensor();
    Loss(net, r).backward();
    size_t k = 0;
    for (auto& p : net->parameters()) {
      const torch::Tensor g = p.grad().to(torch::kFloat64).contiguous().view({-1});
      for (int64_t i = 0; i < g.numel(); ++i) sum[k + i] += g[i].item<double>();
      k += static_cast<size_t>(g.numel());
    }
  }
  return sum;
}

bool SameOnEveryRank(const float* data, size_t count) {
  std::vector<float> first(data, data + count);
  MPI_Bcast(first.data(), static_cast<int>(count), MPI_FLOAT, 0, MPI_COMM_WORLD);
  int same = std::memcmp(first.data(), data, count * sizeof(float)) == 0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return same == 1;
}

// The reduced gradients, in parameter order: the reducer's buffer, or on one rank the
// parameters' own grads (zeros where no backward ran).
std::vector<float> Summed(GradientReducer& reducer, models::QNetwork& net) {
  const size_t floats = static_cast<size_t>(models::ParameterCount(*net));
  if (reducer.sums_gradients()) {
    return std::vector<float>(reducer.gradients(), reducer.gradients() + floats);
  }
  std::vector<float> out;
  for (auto& p : net->parameters()) {
    if (!p.grad().defined()) {
      out.insert(out.end(), static_cast<size_t>(p.numel()), 0.f);
      continue;
    }
    const torch::Tensor g = p.grad().contiguous().view({-1});
    out.insert(out.end(), g.data_ptr<float>(), g.data_ptr<float>() + g.numel());
  }
  return out;
}

// One reduction step with `options`; rank `without_data` contributes no gradients.
std::vector<float> ReduceOnce(const GradientReducerOptions& options, int without_data,
                              size_t* buckets) {
  models::QNetwork net = Network();
  GradientReducer reducer(net->parameters(), MPI_COMM_WORLD, options);
  *buckets = reducer.num_buckets();
  const bool have_data = Rank() != without_data;
  if (have_data) {
    reducer.BeginBackward();
    Loss(net, Rank()).backward();
  }
  reducer.control()[0] = static_cast<float>(Rank() + 1);
  reducer.control()[1] = have_data ? 0.f : 1.f;
  reducer.Reduce(have_data);
  CHECK(reducer.control()[0] == static_cast<float>(Ranks() * (Ranks() + 1) / 2));
  CHECK(reducer.control()[1] == (without_data < Ranks() ? 1.f : 0.f));
  return Summed(reducer, net);
}

TEST_CASE("every algorithm, overlapped or not, in one bucket or many, sums all ranks' gradients") {
  for (int without_data : {Ranks(), Ranks() - 1}) {  // Everyone has data; the last rank has none.
    CAPTURE(without_data);
    const std::vector<double> expected = SerialSum(without_data);
    std::vector<float> shared_memory_reference;
    for (Algorithm algorithm : {Algorithm::kMpi, Algorithm::kSharedMemory}) {
      for (bool overlap : {false, true}) {
        for (size_t bucket_bytes : {size_t{1} << 20, size_t{512}}) {
          CAPTURE(linalg::AlgorithmName(algorithm));
          CAPTURE(overlap);
          CAPTURE(bucket_bytes);
          GradientReducerOptions options;
          options.algorithm = algorithm;
          options.overlap = overlap;
          options.bucket_bytes = bucket_bytes;
          options.control_slots = 2;
          size_t buckets = 0;
          const std::vector<float> got = ReduceOnce(options, without_data, &buckets);
          // Back to front, 128-float buckets: {3 + 96 + 32}, {32x32}, {32 + 32x6}.
          CHECK(buckets == (bucket_bytes == 512 ? 3u : 1u));
          REQUIRE(got.size() == expected.size());
          size_t wrong = 0;
          for (size_t i = 0; i < got.size(); ++i) {
            wrong += !(std::abs(got[i] - expected[i]) <= 1e-5 * (1 + std::abs(expected[i])));
          }
          CHECK(wrong == 0);
          CHECK(SameOnEveryRank(got.data(), got.size()));
          // Shared memory sums every element in rank order however the buffer is cut.
          if (algorithm == Algorithm::kSharedMemory) {
            if (shared_memory_reference.empty()) shared_memory_reference = got;
            CHECK(std::memcmp(got.data(), shared_memory_reference.data(),
                              got.size() * sizeof(float)) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("hooks ignore a backward pass that was not announced") {
  models::QNetwork net = Network();
  GradientReducerOptions options;
  options.overlap = true;
  options.bucket_bytes = 512;
  options.control_slots = 1;
  GradientReducer reducer(net->parameters(), MPI_COMM_WORLD, options);
  Loss(net, Rank()).backward();  // Not announced: evaluation, a refit, a test.
  for (auto& p : net->parameters()) p.mutable_grad() = torch::Tensor();
  reducer.BeginBackward();
  Loss(net, Rank()).backward();
  reducer.control()[0] = 0;
  reducer.Reduce(true);
  const std::vector<double> expected = SerialSum(Ranks());
  const std::vector<float> got = Summed(reducer, net);
  size_t wrong = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    wrong += !(std::abs(got[i] - expected[i]) <= 1e-5 * (1 + std::abs(expected[i])));
  }
  CHECK(wrong == 0);
}

TEST_CASE("on one rank the reducer copies nothing: the gradients stay where backward left them") {
  models::QNetwork net = Network();
  GradientReducerOptions options;
  options.overlap = true;
  options.control_slots = 1;
  GradientReducer reducer(net->parameters(), MPI_COMM_WORLD, options);
  CHECK(reducer.sums_gradients() == (Ranks() > 1));
  if (Ranks() > 1) return;  // The sums are the test case above's.
  reducer.BeginBackward();
  Loss(net, 0).backward();
  std::vector<torch::Tensor> before;
  for (const auto& p : net->parameters()) before.push_back(p.grad().clone());
  reducer.control()[0] = 5.f;
  reducer.Reduce(true);
  CHECK(reducer.control()[0] == 5.f);
  const auto params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i) CHECK(torch::equal(params[i].grad(), before[i]));
  // Neither the hooks nor Reduce wrote a gradient into the buffer.
  const size_t floats = static_cast<size_t>(models::ParameterCount(*net));
  CHECK(std::all_of(reducer.gradients(), reducer.gradients() + floats,
                    [](float v) { return v == 0.f; }));
}

}  // namespace
}  // namespace ferry::learner
