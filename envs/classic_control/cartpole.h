// CartPole-v1 exactly as Gymnasium publishes it (Barto, Sutton & Anderson 1983).
//
// Observation: [x, x_dot, theta, theta_dot]. Action: Discrete(2), 0 pushes the
// cart left and 1 right with a force of 10 N. Euler integration with tau =
// 0.02 s. Reward 1 on every step, the terminating one included. Terminates
// when |x| > 2.4 or |theta| > 12 degrees; truncated after 500 steps. Reset
// draws every state element uniformly from [-0.05, 0.05].
#ifndef FERRY_ENVS_CLASSIC_CONTROL_CARTPOLE_H_
#define FERRY_ENVS_CLASSIC_CONTROL_CARTPOLE_H_

#include <cstdint>
#include <random>

#include "envs/time_limited_env.h"

namespace ferry::envs::classic_control {

class CartPoleEnv final : public TimeLimitedEnv {
 public:
  static constexpr int kMaxEpisodeSteps = 500;

  struct State {
    double x = 0;
    double x_dot = 0;
    double theta = 0;
    double theta_dot = 0;
  };

  explicit CartPoleEnv(uint64_t seed);

  // Continues the current episode from `state` as if `elapsed_steps` steps had
  // been taken, so tests can start from chosen states near a threshold or the
  // time limit. The state must be finite.
  void SetState(const State& state, int elapsed_steps = 0);

 private:
  void ResetState(std::mt19937_64& rng) override;
  Outcome Advance(const float* action) override;
  void WriteObservation(float* obs) const override;

  State state_;
};

}  // namespace ferry::envs::classic_control

#endif  // FERRY_ENVS_CLASSIC_CONTROL_CARTPOLE_H_
