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

#include "envs/env.h"

namespace ferry::envs::classic_control {

class PendulumEnv final : public Env {
 public:
  static constexpr int kMaxEpisodeSteps = 200;

  struct State {
    double theta = 0;
    double theta_dot = 0;
  };

  explicit PendulumEnv(uint64_t seed);

  const Space& observation_space() const override { return observation_space_; }
  const Space& action_space() const override { return action_space_; }
  void Reset(float* obs) override;
  StepResult Step(const float* action, float* obs) override;

  // Continues the current episode from `state` as if `elapsed_steps` steps had
  // been taken, so tests can start from chosen states. theta must be finite
  // and |theta_dot| <= 8.
  void SetState(const State& state, int elapsed_steps = 0);

 private:
  void WriteObservation(float* obs) const;

  std::mt19937_64 rng_;
  Space observation_space_;
  Space action_space_;
  State state_;
  int elapsed_steps_ = 0;
  bool needs_reset_ = true;
};

}  // namespace ferry::envs::classic_control

#endif  // FERRY_ENVS_CLASSIC_CONTROL_PENDULUM_H_
