// First-in-first-out selection: a sample of n returns the n oldest stored
// items, oldest first, each with mass 1. Sampling removes nothing, so the same
// items come back until they are replaced.
#ifndef FERRY_REPLAY_SELECTORS_FIFO_H_
#define FERRY_REPLAY_SELECTORS_FIFO_H_

#include <cstdint>
#include <random>
#include <vector>

#include "replay/selectors/interface.h"

namespace ferry::replay {

namespace internal {

// The stored slots in insertion order, as a doubly linked list threaded
// through two per-slot arrays: appending, replacing and walking from either
// end allocate nothing. Shared by FifoSelector and LifoSelector.
class InsertionOrder {
 public:
  explicit InsertionOrder(int64_t capacity);

  // Makes `slot` the newest item, taking it out of its old place if stored.
  void Append(int64_t slot);
  void Clear();
  bool Contains(int64_t slot) const { return older_[slot] != kNone || oldest_ == slot; }
  int64_t size() const { return size_; }

  // Writes `count` slots from the oldest towards the newest (Oldest) or the
  // other way (Newest), starting over at the far end when count > size().
  // Requires size() > 0.
  void Oldest(int count, int64_t* slots) const;
  void Newest(int count, int64_t* slots) const;

  int64_t bytes() const;

 private:
  static constexpr uint32_t kNone = UINT32_MAX;

  void Unlink(uint32_t slot);

  std::vector<uint32_t> older_;  // Per slot: the next older stored slot, or kNone.
  std::vector<uint32_t> newer_;  // Per slot: the next newer stored slot, or kNone.
  uint32_t oldest_ = kNone;
  uint32_t newest_ = kNone;
  int64_t size_ = 0;
};

}  // namespace internal

// Priorities are ignored. Member methods are not called concurrently (see ItemSelector).
class FifoSelector : public ItemSelector {
 public:
  explicit FifoSelector(int64_t capacity) : order_(capacity) {}

  void Insert(const int64_t* slots, const float* raw_priorities, int n) override;
  void Update(const int64_t*, const float*, int) override {}
  void Restore(const int64_t* slots, const double* masses, int64_t n) override;
  void Sample(int count, std::mt19937_64& rng, int64_t* slots, double* masses) override;

  double Mass(int64_t slot) const override { return order_.Contains(slot) ? 1.0 : 0.0; }
  double TotalMass() const override { return static_cast<double>(order_.size()); }
  double MinMass() const override { return order_.size() > 0 ? 1.0 : 0.0; }
  int64_t ResidentBytes() const override { return order_.bytes(); }

 private:
  internal::InsertionOrder order_;
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_SELECTORS_FIFO_H_
