// The fused gradient allreduce equals the serial sum on every rank.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <random>
#include <vector>

#include "learner/linalg/allreduce.h"

namespace ferry::learner::linalg {
namespace {

// Rank r's contribution to element i: reproducible on every rank.
float Value(int rank, size_t i) {
  return static_cast<float>(std::sin(0.001 * static_cast<double>(i) + rank) * (rank + 1));
}

TEST_CASE("AllreduceSum of floats equals the serial sum for 1 to 10M elements") {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  for (size_t n : {size_t{1}, size_t{7}, size_t{1000}, size_t{65537}, size_t{1} << 20,
                   size_t{10'000'000}}) {
    CAPTURE(n);
    std::vector<float> data(n);
    for (size_t i = 0; i < n; ++i) data[i] = Value(rank, i);
    AllreduceSum(data.data(), n, MPI_COMM_WORLD);
    size_t mismatches = 0;
    for (size_t i = 0; i < n; ++i) {
      double expected = 0;
      for (int r = 0; r < ranks; ++r) expected += Value(r, i);
      if (std::abs(data[i] - expected) > 1e-5 * (1 + std::abs(expected))) ++mismatches;
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("AllreduceSum of doubles is exact for integers") {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::vector<double> data(1000, static_cast<double>(rank + 1));
  AllreduceSum(data.data(), data.size(), MPI_COMM_WORLD);
  const double expected = ranks * (ranks + 1) / 2.0;
  for (double v : data) REQUIRE(v == expected);
}

}  // namespace
}  // namespace ferry::learner::linalg
