// bsuite's Catch (Osband et al. 2020, "Behaviour Suite for Reinforcement
// Learning"), the small pixel environment for convolutional policies.
//
// A 10 x 5 board. Reset drops a ball into a uniformly random column of the
// top row and puts the paddle in the middle column of the bottom row. Each
// step first moves the paddle (action 0 left, 1 stay, 2 right; clamped to the
// board), then the ball falls one row. When the ball reaches the bottom row,
// after 9 steps, the episode terminates with reward +1 if the paddle is in
// the ball's column and -1 if not; every other step rewards 0. Observation:
// the board as a Box of shape [10, 5], row-major, 1 where the ball or the
// paddle is and 0 elsewhere. No time limit, as in bsuite.
#ifndef FERRY_ENVS_BSUITE_CATCH_H_
#define FERRY_ENVS_BSUITE_CATCH_H_

#include <cstdint>
#include <random>

#include "envs/time_limited_env.h"

namespace ferry::envs::bsuite {

class CatchEnv final : public TimeLimitedEnv {
 public:
  static constexpr int kRows = 10;
  static constexpr int kColumns = 5;

  explicit CatchEnv(uint64_t seed);

 private:
  void ResetState(std::mt19937_64& rng) override;
  Outcome Advance(const float* action) override;
  void WriteObservation(float* obs) const override;

  int ball_row_ = 0;
  int ball_column_ = 0;
  int paddle_column_ = 0;
};

}  // namespace ferry::envs::bsuite

#endif  // FERRY_ENVS_BSUITE_CATCH_H_
