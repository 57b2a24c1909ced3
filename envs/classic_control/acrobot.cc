#include "envs/classic_control/acrobot.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ferry::envs::classic_control {

namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kDt = 0.2;
constexpr double kLinkLength1 = 1.0;
constexpr double kLinkMass1 = 1.0;
constexpr double kLinkMass2 = 1.0;
constexpr double kLinkComPos1 = 0.5;
constexpr double kLinkComPos2 = 0.5;
constexpr double kLinkMoi = 1.0;
constexpr double kGravity = 9.8;
constexpr double kMaxVel1 = 4 * kPi;
constexpr double kMaxVel2 = 9 * kPi;
constexpr double kTorques[] = {-1.0, 0.0, 1.0};
constexpr double kResetBound = 0.1;

using State = AcrobotEnv::State;

// Time derivative of the state under `torque`: Sutton's "book" equations
// (the Java implementation's), which keep the dtheta1^2 term in ddtheta2.
State Derivative(const State& s, double torque) {
  constexpr double m1 = kLinkMass1, m2 = kLinkMass2, l1 = kLinkLength1;
  constexpr double lc1 = kLinkComPos1, lc2 = kLinkComPos2, i1 = kLinkMoi, i2 = kLinkMoi;
  const auto [theta1, theta2, dtheta1, dtheta2] = s;
  const double d1 =
      m1 * (lc1 * lc1) + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * std::cos(theta2)) + i1 + i2;
  const double d2 = m2 * (lc2 * lc2 + l1 * lc2 * std::cos(theta2)) + i2;
  const double phi2 = m2 * lc2 * kGravity * std::cos(theta1 + theta2 - kPi / 2.0);
  const double phi1 = -m2 * l1 * lc2 * (dtheta2 * dtheta2) * std::sin(theta2) -
                      2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * std::sin(theta2) +
                      (m1 * lc1 + m2 * l1) * kGravity * std::cos(theta1 - kPi / 2) + phi2;
  const double ddtheta2 =
      (torque + d2 / d1 * phi1 - m2 * l1 * lc2 * (dtheta1 * dtheta1) * std::sin(theta2) - phi2) /
      (m2 * (lc2 * lc2) + i2 - (d2 * d2) / d1);
  const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
  return {dtheta1, dtheta2, ddtheta1, ddtheta2};
}

// y + h * k, element-wise.
State Offset(const State& y, double h, const State& k) {
  State out;
  for (size_t i = 0; i < y.size(); ++i) out[i] = y[i] + h * k[i];
  return out;
}

// One classic Runge-Kutta step of length kDt; the torque is held constant.
State Rk4(const State& y, double torque) {
  constexpr double kHalf = kDt / 2.0;
  const State k1 = Derivative(y, torque);
  const State k2 = Derivative(Offset(y, kHalf, k1), torque);
  const State k3 = Derivative(Offset(y, kHalf, k2), torque);
  const State k4 = Derivative(Offset(y, kDt, k3), torque);
  State out;
  for (size_t i = 0; i < y.size(); ++i) {
    out[i] = y[i] + kDt / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
  }
  return out;
}

// Gymnasium's wrap(): shifts by whole turns into [low, high]. Repeated
// subtraction (not fmod) keeps its rounding; one step moves an angle by at
// most a few turns, so the loops are short.
double Wrap(double x, double low, double high) {
  const double turn = high - low;
  while (x > high) x -= turn;
  while (x < low) x += turn;
  return x;
}

}  // namespace

AcrobotEnv::AcrobotEnv(uint64_t seed)
    : TimeLimitedEnv(seed,
                     Space::Box({6},
                                {-1.f, -1.f, -1.f, -1.f, -static_cast<float>(kMaxVel1),
                                 -static_cast<float>(kMaxVel2)},
                                {1.f, 1.f, 1.f, 1.f, static_cast<float>(kMaxVel1),
                                 static_cast<float>(kMaxVel2)}),
                     Space::Discrete(3), kMaxEpisodeSteps) {}

void AcrobotEnv::ResetState(std::mt19937_64& rng) {
  // Gymnasium stores the initial state as float32; rounding the same way keeps
  // trajectories comparable with it.
  for (double& x : state_) {
    x = static_cast<float>(internal::UniformReal(rng, -kResetBound, kResetBound));
  }
}

AcrobotEnv::Outcome AcrobotEnv::Advance(const float* action) {
  const double torque = kTorques[internal::DiscreteActionIndex(action[0], 3)];
  State next = Rk4(state_, torque);
  next[0] = Wrap(next[0], -kPi, kPi);
  next[1] = Wrap(next[1], -kPi, kPi);
  next[2] = std::clamp(next[2], -kMaxVel1, kMaxVel1);
  next[3] = std::clamp(next[3], -kMaxVel2, kMaxVel2);
  state_ = next;

  const bool terminated = -std::cos(state_[0]) - std::cos(state_[1] + state_[0]) > 1.0;
  return {.reward = terminated ? 0.f : -1.f, .terminated = terminated};
}

void AcrobotEnv::SetState(const State& state, int elapsed_steps) {
  FERRY_CHECK(std::abs(state[0]) <= kPi && std::abs(state[1]) <= kPi);
  FERRY_CHECK(std::abs(state[2]) <= kMaxVel1 && std::abs(state[3]) <= kMaxVel2);
  state_ = state;
  ResumeEpisode(elapsed_steps);
}

void AcrobotEnv::WriteObservation(float* obs) const {
  obs[0] = static_cast<float>(std::cos(state_[0]));
  obs[1] = static_cast<float>(std::sin(state_[0]));
  obs[2] = static_cast<float>(std::cos(state_[1]));
  obs[3] = static_cast<float>(std::sin(state_[1]));
  obs[4] = static_cast<float>(state_[2]);
  obs[5] = static_cast<float>(state_[3]);
}

}  // namespace ferry::envs::classic_control
