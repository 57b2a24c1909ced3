// The arithmetic that keeps sharded sampling exactly global-proportional.
//
// A batch of B is split across shards by systematic sampling over the shards'
// priority masses, so E[count_k] = B * mass_k / sum(mass), and each shard then
// samples proportionally inside itself: P(i) = p_i^alpha / sum over all shards.
// Importance weights use the global size N and the global minimum probability:
// w_i = (N * P(i))^-beta / max_j w_j, where max_j w_j = (N * P_min)^-beta.
#ifndef FERRY_REPLAY_GLOBAL_SAMPLING_H_
#define FERRY_REPLAY_GLOBAL_SAMPLING_H_

#include <cstdint>
#include <vector>

namespace ferry::replay {

// Counts per shard summing to `count`; `u` in [0, 1) is the systematic offset.
// Shards with zero mass get nothing. Requires a positive total mass.
std::vector<int> SplitAcrossShards(const std::vector<double>& masses, int count, double u);

// Normalised importance weights for items with global probabilities `probs`.
std::vector<float> ImportanceWeights(const std::vector<double>& probs, int64_t global_size,
                                     double global_min_probability, double beta);

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_GLOBAL_SAMPLING_H_
