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
    : TimeLimitedEnv(
          seed,
          Space::Box({2}, {static_cast<float>(kMinPosition), -static_cast<float>(kMaxSpeed)},
                     {static_cast<float>(kMaxPosition), static_cast<float>(kMaxSpeed)}),
          Space::Discrete(3), kMaxEpisodeSteps) {}

void MountainCarEnv::ResetState(std::mt19937_64& rng) {
  state_.position = internal::UniformReal(rng, -0.6, -0.4);
  state_.velocity = 0.0;
}

MountainCarEnv::Outcome MountainCarEnv::Advance(const float* action) {
  const int push = internal::DiscreteActionIndex(action[0], 3) - 1;
  auto& [position, velocity] = state_;
  velocity += push * kForce + std::cos(3 * position) * (-kGravity);
  velocity = std::clamp(velocity, -kMaxSpeed, kMaxSpeed);
  position += velocity;
  position = std::clamp(position, kMinPosition, kMaxPosition);
  if (position == kMinPosition && velocity < 0) velocity = 0;

  return {.reward = -1.f, .terminated = position >= kGoalPosition && velocity >= kGoalVelocity};
}

void MountainCarEnv::SetState(const State& state, int elapsed_steps) {
  FERRY_CHECK(state.position >= kMinPosition && state.position <= kMaxPosition);
  FERRY_CHECK(std::abs(state.velocity) <= kMaxSpeed);
  state_ = state;
  ResumeEpisode(elapsed_steps);
}

void MountainCarEnv::WriteObservation(float* obs) const {
  obs[0] = static_cast<float>(state_.position);
  obs[1] = static_cast<float>(state_.velocity);
}

}  // namespace ferry::envs::classic_control
