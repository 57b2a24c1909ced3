#include "envs/classic_control/mountain_car.h"

#include <algorithm>
#include <cmath>

namespace ferry::envs::classic_control {

namespace {

constexpr double kMinPosition = -1.2;
constexpr double kMaxPosition = 0.6;
constexpr double kMaxSpeed = 0.07;
constexpr double kGoalPosition = 0.5;
constexpr double kGoalVelocity = 0.0;
constexpr double kForce = 0.001;
constexpr double kGravity = 0.0025;

}  // namespace

MountainCarEnv::MountainCarEnv(uint64_t seed)
    : rng_(seed),
      observation_space_(
          Space::Box({2}, {static_cast<float>(kMinPosition), -static_cast<float>(kMaxSpeed)},
                     {static_cast<float>(kMaxPosition), static_cast<float>(kMaxSpeed)})),
      action_space_(Space::Discrete(3)) {}

void MountainCarEnv::Reset(float* obs) {
  state_.position = internal::UniformReal(rng_, -0.6, -0.4);
  state_.velocity = 0.0;
  elapsed_steps_ = 0;
  needs_reset_ = false;
  WriteObservation(obs);
}

StepResult MountainCarEnv::Step(const float* action, float* obs) {
  FERRY_CHECK(!needs_reset_);
  const int push = internal::DiscreteActionIndex(action[0], 3) - 1;
  auto& [position, velocity] = state_;
  velocity += push * kForce + std::cos(3 * position) * (-kGravity);
  velocity = std::clamp(velocity, -kMaxSpeed, kMaxSpeed);
  position += velocity;
  position = std::clamp(position, kMinPosition, kMaxPosition);
  if (position == kMinPosition && velocity < 0) velocity = 0;

  StepResult result;
  result.reward = -1.f;
  result.terminated = position >= kGoalPosition && velocity >= kGoalVelocity;
  result.truncated = ++elapsed_steps_ >= kMaxEpisodeSteps;
  needs_reset_ = result.terminated || result.truncated;
  WriteObservation(obs);
  return result;
}

void MountainCarEnv::SetState(const State& state, int elapsed_steps) {
  FERRY_CHECK(state.position >= kMinPosition && state.position <= kMaxPosition);
  FERRY_CHECK(std::abs(state.velocity) <= kMaxSpeed);
  FERRY_CHECK(elapsed_steps >= 0 && elapsed_steps < kMaxEpisodeSteps);
  state_ = state;
  elapsed_steps_ = elapsed_steps;
  needs_reset_ = false;
}

void MountainCarEnv::WriteObservation(float* obs) const {
  obs[0] = static_cast<float>(state_.position);
  obs[1] = static_cast<float>(state_.velocity);
}

}  // namespace ferry::envs::classic_control
