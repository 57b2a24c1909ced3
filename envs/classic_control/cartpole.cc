#include "envs/classic_control/cartpole.h"

#include <cmath>
#include <limits>
#include <numbers>

namespace ferry::envs::classic_control {

namespace {

constexpr double kGravity = 9.8;
constexpr double kMassCart = 1.0;
constexpr double kMassPole = 0.1;
constexpr double kTotalMass = kMassPole + kMassCart;
constexpr double kHalfPoleLength = 0.5;
constexpr double kPoleMassLength = kMassPole * kHalfPoleLength;
constexpr double kForceMag = 10.0;
constexpr double kTau = 0.02;
constexpr double kThetaThreshold = 12 * 2 * std::numbers::pi / 360;
constexpr double kXThreshold = 2.4;
constexpr double kResetBound = 0.05;

Space ObservationSpace() {
  // Twice the termination thresholds, as Gymnasium does, so that the
  // observation of the terminating step is still inside the space.
  constexpr float kMax = std::numeric_limits<float>::max();
  const float x = static_cast<float>(kXThreshold * 2);
  const float theta = static_cast<float>(kThetaThreshold * 2);
  return Space::Box({4}, {-x, -kMax, -theta, -kMax}, {x, kMax, theta, kMax});
}

}  // namespace

CartPoleEnv::CartPoleEnv(uint64_t seed)
    : TimeLimitedEnv(seed, ObservationSpace(), Space::Discrete(2), kMaxEpisodeSteps) {}

void CartPoleEnv::ResetState(std::mt19937_64& rng) {
  state_.x = internal::UniformReal(rng, -kResetBound, kResetBound);
  state_.x_dot = internal::UniformReal(rng, -kResetBound, kResetBound);
  state_.theta = internal::UniformReal(rng, -kResetBound, kResetBound);
  state_.theta_dot = internal::UniformReal(rng, -kResetBound, kResetBound);
}

CartPoleEnv::Outcome CartPoleEnv::Advance(const float* action) {
  const double force = internal::DiscreteActionIndex(action[0], 2) == 1 ? kForceMag : -kForceMag;
  auto& [x, x_dot, theta, theta_dot] = state_;
  const double cos_theta = std::cos(theta);
  const double sin_theta = std::sin(theta);
  const double temp = (force + kPoleMassLength * (theta_dot * theta_dot) * sin_theta) / kTotalMass;
  const double theta_acc =
      (kGravity * sin_theta - cos_theta * temp) /
      (kHalfPoleLength * (4.0 / 3.0 - kMassPole * (cos_theta * cos_theta) / kTotalMass));
  const double x_acc = temp - kPoleMassLength * theta_acc * cos_theta / kTotalMass;

  // Explicit Euler: positions advance with the old velocities.
  x += kTau * x_dot;
  x_dot += kTau * x_acc;
  theta += kTau * theta_dot;
  theta_dot += kTau * theta_acc;

  const bool terminated =
      x < -kXThreshold || x > kXThreshold || theta < -kThetaThreshold || theta > kThetaThreshold;
  return {.reward = 1.f, .terminated = terminated};
}

void CartPoleEnv::SetState(const State& state, int elapsed_steps) {
  FERRY_CHECK(std::isfinite(state.x) && std::isfinite(state.x_dot) && std::isfinite(state.theta) &&
              std::isfinite(state.theta_dot));
  state_ = state;
  ResumeEpisode(elapsed_steps);
}

void CartPoleEnv::WriteObservation(float* obs) const {
  obs[0] = static_cast<float>(state_.x);
  obs[1] = static_cast<float>(state_.x_dot);
  obs[2] = static_cast<float>(state_.theta);
  obs[3] = static_cast<float>(state_.theta_dot);
}

}  // namespace ferry::envs::classic_control
