// Keeps a shard's samples per insert near a target (Reverb's SampleToInsertRatio).
//
//   diff = inserts * samples_per_insert - samples
//   insert allowed while size < min_size_to_sample, or diff <= max_diff
//   sample allowed once size >= min_size_to_sample and diff >= min_diff
//   min_diff/max_diff = min_size_to_sample * samples_per_insert -/+ tolerance
//
// The check is made before a whole batch is admitted, so a batch may overshoot
// the band by its own size: no batch size can deadlock the limiter. Not
// thread-safe; the shard calls it from its one thread.
#ifndef FERRY_REPLAY_RATE_LIMITER_H_
#define FERRY_REPLAY_RATE_LIMITER_H_

#include <cstdint>

namespace ferry::replay {

class RateLimiter {
 public:
  RateLimiter(double samples_per_insert, int64_t min_size_to_sample, double tolerance);

  bool CanInsert(int64_t size) const;
  bool CanSample(int64_t size) const;
  void Inserted(int64_t count) { inserts_ += count; }
  void Sampled(int64_t count) { samples_ += count; }

  int64_t inserts() const { return inserts_; }
  int64_t samples() const { return samples_; }
  // Sets the counters from a snapshot; both must be >= 0.
  void Restore(int64_t inserts, int64_t samples);

 private:
  double diff() const { return static_cast<double>(inserts_) * samples_per_insert_ - samples_; }

  double samples_per_insert_;
  int64_t min_size_to_sample_;
  double min_diff_;
  double max_diff_;
  int64_t inserts_ = 0;
  int64_t samples_ = 0;
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_RATE_LIMITER_H_
