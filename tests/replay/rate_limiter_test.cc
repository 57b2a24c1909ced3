#include "replay/rate_limiter.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>

namespace ferry::replay {
namespace {

TEST_CASE("RateLimiter refuses samples below the minimum size and never refuses those inserts") {
  RateLimiter limiter(/*samples_per_insert=*/1.0, /*min_size_to_sample=*/100,
                      /*tolerance=*/1e18);
  for (int64_t size = 0; size < 100; ++size) {
    CHECK(limiter.CanInsert(size));
    CHECK_FALSE(limiter.CanSample(size));
    limiter.Inserted(1);
  }
  CHECK(limiter.CanSample(100));
  CHECK(limiter.inserts() == 100);
  // Without a ratio band, samples may run far ahead of inserts.
  limiter.Sampled(1000000);
  CHECK(limiter.CanSample(100));
  CHECK(limiter.CanInsert(100));
  CHECK(limiter.samples() == 1000000);
}

TEST_CASE("RateLimiter keeps samples per insert inside its band") {
  // diff = 2 * inserts - samples must stay in [10 * 2 - 5, 10 * 2 + 5] = [15, 25].
  RateLimiter limiter(/*samples_per_insert=*/2.0, /*min_size_to_sample=*/10, /*tolerance=*/5.0);
  limiter.Inserted(10);  // diff 20
  CHECK(limiter.CanSample(10));
  limiter.Sampled(5);  // diff 15: on the lower edge
  CHECK(limiter.CanSample(10));
  limiter.Sampled(1);  // diff 14
  CHECK_FALSE(limiter.CanSample(10));
  CHECK(limiter.CanInsert(10));
  limiter.Inserted(1);  // diff 16
  CHECK(limiter.CanSample(11));

  limiter.Inserted(4);  // diff 24
  CHECK(limiter.CanInsert(15));
  limiter.Inserted(1);  // diff 26: above the upper edge
  CHECK_FALSE(limiter.CanInsert(16));
  // Below the minimum size inserts always go in, whatever the ratio.
  CHECK(limiter.CanInsert(9));
  limiter.Sampled(1);  // diff 25: on the upper edge
  CHECK(limiter.CanInsert(16));
}

TEST_CASE("RateLimiter admits a batch larger than its band instead of deadlocking") {
  RateLimiter limiter(/*samples_per_insert=*/1.0, /*min_size_to_sample=*/4, /*tolerance=*/2.0);
  REQUIRE(limiter.CanInsert(0));
  limiter.Inserted(1000);  // diff 1000, far above max_diff 6
  CHECK_FALSE(limiter.CanInsert(1000));
  CHECK(limiter.CanSample(1000));
  limiter.Sampled(994);  // diff 6
  CHECK(limiter.CanInsert(1000));
}

TEST_CASE("RateLimiter always lets one side move once the minimum size is reached") {
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<int> batch(1, 64);
  for (double tolerance : {0.0, 1.0, 32.0}) {
    RateLimiter limiter(/*samples_per_insert=*/4.0, /*min_size_to_sample=*/16, tolerance);
    limiter.Inserted(16);
    const int64_t size = 16;
    for (int step = 0; step < 2000; ++step) {
      const bool can_insert = limiter.CanInsert(size);
      const bool can_sample = limiter.CanSample(size);
      REQUIRE((can_insert || can_sample));
      if (can_insert && (!can_sample || rng() % 2 == 0)) {
        limiter.Inserted(batch(rng));
      } else {
        limiter.Sampled(batch(rng));
      }
      // Overshoot is bounded by one batch on either side of the band.
      const double diff = 4.0 * limiter.inserts() - limiter.samples();
      CHECK(diff >= 16 * 4.0 - tolerance - 64);
      CHECK(diff <= 16 * 4.0 + tolerance + 4.0 * 64);
    }
  }
}

}  // namespace
}  // namespace ferry::replay
