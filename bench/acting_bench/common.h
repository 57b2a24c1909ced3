// What the sections of acting_bench share: settings, the CartPole actor they build, and each
// section's entry point (acting.cc, weights.cc), which main.cc calls.
#ifndef FERRY_BENCH_ACTING_BENCH_COMMON_H_
#define FERRY_BENCH_ACTING_BENCH_COMMON_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actors/vector_actor.h"

namespace ferry::bench::acting_bench {

struct Settings {
  bool quick = false;
  int rounds = 7;          // Each figure is the median of this many timed windows.
  double window_s = 0.2;   // One timed window.
  double warmup_s = 0.05;  // Untimed run before the first window.
};

// A smoke run: every code path, figures too noisy to quote.
Settings QuickSettings();

[[noreturn]] void Die(const std::string& what);

inline constexpr int kCartPoleObs = 4;
inline constexpr int kCartPoleActions = 2;

// An actor of `num_envs` CartPoles with Ape-X epsilons and the given network.
actors::VectorActorOptions CartPoleActor(int num_envs, std::vector<int> hidden);
// The actor `options` describe, holding `weights` as version 1.
std::unique_ptr<actors::VectorActor> MakeActor(const actors::VectorActorOptions& options,
                                               const std::vector<uint8_t>& weights);

// acting.cc: the env_steps, actor_steps and greedy_eval lines.
void EnvStepsBench(const Settings& s, const std::string& id);
void ActorStepsBench(const Settings& s, int num_envs);
void GreedyEvalBench(const Settings& s, int episodes);

// weights.cc: the broadcast and server_memory lines, the step_gap lines and the follow lines.
void BroadcastSection(const Settings& s);
void StepGapSection(const Settings& s);
void FollowSection(const Settings& s);

}  // namespace ferry::bench::acting_bench

#endif  // FERRY_BENCH_ACTING_BENCH_COMMON_H_
