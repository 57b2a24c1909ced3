// LunarLander-v2 and LunarLanderContinuous-v2 against Gym's lunar_lander.py,
// checked from the outside: the reset state, free fall under gravity, what
// each engine does and costs, how a no-op episode ends, and Gym's own
// heuristic pilot landing as well as it does in Gym.
#include "envs/box2d/lunar_lander.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ferry::envs::box2d {
namespace {

using Observation = std::array<float, 8>;

// Gym's scale of the observation's vertical velocity: m/s times (H/2) / FPS.
constexpr double kVelocityYScale = (400.0 / 30.0 / 2.0) / 50.0;
// One step of gravity (-10 m/s^2 for 1/50 s) in observation units.
constexpr double kGravityStep = -10.0 / 50.0 * kVelocityYScale;

Observation Reset(Env& env) {
  Observation obs;
  env.Reset(obs.data());
  return obs;
}

StepResult Step(Env& env, std::array<float, 2> action, Observation& obs) {
  return env.Step(action.data(), obs.data());
}

// Gym's shaping of an observation; the reward of a step without a terminal
// bonus is its change, minus the fuel.
double Shaping(const Observation& s) {
  return -100 * std::sqrt(s[0] * s[0] + s[1] * s[1]) - 100 * std::sqrt(s[2] * s[2] + s[3] * s[3]) -
         100 * std::abs(s[4]) + 10 * s[6] + 10 * s[7];
}

// Gym's heuristic pilot (lunar_lander.py, heuristic()), written out here.
std::array<float, 2> Heuristic(const Observation& s, bool continuous) {
  const double angle_target = std::clamp(s[0] * 0.5 + s[2] * 1.0, -0.4, 0.4);
  const double hover_target = 0.55 * std::abs(s[0]);
  double angle_todo = (angle_target - s[4]) * 0.5 - s[5] * 1.0;
  double hover_todo = (hover_target - s[1]) * 0.5 - s[3] * 0.5;
  if (s[6] > 0 || s[7] > 0) {
    angle_todo = 0;
    hover_todo = -s[3] * 0.5;
  }
  if (continuous) {
    return {static_cast<float>(std::clamp(hover_todo * 20 - 1, -1.0, 1.0)),
            static_cast<float>(std::clamp(-angle_todo * 20, -1.0, 1.0))};
  }
  if (hover_todo > std::abs(angle_todo) && hover_todo > 0.05) return {2.f, 0.f};
  if (angle_todo < -0.05) return {3.f, 0.f};
  if (angle_todo > 0.05) return {1.f, 0.f};
  return {0.f, 0.f};
}

TEST_CASE("spaces and time limit") {
  const LunarLanderEnv discrete(/*seed=*/1, /*continuous=*/false);
  const LunarLanderEnv continuous(/*seed=*/1, /*continuous=*/true);
  CHECK(discrete.action_space().ToString() == "Discrete(4)");
  CHECK(continuous.action_space().ToString() == "Box(shape=[2], low=-1, high=1)");
  for (const LunarLanderEnv* env : {&discrete, &continuous}) {
    CHECK(env->observation_space().shape == std::vector<int>{8});
    CHECK(env->max_episode_steps() == 1000);
  }
}

TEST_CASE("reset: the lander at the top centre, pushed by a random force, legs in the air") {
  float min_vx = 0, max_vx = 0;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    CAPTURE(seed);
    LunarLanderEnv env(seed, /*continuous=*/false);
    const Observation obs = Reset(env);
    // One 1/50 s step of at most 1000 N per axis on a ~5 kg lander: < 4.2 m/s.
    CHECK(std::abs(obs[0]) < 0.01);
    CHECK(
        obs[1] ==
        doctest::Approx((400.0 / 30 - (100.0 / 30 + 18.0 / 30)) / (400.0 / 30 / 2)).epsilon(0.01));
    CHECK(std::abs(obs[2]) < 0.9);
    CHECK(std::abs(obs[3]) < 0.6);
    CHECK(std::abs(obs[4]) < 0.02);
    CHECK(obs[6] == 0.f);
    CHECK(obs[7] == 0.f);
    min_vx = std::min(min_vx, obs[2]);
    max_vx = std::max(max_vx, obs[2]);
  }
  CHECK(min_vx < -0.3f);
  CHECK(max_vx > 0.3f);
}

TEST_CASE("with no-ops the lander falls freely, touches down on a leg and the episode ends") {
  for (uint64_t seed = 0; seed < 5; ++seed) {
    CAPTURE(seed);
    LunarLanderEnv env(seed, /*continuous=*/false);
    Observation obs = Reset(env);
    bool leg_touched = false;
    StepResult result;
    int steps = 0;
    while (steps < 300) {
      const Observation before = obs;
      result = Step(env, {0.f, 0.f}, obs);
      ++steps;
      leg_touched = leg_touched || obs[6] > 0 || obs[7] > 0;
      if (result.terminated) break;
      if (!leg_touched) {
        // Free fall: gravity alone changes the velocity (the legs swinging
        // to their stops pull on the hull a little).
        CHECK(obs[3] - before[3] == doctest::Approx(kGravityStep).epsilon(0.1));
        CHECK(std::abs(obs[2] - before[2]) < 0.003);
      }
    }
    CHECK(result.terminated);
    CHECK_FALSE(result.truncated);
    CHECK(steps < 200);
    CHECK(leg_touched);
    CHECK(std::abs(result.reward) == 100.f);
  }
}

// Two landers with the same seed, stepped alike until one fires an engine:
// the engines' dispersion is drawn every step, so they stay in lockstep.
struct Twins {
  LunarLanderEnv fired;
  LunarLanderEnv idle;
  Observation fired_obs{};
  Observation idle_obs{};

  Twins(uint64_t seed, bool continuous, int steps_before)
      : fired(seed, continuous), idle(seed, continuous) {
    fired_obs = Reset(fired);
    idle_obs = Reset(idle);
    for (int i = 0; i < steps_before; ++i) {
      Step(fired, {0.f, 0.f}, fired_obs);
      Step(idle, {0.f, 0.f}, idle_obs);
    }
    REQUIRE(fired_obs == idle_obs);
  }
  StepResult Fire(std::array<float, 2> action) {
    Step(idle, {0.f, 0.f}, idle_obs);
    return Step(fired, action, fired_obs);
  }
};

TEST_CASE("the main engine slows the fall; the side engines push sideways and turn the lander") {
  for (uint64_t seed = 0; seed < 5; ++seed) {
    CAPTURE(seed);
    {
      Twins twins(seed, /*continuous=*/false, /*steps_before=*/10);
      twins.Fire({2.f, 0.f});
      // An impulse of 13 x (4 +- 2) / 30 Ns on ~5 kg: 0.17..0.52 m/s upwards.
      const double dv = (twins.fired_obs[3] - twins.idle_obs[3]) / kVelocityYScale;
      CHECK(dv > 0.1);
      CHECK(dv < 0.6);
    }
    {
      // Engine 1, on the left of the hull's top, pushes left and turns it
      // counter-clockwise; engine 3 the opposite.
      Twins left(seed, /*continuous=*/false, /*steps_before=*/10);
      left.Fire({1.f, 0.f});
      CHECK(left.fired_obs[2] < left.idle_obs[2]);
      CHECK(left.fired_obs[5] > left.idle_obs[5]);
      Twins right(seed, /*continuous=*/false, /*steps_before=*/10);
      right.Fire({3.f, 0.f});
      CHECK(right.fired_obs[2] > right.idle_obs[2]);
      CHECK(right.fired_obs[5] < right.idle_obs[5]);
    }
    {
      // Continuous throttles below the engines' thresholds do nothing.
      Twins twins(seed, /*continuous=*/true, /*steps_before=*/10);
      twins.Fire({-0.3f, 0.5f});
      CHECK(twins.fired_obs == twins.idle_obs);
      twins.Fire({0.f, -0.5f});
      CHECK(twins.fired_obs == twins.idle_obs);
      twins.Fire({0.01f, 0.f});
      CHECK(twins.fired_obs[3] > twins.idle_obs[3]);
    }
  }
}

TEST_CASE("the reward is the change of shaping minus 0.3 per unit of main and 0.03 of side power") {
  struct Case {
    bool continuous;
    std::array<float, 2> action;
    double fuel;
  };
  const Case cases[] = {
      {false, {0.f, 0.f}, 0.0},    {false, {1.f, 0.f}, 0.03},  {false, {2.f, 0.f}, 0.3},
      {false, {3.f, 0.f}, 0.03},   {true, {-1.f, 0.f}, 0.0},   {true, {0.f, 0.f}, 0.0},
      {true, {0.5f, 0.f}, 0.225},  {true, {1.f, 0.f}, 0.3},    {true, {2.f, 0.f}, 0.3},
      {true, {-1.f, 0.7f}, 0.021}, {true, {-1.f, -1.f}, 0.03}, {true, {-1.f, 0.4f}, 0.0},
      {true, {0.2f, -0.9f}, 0.207}};
  for (const Case& c : cases) {
    CAPTURE(c.continuous);
    CAPTURE(c.action[0]);
    CAPTURE(c.action[1]);
    LunarLanderEnv env(/*seed=*/3, c.continuous);
    Observation obs = Reset(env);
    for (int step = 0; step < 5; ++step) {
      const Observation before = obs;
      const StepResult result = Step(env, c.action, obs);
      REQUIRE_FALSE(result.terminated);
      // Float observations against the env's double shaping: ~1e-5 apart.
      CHECK(std::abs(result.reward - (Shaping(obs) - Shaping(before) - c.fuel)) < 1e-3);
    }
  }
}

TEST_CASE("Gym's heuristic pilot lands as it does in Gym") {
  for (bool continuous : {false, true}) {
    CAPTURE(continuous);
    constexpr int kEpisodes = 10;
    double total = 0;
    int landed = 0;
    for (uint64_t seed = 0; seed < kEpisodes; ++seed) {
      LunarLanderEnv env(seed, continuous);
      Observation obs = Reset(env);
      double episode_return = 0;
      StepResult result;
      do {
        result = Step(env, Heuristic(obs, continuous), obs);
        episode_return += result.reward;
      } while (!result.terminated && !result.truncated);
      total += episode_return;
      landed += result.terminated && result.reward == 100.f;
    }
    // Gym's heuristic scores above the 200 that counts as solved.
    CHECK(total / kEpisodes > 200);
    CHECK(landed >= kEpisodes - 2);
  }
}

}  // namespace
}  // namespace ferry::envs::box2d
