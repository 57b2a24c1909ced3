// Last-in-first-out selection: a sample of n returns the n newest stored
// items, newest first, each with mass 1.
#ifndef FERRY_REPLAY_SELECTORS_LIFO_H_
#define FERRY_REPLAY_SELECTORS_LIFO_H_

#include <cstdint>
#include <random>

#include "replay/selectors/fifo.h"
#include "replay/selectors/interface.h"

namespace ferry::replay {

// Priorities are ignored. Member methods are not called concurrently (see ItemSelector).
class LifoSelector : public ItemSelector {
 public:
  explicit LifoSelector(int64_t capacity) : order_(capacity) {}

  void Insert(const int64_t* slots, const float* raw_priorities, int n) override;
  void Update(const int64_t*, const float*, int) override {}
  void Restore(const int64_t* slots, const double* masses, int64_t n) override;
  void Sample(int count, std::mt19937_64& rng, int64_t* slots, double* masses) override;

  double Mass(int64_t slot) const override { return order_.Contains(slot) ? 1.0 : 0.0; }
  double TotalMass() const override { return static_cast<double>(order_.size()); }
  double MinMass() const override { return order_.size() > 0 ? 1.0 : 0.0; }
  int64_t ResidentBytes() const override { return order_.bytes(); }

 private:
  internal::InsertionOrder order_;  // Defined in fifo.h.
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_SELECTORS_LIFO_H_
