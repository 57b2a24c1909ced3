// Uniform selection: every stored item has mass 1 and each draw picks one of
// them uniformly, independently, with replacement.
#ifndef FERRY_REPLAY_SELECTORS_UNIFORM_H_
#define FERRY_REPLAY_SELECTORS_UNIFORM_H_

#include <cstdint>
#include <random>
#include <vector>

#include "replay/selectors/interface.h"

namespace ferry::replay {

// Priorities are ignored. Member methods are not called concurrently (see ItemSelector).
class UniformSelector : public ItemSelector {
 public:
  explicit UniformSelector(int64_t capacity);

  void Insert(const int64_t* slots, const float* raw_priorities, int n) override;
  void Update(const int64_t*, const float*, int) override {}
  void Restore(const int64_t* slots, const double* masses, int64_t n) override;
  void Sample(int count, std::mt19937_64& rng, int64_t* slots, double* masses) override;

  double Mass(int64_t slot) const override { return position_[slot] != kNotStored ? 1.0 : 0.0; }
  double TotalMass() const override { return static_cast<double>(stored_.size()); }
  double MinMass() const override { return stored_.empty() ? 0.0 : 1.0; }
  int64_t ResidentBytes() const override;

 private:
  static constexpr uint32_t kNotStored = UINT32_MAX;

  std::vector<uint32_t> stored_;    // The stored slots, in no particular order.
  std::vector<uint32_t> position_;  // Per slot: its index in stored_, or kNotStored.
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_SELECTORS_UNIFORM_H_
