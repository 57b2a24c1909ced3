// Turns one env's step stream into n-step transitions.
//
//   Push(obs_t, a_t, Q(obs_t, a_t), r_t, obs_t+1, done) -> once n steps are
//   buffered, emits (obs_t-n+1, a, sum_k gamma^k r, gamma^n, obs_t+1) and the
//   Q(obs, a) recorded with its first step; at an episode's end emits every
//   buffered step with its partial return. After termination the discount is
//   0 (no bootstrap); after truncation it is gamma^k, so the learner
//   bootstraps from the last observation.
//
// Storage is a fixed ring sized at construction; Push never allocates.
// Emitted transitions are appended to a TransitionBuffer. Not thread-safe.
#ifndef FERRY_ACTORS_N_STEP_H_
#define FERRY_ACTORS_N_STEP_H_

#include <cstdint>
#include <vector>

namespace ferry::actors {

// Columnar transitions waiting to be sent; capacity set once, reused.
// q_taken is the acting network's Q(obs, action), for the initial priority;
// it is not a transition column.
struct TransitionBuffer {
  int obs_dim = 0;
  int size = 0;
  std::vector<float> obs, next_obs, reward, discount, q_taken;
  std::vector<int32_t> action;
  std::vector<int64_t> policy_version;

  TransitionBuffer(int obs_dim, int capacity);
  void Clear() { size = 0; }
  // Drops the first `rows` rows (0 <= rows <= size); the rest move to the front.
  void DropFront(int rows);
  int capacity() const { return static_cast<int>(reward.size()); }
};

class NStepAccumulator {
 public:
  NStepAccumulator(int obs_dim, int n, double gamma);

  // Records one step. `q_taken` is Q(obs, action) under the acting network.
  // `next_obs` is the observation after the action (the final one when the
  // episode ended). Appends finished transitions to `out`, which must have
  // room for n more; all of one Push share `next_obs`.
  void Push(const float* obs, int32_t action, float q_taken, float reward, const float* next_obs,
            bool terminated, bool truncated, int64_t policy_version, TransitionBuffer* out);
  int pending() const { return count_; }

 private:
  void Emit(int age, const float* next_obs, bool terminated, TransitionBuffer* out);

  int obs_dim_;
  int n_;
  double gamma_;
  int head_ = 0;   // Ring index of the oldest buffered step.
  int count_ = 0;  // Buffered steps.
  std::vector<float> obs_;
  std::vector<int32_t> action_;
  std::vector<float> q_taken_;
  std::vector<float> reward_;
  std::vector<int64_t> version_;
};

}  // namespace ferry::actors

#endif  // FERRY_ACTORS_N_STEP_H_
