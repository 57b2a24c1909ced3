#include "replay/selectors/uniform.h"

#include <algorithm>
#include <limits>

#include "core/status.h"

namespace ferry::replay {

UniformSelector::UniformSelector(int64_t capacity)
    : position_(static_cast<size_t>(capacity), kNotStored) {
  // A slot's index in stored_ must stay below kNotStored.
  FERRY_CHECK(capacity >= 1 && capacity <= int64_t{std::numeric_limits<uint32_t>::max()});
  stored_.reserve(static_cast<size_t>(capacity));
}

void UniformSelector::Insert(const int64_t* slots, const float*, int n) {
  for (int i = 0; i < n; ++i) {
    uint32_t& position = position_[slots[i]];
    if (position != kNotStored) continue;  // A replaced item: the slot stays stored.
    position = static_cast<uint32_t>(stored_.size());
    stored_.push_back(static_cast<uint32_t>(slots[i]));
  }
}

void UniformSelector::Restore(const int64_t* slots, const double*, int64_t n) {
  std::fill(position_.begin(), position_.end(), kNotStored);
  stored_.clear();
  for (int64_t i = 0; i < n; ++i) {
    FERRY_CHECK(position_[slots[i]] == kNotStored);
    position_[slots[i]] = static_cast<uint32_t>(stored_.size());
    stored_.push_back(static_cast<uint32_t>(slots[i]));
  }
}

void UniformSelector::Sample(int count, std::mt19937_64& rng, int64_t* slots, double* masses) {
  FERRY_CHECK(!stored_.empty() && count >= 0);
  std::uniform_int_distribution<size_t> pick(0, stored_.size() - 1);
  for (int i = 0; i < count; ++i) {
    slots[i] = stored_[pick(rng)];
    masses[i] = 1.0;
  }
}

int64_t UniformSelector::ResidentBytes() const {
  return static_cast<int64_t>((stored_.capacity() + position_.capacity()) * sizeof(uint32_t));
}

}  // namespace ferry::replay
