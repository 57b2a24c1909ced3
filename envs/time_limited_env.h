// The episode bookkeeping the env families share: a seeded RNG, the two
// spaces, and an episode that ends when the MDP terminates or, in an env with
// a time limit, is truncated after a fixed number of steps.
//
// A subclass implements the three private hooks and inherits Reset and Step,
// which are final; its SetState, if any, ends with ResumeEpisode.
//
//   Reset(obs) -> ResetState(rng) -> WriteObservation(obs)
//   Step(action, obs) -> Advance(action) -> count the step -> WriteObservation(obs)
//
// Step after the episode ended, or before the first Reset, aborts (the Env
// contract). Like every Env, it is used from one thread at a time.
#ifndef FERRY_ENVS_TIME_LIMITED_ENV_H_
#define FERRY_ENVS_TIME_LIMITED_ENV_H_

#include <cstdint>
#include <random>

#include "envs/env.h"

namespace ferry::envs {

class TimeLimitedEnv : public Env {
 public:
  const Space& observation_space() const final { return observation_space_; }
  const Space& action_space() const final { return action_space_; }
  int max_episode_steps() const final { return max_episode_steps_; }
  void Reset(float* obs) final;
  // Truncates on the `max_episode_steps`-th step since Reset, whether or not
  // that step also terminates; never when max_episode_steps is 0.
  StepResult Step(const float* action, float* obs) final;

 protected:
  // What the dynamics say about one step; truncation is the base class's.
  struct Outcome {
    float reward = 0.f;
    bool terminated = false;
  };

  // `seed` seeds the RNG that ResetState draws from; max_episode_steps >= 0,
  // 0 for no time limit.
  TimeLimitedEnv(uint64_t seed, Space observation_space, Space action_space, int max_episode_steps);

  // For a subclass's SetState, after it has set a valid state: continues the
  // current episode as if `elapsed_steps` steps had been taken, so tests can
  // start from chosen states near a threshold or the time limit. Aborts
  // unless 0 <= elapsed_steps < max_episode_steps (any elapsed_steps >= 0
  // without a time limit).
  void ResumeEpisode(int elapsed_steps);

 private:
  // Draws the first state of a new episode.
  virtual void ResetState(std::mt19937_64& rng) = 0;
  // Applies `action` (a flat sample of the action space) to the state.
  virtual Outcome Advance(const float* action) = 0;
  // Writes the observation of the current state.
  virtual void WriteObservation(float* obs) const = 0;

  std::mt19937_64 rng_;
  Space observation_space_;
  Space action_space_;
  int max_episode_steps_;
  int elapsed_steps_ = 0;
  bool needs_reset_ = true;
};

}  // namespace ferry::envs

#endif  // FERRY_ENVS_TIME_LIMITED_ENV_H_
