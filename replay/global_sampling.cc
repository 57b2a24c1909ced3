#include "replay/global_sampling.h"

#include <cmath>

#include "core/status.h"

namespace ferry::replay {

std::vector<int> SplitAcrossShards(const std::vector<double>& masses, int count, double u) {
  double total = 0;
  for (double m : masses) total += m;
  FERRY_CHECK(total > 0);
  std::vector<int> counts(masses.size(), 0);
  size_t shard = 0;
  double upper = masses[0];
  for (int j = 0; j < count; ++j) {
    const double point = (j + u) / count * total;
    while (point >= upper && shard + 1 < masses.size()) upper += masses[++shard];
    while (masses[shard] <= 0) --shard;  // Rounding at the very top end.
    ++counts[shard];
  }
  return counts;
}

std::vector<float> ImportanceWeights(const std::vector<double>& probs, int64_t global_size,
                                     double global_min_probability, double beta) {
  const double n = static_cast<double>(global_size);
  const double max_weight = std::pow(n * global_min_probability, -beta);
  std::vector<float> weights(probs.size());
  for (size_t i = 0; i < probs.size(); ++i) {
    weights[i] = static_cast<float>(std::pow(n * probs[i], -beta) / max_weight);
  }
  return weights;
}

}  // namespace ferry::replay
