// The classic-control envs against Gymnasium's published equations, written out
// here independently of the implementation: one or two steps from known
// states, the termination thresholds, the time limits and the reset ranges.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <numbers>
#include <vector>

#include "envs/classic_control/acrobot.h"
#include "envs/classic_control/cartpole.h"
#include "envs/classic_control/mountain_car.h"
#include "envs/classic_control/pendulum.h"

namespace ferry::envs::classic_control {
namespace {

constexpr double kPi = std::numbers::pi;

struct Transition {
  std::vector<float> obs;
  StepResult result;
};

Transition Step(Env& env, float action) {
  Transition t;
  t.obs.resize(env.observation_space().flat_size());
  t.result = env.Step(&action, t.obs.data());
  return t;
}

std::vector<float> Reset(Env& env) {
  std::vector<float> obs(env.observation_space().flat_size());
  env.Reset(obs.data());
  return obs;
}

// Float observations against double expectations: a few float ulps of slack.
void CheckObservation(const std::vector<float>& obs, std::initializer_list<double> expected) {
  REQUIRE(obs.size() == expected.size());
  size_t i = 0;
  for (double e : expected) {
    CAPTURE(i);
    CHECK(obs[i] == doctest::Approx(e).epsilon(1e-6));
    ++i;
  }
}

// --- CartPole-v1 -------------------------------------------------------------

// Gymnasium cartpole.py: the pole's angular and the cart's linear acceleration.
struct CartPoleAccelerations {
  double x_acc;
  double theta_acc;
};
CartPoleAccelerations CartPoleDynamics(double force, double theta, double theta_dot) {
  const double g = 9.8, mass_cart = 1.0, mass_pole = 0.1, half_length = 0.5;
  const double total_mass = mass_cart + mass_pole;
  const double pml = mass_pole * half_length;
  const double c = std::cos(theta), s = std::sin(theta);
  const double temp = (force + pml * theta_dot * theta_dot * s) / total_mass;
  const double theta_acc =
      (g * s - c * temp) / (half_length * (4.0 / 3.0 - mass_pole * c * c / total_mass));
  return {temp - pml * theta_acc * c / total_mass, theta_acc};
}

TEST_CASE("CartPole: from rest, pushing right gives the closed-form first step") {
  // temp = 10/1.1, theta_acc = -temp / (0.5 (4/3 - 0.1/1.1)) = -600/41,
  // x_acc = temp + 0.05 * 600/41 / 1.1 = 400/41; Euler with tau = 0.02.
  CartPoleEnv env(/*seed=*/1);
  env.SetState({0, 0, 0, 0});
  const Transition t = Step(env, 1.f);
  CheckObservation(t.obs, {0.0, 0.02 * 400.0 / 41.0, 0.0, 0.02 * -600.0 / 41.0});
  CHECK(t.result.reward == 1.f);
  CHECK_FALSE(t.result.terminated);
  CHECK_FALSE(t.result.truncated);
}

TEST_CASE("CartPole: two Euler steps from a tilted moving state") {
  CartPoleEnv env(/*seed=*/1);
  double x = 0.1, x_dot = -0.2, theta = 0.05, theta_dot = 0.3;
  const double tau = 0.02;
  env.SetState({x, x_dot, theta, theta_dot});
  for (float action : {0.f, 1.f}) {
    const auto [x_acc, theta_acc] =
        CartPoleDynamics(action == 1.f ? 10.0 : -10.0, theta, theta_dot);
    // Explicit Euler: positions move with the velocities from before the step.
    x += tau * x_dot;
    x_dot += tau * x_acc;
    theta += tau * theta_dot;
    theta_dot += tau * theta_acc;
    const Transition t = Step(env, action);
    CheckObservation(t.obs, {x, x_dot, theta, theta_dot});
    CHECK(t.result.reward == 1.f);
    CHECK_FALSE(t.result.terminated);
  }
}

TEST_CASE("CartPole: terminates past x = +-2.4 and theta = +-12 degrees, still rewarding 1") {
  struct Case {
    CartPoleEnv::State state;
    bool terminated;
  };
  // One step moves x by 0.02 x_dot and theta by 0.02 theta_dot; 12 degrees is
  // 0.20944 rad.
  const Case cases[] = {
      {{2.39, 1.0, 0, 0}, true},    // x -> 2.41
      {{-2.39, -1.0, 0, 0}, true},  // x -> -2.41
      {{2.39, 0.4, 0, 0}, false},   // x -> 2.398
      {{0, 0, 0.2, 1.0}, true},     // theta -> 0.22
      {{0, 0, -0.2, -1.0}, true},   // theta -> -0.22
      {{0, 0, 0.2, 0.4}, false},    // theta -> 0.208
  };
  for (const Case& c : cases) {
    CAPTURE(c.state.x);
    CAPTURE(c.state.theta);
    CartPoleEnv env(/*seed=*/1);
    env.SetState(c.state);
    const Transition t = Step(env, 0.f);
    CHECK(t.result.terminated == c.terminated);
    CHECK_FALSE(t.result.truncated);
    CHECK(t.result.reward == 1.f);
    CHECK(env.observation_space().Contains(t.obs.data()));
  }
}

TEST_CASE("CartPole: truncates exactly at step 500 and Reset restarts the count") {
  CartPoleEnv env(/*seed=*/1);
  env.SetState({0, 0, 0, 0}, /*elapsed_steps=*/498);
  Transition t = Step(env, 1.f);  // Step 499.
  CHECK_FALSE(t.result.truncated);
  t = Step(env, 0.f);  // Step 500.
  CHECK(t.result.truncated);
  CHECK_FALSE(t.result.terminated);
  CHECK(t.result.reward == 1.f);
  Reset(env);
  CHECK_FALSE(Step(env, 0.f).result.truncated);
}

// --- Acrobot-v1 --------------------------------------------------------------

using AcrobotState = std::array<double, 4>;

// Gymnasium acrobot.py _dsdt with book_or_nips = "book".
AcrobotState AcrobotDerivative(const AcrobotState& s, double a) {
  const double m1 = 1, m2 = 1, l1 = 1, lc1 = 0.5, lc2 = 0.5, i1 = 1, i2 = 1, g = 9.8;
  const double t1 = s[0], t2 = s[1], w1 = s[2], w2 = s[3];
  const double d1 =
      m1 * lc1 * lc1 + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * std::cos(t2)) + i1 + i2;
  const double d2 = m2 * (lc2 * lc2 + l1 * lc2 * std::cos(t2)) + i2;
  const double phi2 = m2 * lc2 * g * std::cos(t1 + t2 - kPi / 2);
  const double phi1 = -m2 * l1 * lc2 * w2 * w2 * std::sin(t2) -
                      2 * m2 * l1 * lc2 * w2 * w1 * std::sin(t2) +
                      (m1 * lc1 + m2 * l1) * g * std::cos(t1 - kPi / 2) + phi2;
  const double dd2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * w1 * w1 * std::sin(t2) - phi2) /
                     (m2 * lc2 * lc2 + i2 - d2 * d2 / d1);
  const double dd1 = -(d2 * dd2 + phi1) / d1;
  return {w1, w2, dd1, dd2};
}

// One RK4 step of dt = 0.2, before wrapping and clipping.
AcrobotState AcrobotRk4(const AcrobotState& y, double a) {
  const double dt = 0.2;
  auto shifted = [&](double h, const AcrobotState& k) {
    AcrobotState out;
    for (int i = 0; i < 4; ++i) out[i] = y[i] + h * k[i];
    return out;
  };
  const AcrobotState k1 = AcrobotDerivative(y, a);
  const AcrobotState k2 = AcrobotDerivative(shifted(dt / 2, k1), a);
  const AcrobotState k3 = AcrobotDerivative(shifted(dt / 2, k2), a);
  const AcrobotState k4 = AcrobotDerivative(shifted(dt, k3), a);
  AcrobotState out;
  for (int i = 0; i < 4; ++i) out[i] = y[i] + dt / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
  return out;
}

void CheckAcrobotObservation(const std::vector<float>& obs, const AcrobotState& s) {
  CheckObservation(obs, {std::cos(s[0]), std::sin(s[0]), std::cos(s[1]), std::sin(s[1]),
                         std::clamp(s[2], -4 * kPi, 4 * kPi), std::clamp(s[3], -9 * kPi, 9 * kPi)});
}

TEST_CASE("Acrobot: two RK4 steps with torques +1 then -1") {
  AcrobotEnv env(/*seed=*/1);
  AcrobotState s = {0.3, -0.2, 0.5, -1.0};
  env.SetState(s);
  s = AcrobotRk4(s, +1.0);
  Transition t = Step(env, 2.f);
  CheckAcrobotObservation(t.obs, s);
  CHECK(t.result.reward == -1.f);
  CHECK_FALSE(t.result.terminated);
  s = AcrobotRk4(s, -1.0);
  t = Step(env, 0.f);
  CheckAcrobotObservation(t.obs, s);
}

TEST_CASE("Acrobot: velocities clip to 4 pi and 9 pi") {
  SUBCASE("dtheta1") {
    const AcrobotState start = {kPi - 0.5, 0, 4 * kPi, 0};
    const AcrobotState unclipped = AcrobotRk4(start, 0.0);
    REQUIRE(unclipped[2] > 4 * kPi);
    REQUIRE(unclipped[0] > kPi);  // The angle wraps too.
    AcrobotEnv env(/*seed=*/1);
    env.SetState(start);
    const Transition t = Step(env, 1.f);
    CHECK(t.obs[4] == static_cast<float>(4 * kPi));
    CheckAcrobotObservation(t.obs, unclipped);
    CHECK(env.observation_space().Contains(t.obs.data()));
  }
  SUBCASE("dtheta2") {
    const AcrobotState start = {0, kPi / 2, 0, 9 * kPi};
    const AcrobotState unclipped = AcrobotRk4(start, 0.0);
    REQUIRE(unclipped[3] > 9 * kPi);
    AcrobotEnv env(/*seed=*/1);
    env.SetState(start);
    const Transition t = Step(env, 1.f);
    CHECK(t.obs[5] == static_cast<float>(9 * kPi));
    CheckAcrobotObservation(t.obs, unclipped);
  }
}

TEST_CASE("Acrobot: terminates when the tip rises above 1, with reward 0") {
  struct Case {
    AcrobotState state;
    bool terminated;
  };
  const Case cases[] = {
      {{kPi, 0, 0, 0}, true},    // Balanced upright: height 2.
      {{2.2, 0, 0, 0}, true},    // Falls back to a height of about 1.07.
      {{2.15, 0, 0, 0}, false},  // Falls back to a height of about 0.98.
  };
  for (const Case& c : cases) {
    CAPTURE(c.state[0]);
    const AcrobotState next = AcrobotRk4(c.state, 0.0);
    REQUIRE((-std::cos(next[0]) - std::cos(next[0] + next[1]) > 1.0) == c.terminated);
    AcrobotEnv env(/*seed=*/1);
    env.SetState(c.state);
    const Transition t = Step(env, 1.f);
    CHECK(t.result.terminated == c.terminated);
    CHECK(t.result.reward == (c.terminated ? 0.f : -1.f));
    CHECK_FALSE(t.result.truncated);
  }
}

TEST_CASE("Acrobot: hanging without torque truncates exactly at step 500") {
  AcrobotEnv env(/*seed=*/3);
  Reset(env);
  for (int step = 1; step < AcrobotEnv::kMaxEpisodeSteps; ++step) {
    const Transition t = Step(env, 1.f);
    REQUIRE_FALSE(t.result.terminated);
    REQUIRE_FALSE(t.result.truncated);
  }
  const Transition t = Step(env, 1.f);
  CHECK(t.result.truncated);
  CHECK_FALSE(t.result.terminated);
  CHECK(t.result.reward == -1.f);
}

// --- MountainCar-v0 ----------------------------------------------------------

TEST_CASE("MountainCar: one step per action from a known state") {
  // velocity += (action - 1) * 0.001 - 0.0025 cos(3 position); position += velocity.
  for (int action = 0; action < 3; ++action) {
    CAPTURE(action);
    MountainCarEnv env(/*seed=*/1);
    env.SetState({-0.5, 0.01});
    const double velocity = 0.01 + (action - 1) * 0.001 - 0.0025 * std::cos(3 * -0.5);
    const Transition t = Step(env, static_cast<float>(action));
    CheckObservation(t.obs, {-0.5 + velocity, velocity});
    CHECK(t.result.reward == -1.f);
    CHECK_FALSE(t.result.terminated);
  }
}

TEST_CASE("MountainCar: velocity clips at 0.07 and the left wall stops the car") {
  MountainCarEnv env(/*seed=*/1);
  SUBCASE("speed limit") {
    // 0.07 + 0.001 - 0.0025 cos(-1.5) = 0.0708 before the clip.
    env.SetState({-0.5, 0.07});
    CheckObservation(Step(env, 2.f).obs, {-0.5 + 0.07, 0.07});
  }
  SUBCASE("left wall") {
    // velocity -0.05 - 0.001 - 0.0025 cos(-3.57) = -0.0487 takes the car to
    // -1.2387, which clips to -1.2 and zeroes the velocity.
    env.SetState({-1.19, -0.05});
    const Transition t = Step(env, 0.f);
    CHECK(t.obs[0] == static_cast<float>(-1.2));
    CHECK(t.obs[1] == 0.f);
  }
}

TEST_CASE("MountainCar: reaching position 0.5 with velocity >= 0 terminates") {
  MountainCarEnv env(/*seed=*/1);
  SUBCASE("moving right past the flag") {
    // velocity 0.02 + 0.001 - 0.0025 cos(1.47) = 0.0207: position 0.5107.
    env.SetState({0.49, 0.02});
    const Transition t = Step(env, 2.f);
    CHECK(t.result.terminated);
    CHECK(t.result.reward == -1.f);
    CHECK_FALSE(t.result.truncated);
  }
  SUBCASE("rolling back left beyond the flag is not the goal") {
    env.SetState({0.55, -0.001});
    const Transition t = Step(env, 1.f);
    CHECK(t.obs[0] > 0.5f);
    CHECK(t.obs[1] < 0.f);
    CHECK_FALSE(t.result.terminated);
  }
  SUBCASE("just short of the flag") {
    env.SetState({0.47, 0.02});
    CHECK_FALSE(Step(env, 2.f).result.terminated);
  }
}

TEST_CASE("MountainCar: truncates exactly at step 200, together with a goal on that step") {
  SUBCASE("idling from reset never reaches the goal") {
    MountainCarEnv env(/*seed=*/5);
    Reset(env);
    for (int step = 1; step < MountainCarEnv::kMaxEpisodeSteps; ++step) {
      REQUIRE_FALSE(Step(env, 1.f).result.truncated);
    }
    const Transition t = Step(env, 1.f);
    CHECK(t.result.truncated);
    CHECK_FALSE(t.result.terminated);
  }
  SUBCASE("goal on the last step") {
    MountainCarEnv env(/*seed=*/5);
    env.SetState({0.49, 0.02}, /*elapsed_steps=*/199);
    const Transition t = Step(env, 2.f);
    CHECK(t.result.terminated);
    CHECK(t.result.truncated);
  }
}

// --- Pendulum-v1 -------------------------------------------------------------

// Gymnasium pendulum.py angle_normalize: Python's % takes the divisor's sign.
double AngleNormalize(double x) {
  const double period = 2 * kPi;
  return x + kPi - period * std::floor((x + kPi) / period) - kPi;
}

struct PendulumExpectation {
  double theta;
  double theta_dot;
  double reward;
};

// Gymnasium pendulum.py step with g = 10, m = l = 1, dt = 0.05, u already clipped.
PendulumExpectation PendulumStep(double theta, double theta_dot, double u) {
  const double g = 10, m = 1, l = 1, dt = 0.05;
  const double n = AngleNormalize(theta);
  const double cost = n * n + 0.1 * theta_dot * theta_dot + 0.001 * u * u;
  double new_theta_dot = theta_dot + (3 * g / (2 * l) * std::sin(theta) + 3 / (m * l * l) * u) * dt;
  new_theta_dot = std::clamp(new_theta_dot, -8.0, 8.0);
  return {theta + new_theta_dot * dt, new_theta_dot, -cost};
}

void CheckPendulumStep(PendulumEnv& env, float action, const PendulumExpectation& e) {
  const Transition t = Step(env, action);
  CheckObservation(t.obs, {std::cos(e.theta), std::sin(e.theta), e.theta_dot});
  CHECK(t.result.reward == doctest::Approx(e.reward).epsilon(1e-6));
  CHECK_FALSE(t.result.terminated);
  CHECK_FALSE(t.result.truncated);
}

TEST_CASE("Pendulum: two steps from a known state") {
  PendulumEnv env(/*seed=*/1);
  env.SetState({1.0, -0.5});
  const PendulumExpectation first = PendulumStep(1.0, -0.5, 1.5);
  CheckPendulumStep(env, 1.5f, first);
  CheckPendulumStep(env, -0.25f, PendulumStep(first.theta, first.theta_dot, -0.25));
}

TEST_CASE("Pendulum: the cost normalizes the angle, from either side") {
  for (double theta : {4.0, -4.0, 2 * kPi + 0.1}) {
    CAPTURE(theta);
    PendulumEnv env(/*seed=*/1);
    env.SetState({theta, 0.2});
    CheckPendulumStep(env, 0.f, PendulumStep(theta, 0.2, 0.0));
  }
  // By hand: 4 - 2 pi = -2.28319, so the cost is 5.21294 + 0.1 * 0.2^2.
  PendulumEnv env(/*seed=*/1);
  env.SetState({4.0, 0.2});
  CHECK(Step(env, 0.f).result.reward == doctest::Approx(-(5.21294 + 0.004)).epsilon(1e-5));
}

TEST_CASE("Pendulum: torque clips to [-2, 2], NaN acts as 0, speed clips to 8") {
  struct Case {
    float action;
    double applied;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const Case cases[] = {{5.f, 2.0}, {-inf, -2.0}, {std::nanf(""), 0.0}};
  for (const Case& c : cases) {
    CAPTURE(c.applied);
    PendulumEnv env(/*seed=*/1);
    env.SetState({0.5, 1.0});
    CheckPendulumStep(env, c.action, PendulumStep(0.5, 1.0, c.applied));
  }
  // 7.9 + (15 sin(pi/2) + 3 * 2) * 0.05 = 8.95 before the clip.
  PendulumEnv env(/*seed=*/1);
  env.SetState({kPi / 2, 7.9});
  const Transition t = Step(env, 2.f);
  CHECK(t.obs[2] == 8.f);
  CheckObservation(t.obs, {std::cos(kPi / 2 + 8 * 0.05), std::sin(kPi / 2 + 8 * 0.05), 8.0});
}

TEST_CASE("Pendulum: never terminates and truncates exactly at step 200") {
  PendulumEnv env(/*seed=*/2);
  Reset(env);
  for (int step = 1; step < PendulumEnv::kMaxEpisodeSteps; ++step) {
    const StepResult r = Step(env, 2.f).result;
    REQUIRE_FALSE(r.terminated);
    REQUIRE_FALSE(r.truncated);
  }
  const StepResult r = Step(env, 2.f).result;
  CHECK(r.truncated);
  CHECK_FALSE(r.terminated);
}

// --- Reset distributions -----------------------------------------------------

TEST_CASE("Reset draws initial states from the published ranges") {
  constexpr int kResets = 500;
  SUBCASE("CartPole: every element in [-0.05, 0.05]") {
    CartPoleEnv env(/*seed=*/11);
    float lo = 1, hi = -1;
    for (int i = 0; i < kResets; ++i) {
      for (float v : Reset(env)) {
        REQUIRE(std::abs(v) <= 0.05f);
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
    CHECK(lo < -0.049f);
    CHECK(hi > 0.049f);
  }
  SUBCASE("Acrobot: every state element in [-0.1, 0.1]") {
    AcrobotEnv env(/*seed=*/11);
    float lo = 1, hi = -1;
    for (int i = 0; i < kResets; ++i) {
      const std::vector<float> obs = Reset(env);
      // Slack for the float32 rounding of the angles and of their cos and sin.
      for (int a : {0, 2}) {
        REQUIRE(obs[a] >= std::cos(0.1) - 1e-6);
        REQUIRE(std::abs(obs[a + 1]) <= std::sin(0.1) + 1e-6);
      }
      for (int v : {4, 5}) {
        REQUIRE(std::abs(obs[v]) <= 0.1f);
        lo = std::min(lo, obs[v]);
        hi = std::max(hi, obs[v]);
      }
    }
    CHECK(lo < -0.099f);
    CHECK(hi > 0.099f);
  }
  SUBCASE("MountainCar: position in [-0.6, -0.4], velocity 0") {
    MountainCarEnv env(/*seed=*/11);
    float lo = 0, hi = -1;
    for (int i = 0; i < kResets; ++i) {
      const std::vector<float> obs = Reset(env);
      REQUIRE(obs[0] >= -0.6f);
      REQUIRE(obs[0] <= -0.4f);
      REQUIRE(obs[1] == 0.f);
      lo = std::min(lo, obs[0]);
      hi = std::max(hi, obs[0]);
    }
    CHECK(lo < -0.59f);
    CHECK(hi > -0.41f);
  }
  SUBCASE("Pendulum: theta in [-pi, pi], theta_dot in [-1, 1]") {
    PendulumEnv env(/*seed=*/11);
    float min_cos = 1, max_cos = -1, lo = 1, hi = -1;
    for (int i = 0; i < kResets; ++i) {
      const std::vector<float> obs = Reset(env);
      REQUIRE(std::abs(obs[2]) <= 1.f);
      min_cos = std::min(min_cos, obs[0]);
      max_cos = std::max(max_cos, obs[0]);
      lo = std::min(lo, obs[2]);
      hi = std::max(hi, obs[2]);
    }
    CHECK(min_cos < -0.99f);
    CHECK(max_cos > 0.99f);
    CHECK(lo < -0.99f);
    CHECK(hi > 0.99f);
  }
}

}  // namespace
}  // namespace ferry::envs::classic_control
