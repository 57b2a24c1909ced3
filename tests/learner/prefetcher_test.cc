#include "learner/prefetcher.h"

#include <doctest/doctest.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "core/log.h"
#include "tests/replay/shard_fixture.h"

namespace ferry::learner {
namespace {

using replay::Key;
using replay::StatsMeta;
using replay::testing::TestSchema;
using replay::testing::TwoShards;
using replay::testing::WaitForStats;

constexpr double kBeta = 0.4;

// The distinct keys `batch` drew from `shard`.
int DistinctKeys(const replay::SampledBatch& batch, uint32_t shard) {
  std::set<std::pair<uint32_t, uint32_t>> keys;
  for (size_t i = 0; i < batch.keys.size(); ++i) {
    if (batch.shards[i] == shard) keys.insert({batch.keys[i].slot, batch.keys[i].generation});
  }
  return static_cast<int>(keys.size());
}

TEST_CASE("a prefetcher deals each request into batches and its priority updates land in order") {
  zmq::context_t context;
  TwoShards shards(context);
  // Masses 300 and 100 (alpha 1, priority 1): a quarter of every request comes from B.
  shards.client_a.Insert(1, 0, 0, 300, 1.0f);
  shards.client_b.Insert(1, 0, 10000, 100, 1.0f);

  constexpr int kBatch = 32;
  constexpr int kPerRequest = 4;
  auto prefetcher = std::make_unique<Prefetcher>(context, shards.endpoints(), TestSchema(),
                                                 /*client_id=*/1, /*seed=*/3, kBatch, kPerRequest,
                                                 kBeta, /*depth=*/2, torch::kCPU,
                                                 /*ahead=*/nullptr);
  std::vector<Prefetched> batches;
  for (int b = 0; b < 8; ++b) {
    Result<Prefetched> next = prefetcher->Next(/*timeout_seconds=*/2.0);
    REQUIRE_MESSAGE(next.ok(), next.status().message());
    REQUIRE(next->sampled.count == kBatch);
    REQUIRE(next->batch.obs.sizes() == torch::IntArrayRef({kBatch, 4}));
    int from_b = 0;
    for (int j = 0; j < kBatch; ++j) {
      const bool in_b = next->sampled.shards[j] == 1;
      from_b += in_b;
      // Every element of a row holds its id: A's rows are 0..299, B's 10000..10099.
      const float id = next->batch.obs[j][0].item<float>();
      CHECK((in_b ? id >= 10000 : id < 300));
    }
    // A request of 128 rows takes exactly 32 from B, and the deal gives each batch 8.
    CHECK(from_b == kBatch / 4);
    batches.push_back(std::move(*next));
  }
  // Two updates of the first batch's keys, queued back to back: the later priority wins.
  const replay::SampledBatch& first = batches[0].sampled;
  prefetcher->UpdatePriorities(first, std::vector<float>(kBatch, 50.0f));
  prefetcher->UpdatePriorities(first, std::vector<float>(kBatch, 3.0f));
  const double expected_a = 300 + 2.0 * DistinctKeys(first, 0);
  const double expected_b = 100 + 2.0 * DistinctKeys(first, 1);
  auto settled = [](double expected) {
    return [expected](const StatsMeta& s) { return std::abs(s.mass.total_mass - expected) < 1e-6; };
  };
  CHECK(WaitForStats(shards.client_a, settled(expected_a)).mass.total_mass ==
        doctest::Approx(expected_a));
  CHECK(WaitForStats(shards.client_b, settled(expected_b)).mass.total_mass ==
        doctest::Approx(expected_b));

  // Stopped, the prefetcher has finished its last request: the shards handed out whole ones.
  prefetcher.reset();
  const int64_t handed_out =
      shards.client_a.Stats().samples_total + shards.client_b.Stats().samples_total;
  CHECK(handed_out >= 8 * kBatch);
  CHECK(handed_out % (kBatch * kPerRequest) == 0);
}

}  // namespace
}  // namespace ferry::learner
