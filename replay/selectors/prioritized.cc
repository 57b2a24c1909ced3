#include "replay/selectors/prioritized.h"

#include <algorithm>
#include <cmath>

#include "core/status.h"

namespace ferry::replay {

namespace {

// Floor for raw priorities (prioritized.h states it), so no item becomes unsampleable.
constexpr double kMinPriority = 1e-8;
// p^alpha is kept inside [kMinMass, kMaxMass] whatever alpha is, so every
// stored item stays sampleable and a sum over 2^32 items stays finite.
constexpr double kMinMass = 1e-300;
constexpr double kMaxMass = 1e290;

double MassOf(float priority, double alpha) {
  const double p = std::isfinite(priority) && priority > kMinPriority ? priority : kMinPriority;
  return std::clamp(std::pow(p, alpha), kMinMass, kMaxMass);
}

}  // namespace

PrioritizedSelector::PrioritizedSelector(int64_t capacity, double alpha)
    : alpha_(alpha), sum_tree_(capacity), min_tree_(capacity) {
  FERRY_CHECK(std::isfinite(alpha) && alpha >= 0.0);
}

void PrioritizedSelector::Insert(const int64_t* slots, const float* raw_priorities, int n) {
  SetPriorities(slots, raw_priorities, n);
}

void PrioritizedSelector::Update(const int64_t* slots, const float* raw_priorities, int n) {
  SetPriorities(slots, raw_priorities, n);
}

void PrioritizedSelector::SetPriorities(const int64_t* slots, const float* raw_priorities, int n) {
  masses_.resize(n);
  for (int i = 0; i < n; ++i) masses_[i] = MassOf(raw_priorities[i], alpha_);
  sum_tree_.SetBatch(slots, masses_.data(), n);
  min_tree_.SetBatch(slots, masses_.data(), n);
}

void PrioritizedSelector::Restore(const int64_t* slots, const double* masses, int64_t n) {
  sum_tree_ = SumTree(sum_tree_.capacity());
  min_tree_ = MinTree(min_tree_.capacity());
  for (int64_t i = 0; i < n; ++i) {
    FERRY_CHECK(masses[i] > 0.0);
    sum_tree_.Set(slots[i], masses[i]);
    min_tree_.Set(slots[i], masses[i]);
  }
}

void PrioritizedSelector::Sample(int count, std::mt19937_64& rng, int64_t* slots, double* masses) {
  FERRY_CHECK(sum_tree_.Total() > 0.0 && count >= 0);
  prefixes_.resize(count);
  // Stratum i is [i, i + 1) * stratum; slots not stored have zero mass and are never found.
  const double stratum = sum_tree_.Total() / std::max(count, 1);
  for (int i = 0; i < count; ++i) {
    const double uniform = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
    prefixes_[i] = (i + uniform) * stratum;
  }
  sum_tree_.FindBatch(prefixes_.data(), slots, count);
  for (int i = 0; i < count; ++i) masses[i] = sum_tree_.Get(slots[i]);
}

double PrioritizedSelector::MinMass() const {
  const double min = min_tree_.Min();
  return std::isinf(min) ? 0.0 : min;  // Only slots that are not stored hold +infinity.
}

int64_t PrioritizedSelector::ResidentBytes() const {
  return sum_tree_.bytes() + min_tree_.bytes() +
         static_cast<int64_t>((prefixes_.capacity() + masses_.capacity()) * sizeof(double));
}

}  // namespace ferry::replay
