#include "envs/time_limited_env.h"

#include <utility>

namespace ferry::envs {

TimeLimitedEnv::TimeLimitedEnv(uint64_t seed, Space observation_space, Space action_space,
                               int max_episode_steps)
    : rng_(seed),
      observation_space_(std::move(observation_space)),
      action_space_(std::move(action_space)),
      max_episode_steps_(max_episode_steps) {
  FERRY_CHECK(max_episode_steps_ >= 0);
}

void TimeLimitedEnv::Reset(float* obs) {
  ResetState(rng_);
  elapsed_steps_ = 0;
  needs_reset_ = false;
  WriteObservation(obs);
}

StepResult TimeLimitedEnv::Step(const float* action, float* obs) {
  FERRY_CHECK(!needs_reset_);
  const Outcome outcome = Advance(action);
  StepResult result;
  result.reward = outcome.reward;
  result.terminated = outcome.terminated;
  result.truncated = max_episode_steps_ > 0 && ++elapsed_steps_ >= max_episode_steps_;
  needs_reset_ = result.terminated || result.truncated;
  WriteObservation(obs);
  return result;
}

void TimeLimitedEnv::ResumeEpisode(int elapsed_steps) {
  FERRY_CHECK(elapsed_steps >= 0 &&
              (max_episode_steps_ == 0 || elapsed_steps < max_episode_steps_));
  elapsed_steps_ = elapsed_steps;
  needs_reset_ = false;
}

}  // namespace ferry::envs
