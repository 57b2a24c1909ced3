#include "replay/rate_limiter.h"

#include "core/status.h"

namespace ferry::replay {

RateLimiter::RateLimiter(double samples_per_insert, int64_t min_size_to_sample, double tolerance)
    : samples_per_insert_(samples_per_insert),
      min_size_to_sample_(min_size_to_sample),
      min_diff_(min_size_to_sample * samples_per_insert - tolerance),
      max_diff_(min_size_to_sample * samples_per_insert + tolerance) {}

bool RateLimiter::CanInsert(int64_t size) const {
  return size < min_size_to_sample_ || diff() <= max_diff_;
}

bool RateLimiter::CanSample(int64_t size) const {
  return size >= min_size_to_sample_ && diff() >= min_diff_;
}

void RateLimiter::Restore(int64_t inserts, int64_t samples) {
  FERRY_CHECK(inserts >= 0 && samples >= 0);
  inserts_ = inserts;
  samples_ = samples;
}

}  // namespace ferry::replay
