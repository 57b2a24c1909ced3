#include "actors/n_step.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace ferry::actors {
namespace {

constexpr int kObsDim = 2;
constexpr int kN = 3;
constexpr double kGamma = 0.9;

// Step t of an episode: obs_t = {t, -t}, action t % 2, Q(obs_t, a) = t / 4,
// reward t + 1, policy version 100 + t, next observation obs_t+1.
std::vector<float> Obs(int t) { return {static_cast<float>(t), static_cast<float>(-t)}; }
float QTaken(int t) { return static_cast<float>(t) / 4; }

void PushStep(NStepAccumulator& acc, int t, TransitionBuffer& out, bool terminated = false,
              bool truncated = false) {
  const std::vector<float> obs = Obs(t);
  const std::vector<float> next_obs = Obs(t + 1);
  acc.Push(obs.data(), t % 2, QTaken(t), static_cast<float>(t + 1), next_obs.data(), terminated,
           truncated, 100 + t, &out);
}

struct Expected {
  int first_step;  // The step whose obs, action and version the transition carries.
  double reward;
  double discount;
  int next_obs_step;  // The step whose observation is next_obs.
};

void CheckTransition(const TransitionBuffer& out, int i, const Expected& e) {
  CAPTURE(i);
  REQUIRE(i < out.size);
  CHECK(out.obs[i * kObsDim] == static_cast<float>(e.first_step));
  CHECK(out.obs[i * kObsDim + 1] == static_cast<float>(-e.first_step));
  CHECK(out.action[i] == e.first_step % 2);
  CHECK(out.q_taken[i] == QTaken(e.first_step));
  CHECK(out.policy_version[i] == 100 + e.first_step);
  CHECK(out.reward[i] == doctest::Approx(e.reward).epsilon(1e-6));
  CHECK(out.discount[i] == doctest::Approx(e.discount).epsilon(1e-6));
  CHECK(out.next_obs[i * kObsDim] == static_cast<float>(e.next_obs_step));
  CHECK(out.next_obs[i * kObsDim + 1] == static_cast<float>(-e.next_obs_step));
}

TEST_CASE("NStepAccumulator emits nothing before n steps") {
  NStepAccumulator acc(kObsDim, kN, kGamma);
  TransitionBuffer out(kObsDim, 16);
  PushStep(acc, 0, out);
  CHECK(out.size == 0);
  CHECK(acc.pending() == 1);
  PushStep(acc, 1, out);
  CHECK(out.size == 0);
  CHECK(acc.pending() == 2);
  PushStep(acc, 2, out);
  CHECK(out.size == 1);
  CHECK(acc.pending() == 2);
}

TEST_CASE("NStepAccumulator mid-episode transitions carry the n-step return") {
  NStepAccumulator acc(kObsDim, kN, kGamma);
  TransitionBuffer out(kObsDim, 16);
  for (int t = 0; t < 6; ++t) PushStep(acc, t, out);
  REQUIRE(out.size == 4);
  // Step k: r_k + 0.9 r_k+1 + 0.81 r_k+2 with r_t = t + 1; discount 0.9^3.
  CheckTransition(out, 0, {0, 1 + 0.9 * 2 + 0.81 * 3, 0.729, 3});  // 5.23
  CheckTransition(out, 1, {1, 2 + 0.9 * 3 + 0.81 * 4, 0.729, 4});  // 7.94
  CheckTransition(out, 2, {2, 3 + 0.9 * 4 + 0.81 * 5, 0.729, 5});  // 10.65
  CheckTransition(out, 3, {3, 4 + 0.9 * 5 + 0.81 * 6, 0.729, 6});  // 13.36
  CHECK(out.reward[0] == doctest::Approx(5.23));
  CHECK(acc.pending() == 2);
}

TEST_CASE("NStepAccumulator flushes partial returns without bootstrap on termination") {
  NStepAccumulator acc(kObsDim, kN, kGamma);
  TransitionBuffer out(kObsDim, 16);
  for (int t = 0; t < 4; ++t) PushStep(acc, t, out);
  REQUIRE(out.size == 2);
  PushStep(acc, 4, out, /*terminated=*/true);
  REQUIRE(out.size == 5);
  CHECK(acc.pending() == 0);
  // Every flushed step bootstraps from nothing and sees the final observation (obs_5).
  CheckTransition(out, 2, {2, 3 + 0.9 * 4 + 0.81 * 5, 0.0, 5});
  CheckTransition(out, 3, {3, 4 + 0.9 * 5, 0.0, 5});
  CheckTransition(out, 4, {4, 5, 0.0, 5});
}

TEST_CASE("NStepAccumulator bootstraps from the final observation on truncation") {
  NStepAccumulator acc(kObsDim, kN, kGamma);
  TransitionBuffer out(kObsDim, 16);
  for (int t = 0; t < 4; ++t) PushStep(acc, t, out);
  PushStep(acc, 4, out, /*terminated=*/false, /*truncated=*/true);
  REQUIRE(out.size == 5);
  CHECK(acc.pending() == 0);
  CheckTransition(out, 2, {2, 3 + 0.9 * 4 + 0.81 * 5, 0.729, 5});
  CheckTransition(out, 3, {3, 4 + 0.9 * 5, 0.81, 5});
  CheckTransition(out, 4, {4, 5, 0.9, 5});
}

TEST_CASE("NStepAccumulator treats terminated-and-truncated as terminated") {
  NStepAccumulator acc(kObsDim, kN, kGamma);
  TransitionBuffer out(kObsDim, 16);
  PushStep(acc, 0, out);
  PushStep(acc, 1, out, /*terminated=*/true, /*truncated=*/true);
  REQUIRE(out.size == 2);
  CheckTransition(out, 0, {0, 1 + 0.9 * 2, 0.0, 2});
  CheckTransition(out, 1, {1, 2, 0.0, 2});
}

TEST_CASE("NStepAccumulator handles episodes shorter than n") {
  NStepAccumulator acc(kObsDim, kN, kGamma);
  TransitionBuffer out(kObsDim, 16);

  SUBCASE("two steps, terminated") {
    PushStep(acc, 0, out);
    PushStep(acc, 1, out, /*terminated=*/true);
    REQUIRE(out.size == 2);
    CheckTransition(out, 0, {0, 2.8, 0.0, 2});
    CheckTransition(out, 1, {1, 2, 0.0, 2});
  }
  SUBCASE("two steps, truncated") {
    PushStep(acc, 0, out);
    PushStep(acc, 1, out, /*terminated=*/false, /*truncated=*/true);
    REQUIRE(out.size == 2);
    CheckTransition(out, 0, {0, 2.8, 0.81, 2});
    CheckTransition(out, 1, {1, 2, 0.9, 2});
  }
  SUBCASE("one step, terminated") {
    PushStep(acc, 0, out, /*terminated=*/true);
    REQUIRE(out.size == 1);
    CheckTransition(out, 0, {0, 1, 0.0, 1});
  }
  CHECK(acc.pending() == 0);
}

TEST_CASE("NStepAccumulator starts each episode afresh") {
  NStepAccumulator acc(kObsDim, kN, kGamma);
  TransitionBuffer out(kObsDim, 32);
  // Episodes of 4 and 5 steps leave the ring at different offsets when they end.
  for (int t = 0; t < 4; ++t) PushStep(acc, t, out, /*terminated=*/t == 3);
  REQUIRE(out.size == 4);
  for (int t = 10; t < 15; ++t) PushStep(acc, t, out, /*terminated=*/false, t == 14);
  REQUIRE(out.size == 9);
  // No reward of the first episode leaks into the second.
  CheckTransition(out, 4, {10, 11 + 0.9 * 12 + 0.81 * 13, 0.729, 13});
  CheckTransition(out, 5, {11, 12 + 0.9 * 13 + 0.81 * 14, 0.729, 14});
  CheckTransition(out, 6, {12, 13 + 0.9 * 14 + 0.81 * 15, 0.729, 15});
  CheckTransition(out, 7, {13, 14 + 0.9 * 15, 0.81, 15});
  CheckTransition(out, 8, {14, 15, 0.9, 15});
  PushStep(acc, 20, out);
  CHECK(out.size == 9);
  CHECK(acc.pending() == 1);
}

TEST_CASE("NStepAccumulator with n = 1 emits one-step transitions") {
  NStepAccumulator acc(kObsDim, /*n=*/1, kGamma);
  TransitionBuffer out(kObsDim, 8);
  PushStep(acc, 0, out);
  PushStep(acc, 1, out, /*terminated=*/true);
  REQUIRE(out.size == 2);
  CheckTransition(out, 0, {0, 1, 0.9, 1});
  CheckTransition(out, 1, {1, 2, 0.0, 2});
}

TEST_CASE("TransitionBuffer sizes its columns once and clears by count") {
  TransitionBuffer out(kObsDim, 5);
  CHECK(out.capacity() == 5);
  CHECK(out.obs.size() == 10);
  CHECK(out.next_obs.size() == 10);
  CHECK(out.action.size() == 5);
  CHECK(out.q_taken.size() == 5);
  CHECK(out.policy_version.size() == 5);
  NStepAccumulator acc(kObsDim, kN, kGamma);
  PushStep(acc, 0, out, /*terminated=*/true);
  CHECK(out.size == 1);
  out.Clear();
  CHECK(out.size == 0);
  CHECK(out.capacity() == 5);
}

TEST_CASE("TransitionBuffer drops handed-over rows and keeps the rest in order") {
  NStepAccumulator acc(kObsDim, /*n=*/1, kGamma);
  TransitionBuffer out(kObsDim, 8);
  for (int t = 0; t < 5; ++t) PushStep(acc, t, out, /*terminated=*/t == 4);
  REQUIRE(out.size == 5);
  out.DropFront(3);
  REQUIRE(out.size == 2);
  CheckTransition(out, 0, {3, 4, 0.9, 4});
  CheckTransition(out, 1, {4, 5, 0.0, 5});
  out.DropFront(0);
  CHECK(out.size == 2);
  out.DropFront(2);
  CHECK(out.size == 0);
  CHECK(out.capacity() == 8);
}

}  // namespace
}  // namespace ferry::actors
