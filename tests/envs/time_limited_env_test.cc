// TimeLimitedEnv's episode bookkeeping through a minimal subclass: truncation
// at the limit (and never without one), Reset and ResumeEpisode restarting
// the count, and the hooks' results reaching the caller.
#include "envs/time_limited_env.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>

namespace ferry::envs {
namespace {

// Counts its steps from a random start; an action of 1 terminates, and the
// reward is the action.
class CountingEnv final : public TimeLimitedEnv {
 public:
  static constexpr int kMaxEpisodeSteps = 3;

  explicit CountingEnv(uint64_t seed, int max_episode_steps = kMaxEpisodeSteps)
      : TimeLimitedEnv(seed, Space::Box({1}, {0.f}, {1000.f}), Space::Discrete(2),
                       max_episode_steps) {}

  void SetCount(int count, int elapsed_steps) {
    count_ = count;
    ResumeEpisode(elapsed_steps);
  }

 private:
  void ResetState(std::mt19937_64& rng) override { count_ = static_cast<int>(rng() % 100); }
  Outcome Advance(const float* action) override {
    ++count_;
    return {.reward = action[0], .terminated = action[0] == 1.f};
  }
  void WriteObservation(float* obs) const override { obs[0] = static_cast<float>(count_); }

  int count_ = 0;
};

float ResetObservation(Env& env) {
  float obs = -1.f;
  env.Reset(&obs);
  return obs;
}

StepResult StepWith(Env& env, float action, float* obs) { return env.Step(&action, obs); }

TEST_CASE("the spaces and time limit are the ones given at construction") {
  const CountingEnv env(/*seed=*/1);
  CHECK(env.observation_space().ToString() == "Box(shape=[1], low=[0], high=[1000])");
  CHECK(env.action_space().ToString() == "Discrete(2)");
  CHECK(env.max_episode_steps() == CountingEnv::kMaxEpisodeSteps);
  CHECK(CountingEnv(/*seed=*/1, /*max_episode_steps=*/0).max_episode_steps() == 0);
}

TEST_CASE("Reset draws from the RNG seeded at construction and writes the observation") {
  CountingEnv env(/*seed=*/7);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 5; ++i) CHECK(ResetObservation(env) == static_cast<float>(rng() % 100));
}

TEST_CASE("Step passes the reward and termination through and writes the observation") {
  CountingEnv env(/*seed=*/3);
  const float start = ResetObservation(env);
  float obs = -1.f;
  const StepResult result = StepWith(env, 0.f, &obs);
  CHECK(obs == start + 1.f);
  CHECK(result.reward == 0.f);
  CHECK_FALSE(result.terminated);
  CHECK_FALSE(result.truncated);
  const StepResult last = StepWith(env, 1.f, &obs);
  CHECK(obs == start + 2.f);
  CHECK(last.reward == 1.f);
  CHECK(last.terminated);
  CHECK_FALSE(last.truncated);
}

TEST_CASE("truncates exactly at the limit, also on a terminating step, and Reset restarts") {
  CountingEnv env(/*seed=*/1);
  float obs = -1.f;
  for (int episode = 0; episode < 2; ++episode) {
    CAPTURE(episode);
    ResetObservation(env);
    for (int step = 1; step < CountingEnv::kMaxEpisodeSteps; ++step) {
      REQUIRE_FALSE(StepWith(env, 0.f, &obs).truncated);
    }
    const StepResult last = StepWith(env, /*action=*/episode, &obs);
    CHECK(last.truncated);
    CHECK(last.terminated == (episode == 1));
  }
}

TEST_CASE("without a time limit, only termination ends an episode") {
  CountingEnv env(/*seed=*/1, /*max_episode_steps=*/0);
  float obs = -1.f;
  ResetObservation(env);
  for (int step = 0; step < 10 * CountingEnv::kMaxEpisodeSteps; ++step) {
    REQUIRE_FALSE(StepWith(env, 0.f, &obs).truncated);
  }
  const StepResult last = StepWith(env, 1.f, &obs);
  CHECK(last.terminated);
  CHECK_FALSE(last.truncated);
  env.SetCount(5, /*elapsed_steps=*/1000);
  CHECK_FALSE(StepWith(env, 0.f, &obs).truncated);
  CHECK(obs == 6.f);
}

TEST_CASE("Reset in mid-episode restarts the count") {
  CountingEnv env(/*seed=*/1);
  float obs = -1.f;
  ResetObservation(env);
  StepWith(env, 0.f, &obs);
  StepWith(env, 0.f, &obs);
  ResetObservation(env);
  for (int step = 1; step < CountingEnv::kMaxEpisodeSteps; ++step) {
    REQUIRE_FALSE(StepWith(env, 0.f, &obs).truncated);
  }
  CHECK(StepWith(env, 0.f, &obs).truncated);
}

TEST_CASE("ResumeEpisode continues as if the given steps had been taken") {
  CountingEnv env(/*seed=*/1);
  float obs = -1.f;
  SUBCASE("before the first Reset") {
    env.SetCount(10, /*elapsed_steps=*/CountingEnv::kMaxEpisodeSteps - 1);
    const StepResult result = StepWith(env, 0.f, &obs);
    CHECK(obs == 11.f);
    CHECK(result.truncated);
  }
  SUBCASE("after an episode ended") {
    ResetObservation(env);
    REQUIRE(StepWith(env, 1.f, &obs).terminated);
    env.SetCount(20, /*elapsed_steps=*/0);
    for (int step = 1; step < CountingEnv::kMaxEpisodeSteps; ++step) {
      REQUIRE_FALSE(StepWith(env, 0.f, &obs).truncated);
    }
    CHECK(StepWith(env, 0.f, &obs).truncated);
    CHECK(obs == 20.f + CountingEnv::kMaxEpisodeSteps);
  }
}

}  // namespace
}  // namespace ferry::envs
