// Pendulum-v1 exactly as Gymnasium publishes it.
//
// State [theta, theta_dot]; theta = 0 is upright. Observation: [cos theta,
// sin theta, theta_dot]. Action: Box([1], -2, 2), a torque clamped into that
// range (NaN acts as 0). Semi-implicit Euler with dt = 0.05, g = 10, m = l = 1,
// the speed clipped to 8. Reward is minus the cost of the state and torque
// before the step: normalize(theta)^2 + 0.1 theta_dot^2 + 0.001 u^2. Never
// terminates; truncated after 200 steps. Reset draws theta uniformly from
// [-pi, pi] and theta_dot from [-1, 1].
#ifndef FERRY_ENVS_CLASSIC_CONTROL_PENDULUM_H_
#define FERRY_ENVS_CLASSIC_CONTROL_PENDULUM_H_

#include <cstdint>
#include <random>

#include "envs/time_limited_env.h"

namespace ferry::envs::classic_control {

class PendulumEnv final : public TimeLimitedEnv {
 public:
  static constexpr int kMaxEpisodeSteps = 200;

  struct State {
    double theta = 0;
    double theta_dot = 0;
  };

  explicit PendulumEnv(uint64_t seed);

  // Continues the current episode from `state` as if `elapsed_steps` steps had
  // been taken, so tests can start from chosen states. theta must be finite
  // and |theta_dot| <= 8.
  void SetState(const State& state, int elapsed_steps = 0);

 private:
  void ResetState(std::mt19937_64& rng) override;
  Outcome Advance(const float* action) override;
  void WriteObservation(float* obs) const override;

  State state_;
};

}  // namespace ferry::envs::classic_control

#endif  // FERRY_ENVS_CLASSIC_CONTROL_PENDULUM_H_
