// Every registered env through the generic Env contract: random valid actions
// for thousands of steps, reproducibility by seed, and the registry and Space
// behaviour the contract rests on.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "envs/env.h"

namespace ferry::envs {
namespace {

// A valid action drawn uniformly from `space` (whose bounds are finite).
void SampleAction(const Space& space, std::mt19937_64& rng, float* action) {
  if (space.kind == Space::Kind::kDiscrete) {
    action[0] = static_cast<float>(rng() % space.n);
    return;
  }
  for (int i = 0; i < space.flat_size(); ++i) {
    const float unit = static_cast<float>(rng() >> 40) * 0x1.0p-24f;
    action[i] = space.low[i] + (space.high[i] - space.low[i]) * unit;
  }
}

std::unique_ptr<Env> MakeOrDie(const std::string& id, uint64_t seed) {
  Result<std::unique_ptr<Env>> env = MakeEnv(id, seed);
  REQUIRE_MESSAGE(env.ok(), env.status().ToString());
  return std::move(env).value();
}

TEST_CASE("every registered env keeps the Env contract under random valid actions") {
  constexpr int kSteps = 5000;
  for (const std::string& id : RegisteredEnvs()) {
    CAPTURE(id);
    std::unique_ptr<Env> env = MakeOrDie(id, /*seed=*/42);
    const Space& observation_space = env->observation_space();
    const Space& action_space = env->action_space();
    REQUIRE(observation_space.kind == Space::Kind::kBox);
    std::vector<float> obs(observation_space.flat_size());
    std::vector<float> action(action_space.flat_size());
    std::mt19937_64 rng(7);

    env->Reset(obs.data());
    REQUIRE(observation_space.Contains(obs.data()));
    int length = 0, longest = 0, truncated_length = 0, episodes = 0;
    for (int step = 0; step < kSteps; ++step) {
      SampleAction(action_space, rng, action.data());
      REQUIRE(action_space.Contains(action.data()));
      const StepResult result = env->Step(action.data(), obs.data());
      ++length;
      REQUIRE(std::all_of(obs.begin(), obs.end(), [](float x) { return std::isfinite(x); }));
      REQUIRE(observation_space.Contains(obs.data()));
      REQUIRE(std::isfinite(result.reward));
      if (result.truncated) {
        // The time limit is one fixed episode length.
        if (truncated_length == 0) truncated_length = length;
        REQUIRE(length == truncated_length);
      }
      if (result.terminated || result.truncated) {
        longest = std::max(longest, length);
        length = 0;
        ++episodes;
        env->Reset(obs.data());
        REQUIRE(observation_space.Contains(obs.data()));
      }
    }
    CHECK(episodes > 0);
    if (truncated_length > 0) CHECK(longest <= truncated_length);
  }
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
    SampleAction(env->action_space(), rng, action.data());
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

TEST_CASE("the registry lists the classic-control ids, sorted and unique") {
  const std::vector<std::string> ids = RegisteredEnvs();
  CHECK(std::is_sorted(ids.begin(), ids.end()));
  CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
  for (const char* id : {"Acrobot-v1", "CartPole-v1", "MountainCar-v0", "Pendulum-v1"}) {
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
  const float inside[] = {-1.f, 2.5f};
  CHECK(space.Contains(inside));
  const float above[] = {0.f, 2.6f};
  CHECK_FALSE(space.Contains(above));
  const float nan[] = {std::nanf(""), 1.f};
  CHECK_FALSE(space.Contains(nan));
  CHECK(Space::Box({2, 3}, std::vector<float>(6, 0.f), std::vector<float>(6, 1.f)).flat_size() ==
        6);
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
