#include "replay/selectors/lifo.h"

#include <algorithm>

namespace ferry::replay {

void LifoSelector::Insert(const int64_t* slots, const float*, int n) {
  for (int i = 0; i < n; ++i) order_.Append(slots[i]);
}

void LifoSelector::Restore(const int64_t* slots, const double*, int64_t n) {
  order_.Clear();
  for (int64_t i = 0; i < n; ++i) order_.Append(slots[i]);
}

void LifoSelector::Sample(int count, std::mt19937_64&, int64_t* slots, double* masses) {
  order_.Newest(count, slots);
  std::fill(masses, masses + count, 1.0);
}

}  // namespace ferry::replay
