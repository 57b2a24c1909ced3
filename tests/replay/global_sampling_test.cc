#include "replay/global_sampling.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace ferry::replay {
namespace {

int Sum(const std::vector<int>& counts) { return std::accumulate(counts.begin(), counts.end(), 0); }

TEST_CASE("SplitAcrossShards hands out exactly the requested count") {
  const std::vector<std::vector<double>> shard_masses = {
      {1.0}, {1.0, 1.0}, {0.5, 3.0, 1.5, 5.0}, {1e-9, 1.0, 1e9}, {7.0, 0.0, 0.25}};
  for (const auto& masses : shard_masses) {
    for (int count : {0, 1, 2, 7, 64, 1000}) {
      for (double u : {0.0, 0.25, 0.5, 0.999999999}) {
        const std::vector<int> counts = SplitAcrossShards(masses, count, u);
        REQUIRE(counts.size() == masses.size());
        CHECK(Sum(counts) == count);
        for (int c : counts) CHECK(c >= 0);
      }
    }
  }
}

TEST_CASE("SplitAcrossShards gives nothing to shards without mass") {
  const std::vector<std::vector<double>> shard_masses = {
      {0.0, 0.0, 2.0}, {2.0, 0.0, 0.0}, {0.0, 3.0, 0.0, 1.0, 0.0}, {1.0, 0.0, 1.0}};
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> offset(0, 1);
  for (const auto& masses : shard_masses) {
    for (int trial = 0; trial < 200; ++trial) {
      // Include both ends of [0, 1): boundaries between shards fall exactly on points there.
      const double u = trial == 0 ? 0.0 : trial == 1 ? std::nextafter(1.0, 0.0) : offset(rng);
      const std::vector<int> counts = SplitAcrossShards(masses, 1 + trial % 50, u);
      CHECK(Sum(counts) == 1 + trial % 50);
      for (size_t k = 0; k < masses.size(); ++k) {
        if (masses[k] == 0) CHECK(counts[k] == 0);
      }
    }
  }
}

TEST_CASE("SplitAcrossShards is proportional to mass on average and never off by more than one") {
  const std::vector<double> masses = {0.5, 3.0, 1.5, 5.0};
  const double total = 10.0;
  const int count = 7;
  const int trials = 20000;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> offset(0, 1);
  std::vector<double> sums(masses.size(), 0);
  for (int t = 0; t < trials; ++t) {
    const std::vector<int> counts = SplitAcrossShards(masses, count, offset(rng));
    for (size_t k = 0; k < masses.size(); ++k) {
      // Systematic sampling: each share is the floor or the ceiling of its expectation.
      const double expected = count * masses[k] / total;
      CHECK(counts[k] >= std::floor(expected));
      CHECK(counts[k] <= std::ceil(expected));
      sums[k] += counts[k];
    }
  }
  // A share's per-trial spread is at most 0.5, so the mean's is below 0.004.
  for (size_t k = 0; k < masses.size(); ++k) {
    CHECK(std::abs(sums[k] / trials - count * masses[k] / total) < 0.02);
  }
}

TEST_CASE("ImportanceWeights matches the formula worked by hand") {
  // N = 4, P = {0.1, 0.2, 0.3, 0.4}, beta = 0.5, P_min = 0.1:
  //   (N P_min)^-beta = 0.4^-0.5 = 1.5811388
  //   w = {0.4^-0.5, 0.8^-0.5, 1.2^-0.5, 1.6^-0.5} / 1.5811388
  //     = {1.5811388, 1.1180340, 0.9128709, 0.7905694} / 1.5811388
  //     = {1, 0.7071068, 0.5773503, 0.5}
  const std::vector<float> w = ImportanceWeights({0.1, 0.2, 0.3, 0.4}, /*global_size=*/4,
                                                 /*global_min_probability=*/0.1, /*beta=*/0.5);
  REQUIRE(w.size() == 4);
  CHECK(w[0] == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(w[1] == doctest::Approx(0.7071068).epsilon(1e-6));
  CHECK(w[2] == doctest::Approx(0.5773503).epsilon(1e-6));
  CHECK(w[3] == doctest::Approx(0.5).epsilon(1e-6));
  CHECK(*std::max_element(w.begin(), w.end()) == doctest::Approx(1.0).epsilon(1e-7));
}

TEST_CASE("ImportanceWeights normalises by the global minimum, not the batch's") {
  // N = 10, P_min = 0.02 (not in this batch), beta = 1:
  //   max weight (10 * 0.02)^-1 = 5;  w = {(10 * 0.05)^-1, (10 * 0.2)^-1} / 5 = {0.4, 0.1}
  const std::vector<float> w = ImportanceWeights({0.05, 0.2}, /*global_size=*/10,
                                                 /*global_min_probability=*/0.02, /*beta=*/1.0);
  REQUIRE(w.size() == 2);
  CHECK(w[0] == doctest::Approx(0.4).epsilon(1e-6));
  CHECK(w[1] == doctest::Approx(0.1).epsilon(1e-6));

  // beta = 0 switches the correction off.
  for (float weight : ImportanceWeights({0.05, 0.2}, 10, 0.02, /*beta=*/0.0)) CHECK(weight == 1.0f);
}

TEST_CASE("ImportanceWeights of a batch holding the least likely item peak at exactly 1") {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> mass(0.1, 10.0);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> masses(100);
    for (double& m : masses) m = mass(rng);
    const double total = std::accumulate(masses.begin(), masses.end(), 0.0);
    std::vector<double> probs;
    for (double m : masses) probs.push_back(m / total);
    const double min_prob = *std::min_element(probs.begin(), probs.end());
    const std::vector<float> w = ImportanceWeights(probs, 100, min_prob, /*beta=*/0.4);
    CHECK(*std::max_element(w.begin(), w.end()) == doctest::Approx(1.0).epsilon(1e-6));
    for (float weight : w) CHECK(weight <= 1.0f + 1e-6f);
  }
}

}  // namespace
}  // namespace ferry::replay
