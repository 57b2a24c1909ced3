// Every registered env through the generic Env contract, so that a new env is
// checked as soon as it is registered: well-formed spaces and action
// sampling, random valid actions for thousands of steps (every observation
// element written and inside the space, finite rewards, truncation exactly at
// the time limit, Reset after the end), reproducibility by seed, and the
// registry and Space behaviour the contract rests on.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "envs/env.h"

namespace ferry::envs {
namespace {

std::unique_ptr<Env> MakeOrDie(const std::string& id, uint64_t seed) {
  Result<std::unique_ptr<Env>> env = MakeEnv(id, seed);
  REQUIRE_MESSAGE(env.ok(), env.status().ToString());
  return std::move(env).value();
}

constexpr float kUnwritten = std::numeric_limits<float>::quiet_NaN();

TEST_CASE("every registered env declares well-formed spaces and samples valid actions") {
  for (const std::string& id : RegisteredEnvs()) {
    CAPTURE(id);
    const std::unique_ptr<Env> env = MakeOrDie(id, /*seed=*/1);
    const Space& observation_space = env->observation_space();
    const Space& action_space = env->action_space();
    // Observations are float32 Boxes; an image is a Box of rank 2 or 3.
    REQUIRE(observation_space.kind == Space::Kind::kBox);
    REQUIRE_FALSE(observation_space.shape.empty());
    CHECK(observation_space.flat_size() > 0);
    CHECK(env->max_episode_steps() >= 0);
    if (action_space.kind == Space::Kind::kDiscrete) CHECK(action_space.shape.empty());
    std::mt19937_64 rng(3);
    std::vector<float> action(action_space.flat_size());
    std::vector<int> seen(action_space.kind == Space::Kind::kDiscrete ? action_space.n : 0);
    for (int i = 0; i < 1000; ++i) {
      action_space.Sample(rng, action.data());
      REQUIRE(action_space.Contains(action.data()));
      if (!seen.empty()) ++seen[static_cast<int>(action[0])];
    }
    for (int count : seen) CHECK(count > 0);
  }
}

TEST_CASE("every registered env keeps the Env contract under random valid actions") {
  constexpr int kSteps = 5000;
  int envs_truncated = 0;
  for (const std::string& id : RegisteredEnvs()) {
    CAPTURE(id);
    std::unique_ptr<Env> env = MakeOrDie(id, /*seed=*/42);
    const Space& observation_space = env->observation_space();
    const Space& action_space = env->action_space();
    const int time_limit = env->max_episode_steps();
    // Filled with NaN before every call, so an element the env leaves
    // unwritten fails Contains.
    std::vector<float> obs(observation_space.flat_size(), kUnwritten);
    std::vector<float> action(action_space.flat_size());
    std::mt19937_64 rng(7);

    env->Reset(obs.data());
    REQUIRE(observation_space.Contains(obs.data()));
    int length = 0, episodes = 0, truncations = 0;
    for (int step = 0; step < kSteps; ++step) {
      action_space.Sample(rng, action.data());
      std::fill(obs.begin(), obs.end(), kUnwritten);
      const StepResult result = env->Step(action.data(), obs.data());
      ++length;
      REQUIRE(observation_space.Contains(obs.data()));
      REQUIRE(std::isfinite(result.reward));
      // Truncation comes exactly at the time limit, whether or not the step
      // also terminates, and never without one.
      REQUIRE(result.truncated == (time_limit > 0 && length == time_limit));
      if (result.terminated || result.truncated) {
        truncations += result.truncated;
        length = 0;
        ++episodes;
        std::fill(obs.begin(), obs.end(), kUnwritten);
        env->Reset(obs.data());
        REQUIRE(observation_space.Contains(obs.data()));
      }
    }
    CHECK(episodes > 0);
    envs_truncated += truncations > 0;
  }
  // Random play reaches the time limit somewhere (Pendulum never terminates).
  CHECK(envs_truncated > 0);
}

struct Trajectory {
  std::vector<float> observations;
  std::vector<float> rewards;
  std::vector<int> flags;
  bool operator==(const Trajectory&) const = default;
};

// The same action stream for every env seed, so only the env's own RNG differs.
Trajectory Rollout(const std::string& id, uint64_t seed, int steps) {
  std::unique_ptr<Env> env = MakeOrDie(id, seed);
  std::vector<float> obs(env->observation_space().flat_size());
  std::vector<float> action(env->action_space().flat_size());
  std::mt19937_64 rng(99);
  Trajectory trajectory;
  env->Reset(obs.data());
  trajectory.observations.insert(trajectory.observations.end(), obs.begin(), obs.end());
  for (int step = 0; step < steps; ++step) {
    env->action_space().Sample(rng, action.data());
    const StepResult result = env->Step(action.data(), obs.data());
    trajectory.observations.insert(trajectory.observations.end(), obs.begin(), obs.end());
    trajectory.rewards.push_back(result.reward);
    trajectory.flags.push_back(result.terminated + 2 * result.truncated);
    if (result.terminated || result.truncated) {
      env->Reset(obs.data());
      trajectory.observations.insert(trajectory.observations.end(), obs.begin(), obs.end());
    }
  }
  return trajectory;
}

TEST_CASE("the same seed reproduces a trajectory; another seed changes it") {
  for (const std::string& id : RegisteredEnvs()) {
    CAPTURE(id);
    const Trajectory first = Rollout(id, /*seed=*/5, /*steps=*/1000);
    CHECK(Rollout(id, /*seed=*/5, /*steps=*/1000) == first);
    CHECK_FALSE(Rollout(id, /*seed=*/6, /*steps=*/1000) == first);
  }
}

TEST_CASE("the registry lists every env family's ids, sorted and unique") {
  const std::vector<std::string> ids = RegisteredEnvs();
  CHECK(std::is_sorted(ids.begin(), ids.end()));
  CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
  for (const char* id : {"Acrobot-v1", "CartPole-v1", "LunarLander-v2", "LunarLanderContinuous-v2",
                         "MountainCar-v0", "Pendulum-v1", "bsuite/Catch-v0"}) {
    CAPTURE(id);
    CHECK(std::find(ids.begin(), ids.end(), id) != ids.end());
  }
}

TEST_CASE("an unknown id is an InvalidArgument naming it and the registered ids") {
  for (const char* id : {"NoSuchEnv-v9", "cartpole-v1", ""}) {
    CAPTURE(id);
    const Result<std::unique_ptr<Env>> env = MakeEnv(id, /*seed=*/0);
    REQUIRE_FALSE(env.ok());
    CHECK(env.status().code() == StatusCode::kInvalidArgument);
    CHECK(env.status().message().find('"' + std::string(id) + '"') != std::string::npos);
    CHECK(env.status().message().find("CartPole-v1") != std::string::npos);
  }
}

TEST_CASE("Discrete space") {
  const Space space = Space::Discrete(3);
  CHECK(space.flat_size() == 1);
  CHECK(space.ToString() == "Discrete(3)");
  for (float x : {0.f, 1.f, 2.f}) CHECK(space.Contains(&x));
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {-1.f, 3.f, 1.5f, std::nanf(""), inf, -inf}) {
    CAPTURE(x);
    CHECK_FALSE(space.Contains(&x));
  }
}

TEST_CASE("Box space") {
  const Space space = Space::Box({2}, {-1.f, 0.f}, {1.f, 2.5f});
  CHECK(space.flat_size() == 2);
  CHECK(space.ToString() == "Box(shape=[2], low=[-1, 0], high=[1, 2.5])");
  CHECK(Space::Box({2}, {-1.f, -1.f}, {1.f, 2.f}).ToString() ==
        "Box(shape=[2], low=-1, high=[1, 2])");
  CHECK(Space::Box({1}, {-2.f}, {2.f}).ToString() == "Box(shape=[1], low=[-2], high=[2])");
  const float inside[] = {-1.f, 2.5f};
  CHECK(space.Contains(inside));
  const float above[] = {0.f, 2.6f};
  CHECK_FALSE(space.Contains(above));
  const float nan[] = {std::nanf(""), 1.f};
  CHECK_FALSE(space.Contains(nan));
  CHECK(Space::Box({2, 3}, std::vector<float>(6, 0.f), std::vector<float>(6, 1.f)).flat_size() ==
        6);
}

TEST_CASE("Sample draws uniformly from the space, the same stream for the same seed") {
  const Space discrete = Space::Discrete(4);
  std::mt19937_64 rng(17);
  std::vector<int> count(4);
  constexpr int kDraws = 4000;
  for (int i = 0; i < kDraws; ++i) {
    float x = -1.f;
    discrete.Sample(rng, &x);
    REQUIRE(discrete.Contains(&x));
    ++count[static_cast<int>(x)];
  }
  // 1000 expected per index; 5 standard deviations is 137.
  for (int c : count) CHECK(std::abs(c - kDraws / 4) < 137);

  const Space box = Space::Box({2}, {-1.f, 10.f}, {1.f, 10.f});
  std::mt19937_64 a(5), b(5);
  float below = 0, above = 0;
  for (int i = 0; i < 1000; ++i) {
    float x[2], y[2];
    box.Sample(a, x);
    box.Sample(b, y);
    REQUIRE(box.Contains(x));
    REQUIRE(x[0] == y[0]);
    CHECK(x[1] == 10.f);
    below = std::min(below, x[0]);
    above = std::max(above, x[0]);
  }
  CHECK(below < -0.99f);
  CHECK(above > 0.99f);
}

TEST_CASE("a Discrete action float selects the nearest index, clamped, NaN as 0") {
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    float action;
    int index;
  };
  const Case cases[] = {{0.f, 0}, {1.f, 1},  {1.4f, 1}, {0.6f, 1}, {2.f, 2},
                        {7.f, 2}, {-1.f, 0}, {inf, 2},  {-inf, 0}, {std::nanf(""), 0}};
  for (const Case& c : cases) {
    CAPTURE(c.action);
    CHECK(internal::DiscreteActionIndex(c.action, 3) == c.index);
  }
}

TEST_CASE("UniformReal uses the standardized mt19937_64 stream, not a library algorithm") {
  std::mt19937_64 rng;  // Default seed 5489: the standard fixes its first output.
  const double expected = static_cast<double>(14514284786278117030ull >> 11) * 0x1.0p-53;
  CHECK(internal::UniformReal(rng, 0.0, 1.0) == expected);
  for (int i = 0; i < 1000; ++i) {
    const double x = internal::UniformReal(rng, -0.6, -0.4);
    REQUIRE(x >= -0.6);
    REQUIRE(x <= -0.4);
  }
}

}  // namespace
}  // namespace ferry::envs
