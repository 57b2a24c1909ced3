#include "envs/classic_control/pendulum.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ferry::envs::classic_control {

namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kMaxSpeed = 8.0;
constexpr double kMaxTorque = 2.0;
constexpr double kDt = 0.05;
constexpr double kGravity = 10.0;
constexpr double kMass = 1.0;
constexpr double kLength = 1.0;

// Python's ((x + pi) % (2 pi)) - pi, whose remainder takes the divisor's sign:
// negative angles wrap like positive ones instead of mirroring.
double NormalizeAngle(double x) {
  double r = std::fmod(x + kPi, 2 * kPi);
  if (r < 0) r += 2 * kPi;
  return r - kPi;
}

}  // namespace

PendulumEnv::PendulumEnv(uint64_t seed)
    : TimeLimitedEnv(
          seed,
          Space::Box({3}, {-1.f, -1.f, -static_cast<float>(kMaxSpeed)},
                     {1.f, 1.f, static_cast<float>(kMaxSpeed)}),
          Space::Box({1}, {-static_cast<float>(kMaxTorque)}, {static_cast<float>(kMaxTorque)}),
          kMaxEpisodeSteps) {}

void PendulumEnv::ResetState(std::mt19937_64& rng) {
  state_.theta = internal::UniformReal(rng, -kPi, kPi);
  state_.theta_dot = internal::UniformReal(rng, -1.0, 1.0);
}

PendulumEnv::Outcome PendulumEnv::Advance(const float* action) {
  const double u =
      std::isnan(action[0]) ? 0.0 : std::clamp<double>(action[0], -kMaxTorque, kMaxTorque);
  auto& [theta, theta_dot] = state_;
  const double normalized = NormalizeAngle(theta);
  const double cost = normalized * normalized + 0.1 * (theta_dot * theta_dot) + 0.001 * (u * u);

  double new_theta_dot = theta_dot + (3 * kGravity / (2 * kLength) * std::sin(theta) +
                                      3.0 / (kMass * (kLength * kLength)) * u) *
                                         kDt;
  new_theta_dot = std::clamp(new_theta_dot, -kMaxSpeed, kMaxSpeed);
  // The angle advances with the new speed (semi-implicit Euler) and is left
  // unwrapped, as in Gymnasium; only the cost normalizes it.
  theta += new_theta_dot * kDt;
  theta_dot = new_theta_dot;

  return {.reward = static_cast<float>(-cost), .terminated = false};
}

void PendulumEnv::SetState(const State& state, int elapsed_steps) {
  FERRY_CHECK(std::isfinite(state.theta) && std::abs(state.theta_dot) <= kMaxSpeed);
  state_ = state;
  ResumeEpisode(elapsed_steps);
}

void PendulumEnv::WriteObservation(float* obs) const {
  obs[0] = static_cast<float>(std::cos(state_.theta));
  obs[1] = static_cast<float>(std::sin(state_.theta));
  obs[2] = static_cast<float>(state_.theta_dot);
}

}  // namespace ferry::envs::classic_control
