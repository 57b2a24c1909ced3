// MountainCar-v0 exactly as Gymnasium publishes it (Moore 1990).
//
// Observation: [position, velocity]. Action: Discrete(3): push left, no push,
// push right, with a force of 0.001 against gravity 0.0025 along cos(3 x).
// Velocity clips to [-0.07, 0.07] and position to [-1.2, 0.6]; hitting the
// left wall stops the car. Terminates when position >= 0.5 with velocity >= 0.
// Reward -1 per step; truncated after 200 steps. Reset draws the position
// uniformly from [-0.6, -0.4] with velocity 0.
#ifndef FERRY_ENVS_CLASSIC_CONTROL_MOUNTAIN_CAR_H_
#define FERRY_ENVS_CLASSIC_CONTROL_MOUNTAIN_CAR_H_

#include <cstdint>
#include <random>

#include "envs/time_limited_env.h"

namespace ferry::envs::classic_control {

class MountainCarEnv final : public TimeLimitedEnv {
 public:
  static constexpr int kMaxEpisodeSteps = 200;

  struct State {
    double position = 0;
    double velocity = 0;
  };

  explicit MountainCarEnv(uint64_t seed);

  // Continues the current episode from `state` as if `elapsed_steps` steps had
  // been taken, so tests can start from chosen states. The state must be one
  // a step can produce: position in [-1.2, 0.6], velocity in [-0.07, 0.07].
  void SetState(const State& state, int elapsed_steps = 0);

 private:
  void ResetState(std::mt19937_64& rng) override;
  Outcome Advance(const float* action) override;
  void WriteObservation(float* obs) const override;

  State state_;
};

}  // namespace ferry::envs::classic_control

#endif  // FERRY_ENVS_CLASSIC_CONTROL_MOUNTAIN_CAR_H_
