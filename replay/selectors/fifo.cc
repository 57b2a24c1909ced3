#include "replay/selectors/fifo.h"

#include <algorithm>
#include <limits>

#include "core/status.h"

namespace ferry::replay {

namespace internal {

InsertionOrder::InsertionOrder(int64_t capacity)
    : older_(static_cast<size_t>(capacity), kNone), newer_(static_cast<size_t>(capacity), kNone) {
  // Every slot must differ from kNone.
  FERRY_CHECK(capacity >= 1 && capacity <= int64_t{std::numeric_limits<uint32_t>::max()});
}

void InsertionOrder::Append(int64_t slot) {
  const auto s = static_cast<uint32_t>(slot);
  if (Contains(s)) {
    if (s == newest_) return;
    Unlink(s);
  }
  older_[s] = newest_;
  newer_[s] = kNone;
  if (newest_ != kNone) newer_[newest_] = s;
  newest_ = s;
  if (oldest_ == kNone) oldest_ = s;
  ++size_;
}

void InsertionOrder::Unlink(uint32_t slot) {
  const uint32_t older = older_[slot];
  const uint32_t newer = newer_[slot];
  (older != kNone ? newer_[older] : oldest_) = newer;
  (newer != kNone ? older_[newer] : newest_) = older;
  older_[slot] = kNone;
  newer_[slot] = kNone;
  --size_;
}

void InsertionOrder::Clear() {
  std::fill(older_.begin(), older_.end(), kNone);
  std::fill(newer_.begin(), newer_.end(), kNone);
  oldest_ = kNone;
  newest_ = kNone;
  size_ = 0;
}

void InsertionOrder::Oldest(int count, int64_t* slots) const {
  FERRY_CHECK(size_ > 0 && count >= 0);
  uint32_t slot = oldest_;
  for (int i = 0; i < count; ++i) {
    slots[i] = slot;
    slot = newer_[slot] != kNone ? newer_[slot] : oldest_;
  }
}

void InsertionOrder::Newest(int count, int64_t* slots) const {
  FERRY_CHECK(size_ > 0 && count >= 0);
  uint32_t slot = newest_;
  for (int i = 0; i < count; ++i) {
    slots[i] = slot;
    slot = older_[slot] != kNone ? older_[slot] : newest_;
  }
}

int64_t InsertionOrder::bytes() const {
  return static_cast<int64_t>((older_.capacity() + newer_.capacity()) * sizeof(uint32_t));
}

}  // namespace internal

void FifoSelector::Insert(const int64_t* slots, const float*, int n) {
  for (int i = 0; i < n; ++i) order_.Append(slots[i]);
}

void FifoSelector::Restore(const int64_t* slots, const double*, int64_t n) {
  order_.Clear();
  for (int64_t i = 0; i < n; ++i) order_.Append(slots[i]);
}

void FifoSelector::Sample(int count, std::mt19937_64&, int64_t* slots, double* masses) {
  order_.Oldest(count, slots);
  std::fill(masses, masses + count, 1.0);
}

}  // namespace ferry::replay
