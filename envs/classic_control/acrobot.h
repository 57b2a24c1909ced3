// Acrobot-v1 exactly as Gymnasium publishes it (Sutton 1996, "book" dynamics).
//
// State [theta1, theta2, dtheta1, dtheta2]; theta1 = 0 hangs straight down.
// Observation: [cos theta1, sin theta1, cos theta2, sin theta2, dtheta1,
// dtheta2]. Action: Discrete(3) for a torque of -1, 0 or +1 on the middle
// joint. One step is one RK4 step of 0.2 s, then angles wrap into [-pi, pi]
// and velocities clip to 4 pi and 9 pi. Terminates when the free end rises
// above one link length over the pivot (-cos theta1 - cos(theta1 + theta2) >
// 1). Reward -1 per step, 0 on the terminating one; truncated after 500 steps.
// Reset draws every state element uniformly from [-0.1, 0.1].
#ifndef FERRY_ENVS_CLASSIC_CONTROL_ACROBOT_H_
#define FERRY_ENVS_CLASSIC_CONTROL_ACROBOT_H_

#include <array>
#include <cstdint>
#include <random>

#include "envs/time_limited_env.h"

namespace ferry::envs::classic_control {

class AcrobotEnv final : public TimeLimitedEnv {
 public:
  static constexpr int kMaxEpisodeSteps = 500;

  // [theta1, theta2, dtheta1, dtheta2].
  using State = std::array<double, 4>;

  explicit AcrobotEnv(uint64_t seed);

  // Continues the current episode from `state` as if `elapsed_steps` steps had
  // been taken, so tests can start from chosen states. The state must be one
  // a step can produce: angles in [-pi, pi], velocities within their clips.
  void SetState(const State& state, int elapsed_steps = 0);

 private:
  void ResetState(std::mt19937_64& rng) override;
  Outcome Advance(const float* action) override;
  void WriteObservation(float* obs) const override;

  State state_{};
};

}  // namespace ferry::envs::classic_control

#endif  // FERRY_ENVS_CLASSIC_CONTROL_ACROBOT_H_
