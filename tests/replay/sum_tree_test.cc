#include "replay/sum_tree.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace ferry::replay {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Reference answer: the first i whose inclusive prefix sum exceeds `prefix`,
// i.e. sum[0..i) <= prefix < sum[0..i].
int64_t ScanFind(const std::vector<double>& inclusive_sums, double prefix) {
  return std::upper_bound(inclusive_sums.begin(), inclusive_sums.end(), prefix) -
         inclusive_sums.begin();
}

TEST_CASE("SumTree Find matches a prefix-sum scan exactly for integer values") {
  // Integer values and half-integer prefixes keep every sum and difference exact, so the tree
  // must agree with the scan at every boundary, zeros included.
  std::mt19937_64 rng(7);
  for (int64_t capacity : {1, 2, 7, 8, 9, 63, 64, 65, 511, 513, 1000, 4097, 1 << 20}) {
    CAPTURE(capacity);
    SumTree tree(capacity);
    std::vector<double> values(capacity);
    std::uniform_int_distribution<int> value_dist(0, 100);
    for (int64_t i = 0; i < capacity; ++i) {
      values[i] = value_dist(rng) < 30 ? 0.0 : value_dist(rng);
      tree.Set(i, values[i]);
    }
    values[capacity - 1] = 5.0;  // At least one non-zero value.
    tree.Set(capacity - 1, 5.0);
    std::vector<double> sums(capacity);
    double running = 0.0;
    for (int64_t i = 0; i < capacity; ++i) sums[i] = running += values[i];
    REQUIRE(tree.Total() == running);

    std::uniform_int_distribution<int64_t> prefix_dist(0, static_cast<int64_t>(running) - 1);
    for (int q = 0; q < 2000; ++q) {
      const double integer_prefix = static_cast<double>(prefix_dist(rng));
      const double half_prefix = integer_prefix + 0.5;
      REQUIRE(tree.Find(integer_prefix) == ScanFind(sums, integer_prefix));
      REQUIRE(tree.Find(half_prefix) == ScanFind(sums, half_prefix));
    }
  }
}

TEST_CASE("SumTree Find lands inside the prefix interval for real values") {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int64_t capacity : {3, 100, 4096, 100003}) {
    CAPTURE(capacity);
    SumTree tree(capacity);
    std::vector<double> values(capacity);
    for (int64_t i = 0; i < capacity; ++i) {
      values[i] = unit(rng) < 0.2 ? 0.0 : std::exp(10.0 * unit(rng) - 5.0);
      tree.Set(i, values[i]);
    }
    std::vector<double> sums(capacity);
    long double running = 0.0L;
    for (int64_t i = 0; i < capacity; ++i) sums[i] = static_cast<double>(running += values[i]);
    const double total = tree.Total();
    REQUIRE(total == doctest::Approx(static_cast<double>(running)).epsilon(1e-12));
    const double tolerance = 1e-10 * total;
    for (int q = 0; q < 5000; ++q) {
      const double prefix = unit(rng) * total;
      const int64_t index = tree.Find(prefix);
      REQUIRE(index >= 0);
      REQUIRE(index < capacity);
      REQUIRE(values[index] > 0.0);
      const double before = index > 0 ? sums[index - 1] : 0.0;
      REQUIRE(before - tolerance <= prefix);
      REQUIRE(prefix < sums[index] + tolerance);
    }
  }
}

TEST_CASE("SumTree Find clamps out-of-range prefixes to non-zero items") {
  SumTree tree(20);
  tree.Set(3, 1.5);
  tree.Set(12, 2.0);
  tree.Set(17, 0.25);
  CHECK(tree.Find(-1.0) == 3);
  CHECK(tree.Find(std::nan("")) == 3);
  CHECK(tree.Find(tree.Total()) == 17);
  CHECK(tree.Find(1e30) == 17);
  CHECK(tree.Find(std::nextafter(tree.Total(), 0.0)) == 17);

  SumTree empty(20);
  CHECK(empty.Total() == 0.0);
  CHECK(empty.Find(0.5) == 0);
}

TEST_CASE("SumTree FindBatch agrees with Find") {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  SumTree tree(10000);
  for (int64_t i = 0; i < tree.capacity(); ++i) tree.Set(i, unit(rng));
  std::vector<double> prefixes(517);
  for (double& p : prefixes) p = unit(rng) * tree.Total();
  std::vector<int64_t> batch(prefixes.size());
  tree.FindBatch(prefixes.data(), batch.data(), static_cast<int>(prefixes.size()));
  for (size_t i = 0; i < prefixes.size(); ++i) REQUIRE(batch[i] == tree.Find(prefixes[i]));
}

TEST_CASE("SetBatch matches Set applied in order, duplicate indices included") {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  constexpr int64_t kCapacity = 5000;
  SumTree batched_sum(kCapacity), single_sum(kCapacity);
  MinTree batched_min(kCapacity), single_min(kCapacity);
  std::uniform_int_distribution<int64_t> index_dist(0, 199);  // Many repeats per batch.
  for (int round = 0; round < 20; ++round) {
    std::vector<int64_t> indices(300);
    std::vector<double> values(indices.size());
    for (size_t j = 0; j < indices.size(); ++j) {
      indices[j] = index_dist(rng) * 25;
      values[j] = unit(rng);
      single_sum.Set(indices[j], values[j]);
      single_min.Set(indices[j], values[j]);
    }
    const int n = static_cast<int>(indices.size());
    batched_sum.SetBatch(indices.data(), values.data(), n);
    batched_min.SetBatch(indices.data(), values.data(), n);
    REQUIRE(batched_sum.Total() == single_sum.Total());
    REQUIRE(batched_min.Min() == single_min.Min());
    for (int64_t i = 0; i < kCapacity; ++i) {
      REQUIRE(batched_sum.Get(i) == single_sum.Get(i));
      REQUIRE(batched_min.Get(i) == single_min.Get(i));
    }
  }
}

TEST_CASE("SumTree Total stays exact after millions of updates") {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  constexpr int64_t kCapacity = 1000;
  SumTree tree(kCapacity);
  std::vector<double> values(kCapacity, 0.0);
  std::uniform_int_distribution<int64_t> index_dist(0, kCapacity - 1);
  for (int step = 0; step < 2'000'000; ++step) {
    const int64_t i = index_dist(rng);
    values[i] = unit(rng) * 1e3;
    tree.Set(i, values[i]);
  }
  long double exact = 0.0L;
  for (double v : values) exact += v;
  CHECK(tree.Total() == doctest::Approx(static_cast<double>(exact)).epsilon(1e-14));
  for (int64_t i = 0; i < kCapacity; ++i) CHECK(tree.Get(i) == values[i]);

  // Incremental (delta) updates would leave rounding residue here.
  for (int64_t i = 0; i < kCapacity; ++i) tree.Set(i, 0.0);
  CHECK(tree.Total() == 0.0);
}

TEST_CASE("MinTree Min matches a scan under sets and clears") {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int64_t capacity : {1, 9, 64, 1000}) {
    CAPTURE(capacity);
    MinTree tree(capacity);
    CHECK(tree.Min() == kInf);
    std::vector<double> values(capacity, kInf);
    std::uniform_int_distribution<int64_t> index_dist(0, capacity - 1);
    for (int step = 0; step < 20000; ++step) {
      const int64_t i = index_dist(rng);
      values[i] = unit(rng) < 0.3 ? kInf : unit(rng);
      tree.Set(i, values[i]);
      REQUIRE(tree.Get(i) == values[i]);
      REQUIRE(tree.Min() == *std::min_element(values.begin(), values.end()));
    }
    for (int64_t i = 0; i < capacity; ++i) tree.Set(i, kInf);
    CHECK(tree.Min() == kInf);
  }
}

}  // namespace
}  // namespace ferry::replay
