#include "envs/bsuite/catch.h"

#include <algorithm>
#include <vector>

namespace ferry::envs::bsuite {

namespace {

constexpr int kCells = CatchEnv::kRows * CatchEnv::kColumns;
constexpr int kPaddleRow = CatchEnv::kRows - 1;

Space ObservationSpace() {
  return Space::Box({CatchEnv::kRows, CatchEnv::kColumns}, std::vector<float>(kCells, 0.f),
                    std::vector<float>(kCells, 1.f));
}

}  // namespace

CatchEnv::CatchEnv(uint64_t seed)
    : TimeLimitedEnv(seed, ObservationSpace(), Space::Discrete(3), /*max_episode_steps=*/0) {}

void CatchEnv::ResetState(std::mt19937_64& rng) {
  ball_row_ = 0;
  ball_column_ = std::min(kColumns - 1, static_cast<int>(internal::UniformReal(rng, 0, kColumns)));
  paddle_column_ = kColumns / 2;
}

CatchEnv::Outcome CatchEnv::Advance(const float* action) {
  const int dx = internal::DiscreteActionIndex(action[0], 3) - 1;
  paddle_column_ = std::clamp(paddle_column_ + dx, 0, kColumns - 1);
  ++ball_row_;
  if (ball_row_ < kPaddleRow) return {.reward = 0.f, .terminated = false};
  return {.reward = paddle_column_ == ball_column_ ? 1.f : -1.f, .terminated = true};
}

void CatchEnv::WriteObservation(float* obs) const {
  std::fill(obs, obs + kCells, 0.f);
  obs[ball_row_ * kColumns + ball_column_] = 1.f;
  obs[kPaddleRow * kColumns + paddle_column_] = 1.f;
}

}  // namespace ferry::envs::bsuite
