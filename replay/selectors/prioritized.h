// Prioritized selection (Schaul et al.): item i is drawn with probability
// p_i^alpha / sum_j p_j^alpha, stratified: a sample of n divides the total mass
// into n equal strata and draws one item from each.
#ifndef FERRY_REPLAY_SELECTORS_PRIORITIZED_H_
#define FERRY_REPLAY_SELECTORS_PRIORITIZED_H_

#include <cstdint>
#include <random>
#include <vector>

#include "replay/selectors/interface.h"
#include "replay/sum_tree.h"

namespace ferry::replay {

// Masses p^alpha live in a sum tree (for proportional draws and the total)
// and a min tree (for the smallest probability behind importance weights).
// Priorities below 1e-8, zero, negative and non-finite ones included, count as
// 1e-8, and p^alpha is clamped to [1e-300, 1e290], so every stored item stays
// sampleable and the total stays finite. alpha = 0 gives every item mass 1.
// Member methods are not called concurrently (see ItemSelector).
class PrioritizedSelector : public ItemSelector {
 public:
  PrioritizedSelector(int64_t capacity, double alpha);

  void Insert(const int64_t* slots, const float* raw_priorities, int n) override;
  void Update(const int64_t* slots, const float* raw_priorities, int n) override;
  void Restore(const int64_t* slots, const double* masses, int64_t n) override;
  void Sample(int count, std::mt19937_64& rng, int64_t* slots, double* masses) override;

  double Mass(int64_t slot) const override { return sum_tree_.Get(slot); }
  double TotalMass() const override { return sum_tree_.Total(); }
  double MinMass() const override;
  int64_t ResidentBytes() const override;

 private:
  // Sets the masses of slots[0..n) from raw priorities; Insert and Update are the same here.
  void SetPriorities(const int64_t* slots, const float* raw_priorities, int n);

  double alpha_;
  SumTree sum_tree_;
  MinTree min_tree_;
  // Scratch of Sample and SetPriorities, kept to avoid allocations.
  std::vector<double> prefixes_;
  std::vector<double> masses_;
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_SELECTORS_PRIORITIZED_H_
