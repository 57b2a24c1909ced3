// Acting throughput, each figure beside a baseline measured in the same run.
//
//   env_steps  raw Env::Step on one core for every registered env, no policy:
//              random actions drawn from the action space before timing, Reset
//              when an episode ends (its cost counted, as EnvPool counts it)
//                vs copying one stored observation's bytes per step, the least
//                any acting loop does to hand an observation on
//
// Single-threaded; figures count this thread's CPU time (bench/bench.h says
// why), so they are per core.
//   usage: acting_bench [--quick] [--env=ID]
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "core/log.h"
#include "envs/env.h"

namespace ferry::bench {
namespace {

// Pre-drawn actions (and stored observations of the baseline), cycled through.
constexpr int kRing = 4096;
// Steps per timed call, so that reading the clock costs nothing next to them.
constexpr int kStepsPerCall = 256;

struct Settings {
  bool quick = false;
  int rounds = 7;          // Each figure is the median of this many timed windows.
  double window_s = 0.2;   // One timed window.
  double warmup_s = 0.05;  // Untimed run before the first window.
};

// A smoke run: every code path, figures too noisy to quote.
Settings QuickSettings() {
  Settings s;
  s.quick = true;
  s.rounds = 3;
  s.window_s = 0.03;
  s.warmup_s = 0.01;
  return s;
}

[[noreturn]] void Die(const std::string& what) {
  std::cerr << "acting_bench: " << what << std::endl;
  std::exit(1);
}

void EnvStepsBench(const Settings& s, const std::string& id) {
  Result<std::unique_ptr<envs::Env>> made = envs::MakeEnv(id, /*seed=*/1);
  if (!made.ok()) Die(made.status().ToString());
  envs::Env& env = **made;
  const int obs_size = env.observation_space().flat_size();
  const int action_size = env.action_space().flat_size();

  std::mt19937_64 rng(2);
  std::vector<float> actions(static_cast<size_t>(kRing) * action_size);
  for (int i = 0; i < kRing; ++i) env.action_space().Sample(rng, &actions[i * action_size]);
  std::vector<float> obs(obs_size);
  env.Reset(obs.data());
  int64_t steps = 0, episodes = 0;
  auto step_env = [&] {
    for (int i = 0; i < kStepsPerCall; ++i) {
      const float* action = &actions[(steps & (kRing - 1)) * action_size];
      const envs::StepResult result = env.Step(action, obs.data());
      ++steps;
      if (result.terminated || result.truncated) {
        env.Reset(obs.data());
        ++episodes;
      }
    }
    KeepAlive(obs.data());
    return int64_t{kStepsPerCall};
  };

  // The baseline moves the same bytes per step out of a ring of observations
  // as large as the ring of actions, reading the action as the env does.
  std::vector<float> stored(static_cast<size_t>(kRing) * obs_size);
  for (float& x : stored) x = static_cast<float>(rng() % 2);
  std::vector<float> copy(obs_size);
  int64_t copies = 0;
  float action_sum = 0;
  auto copy_obs = [&] {
    for (int i = 0; i < kStepsPerCall; ++i) {
      const int64_t slot = copies++ & (kRing - 1);
      action_sum += actions[slot * action_size];
      std::memcpy(copy.data(), &stored[slot * obs_size], obs_size * sizeof(float));
      KeepAlive(copy.data());
    }
    return int64_t{kStepsPerCall};
  };

  TimeOnThisThread(s.warmup_s, step_env);
  const std::vector<Figure> f =
      Alternate(s.rounds, {[&] { return TimeOnThisThread(s.window_s, step_env); },
                           [&] { return TimeOnThisThread(s.window_s, copy_obs); }});
  KeepAlive(&action_sum);
  JsonLine line("env_steps");
  line.Add("env", id)
      .Add("obs_floats", obs_size)
      .Add("action_space", env.action_space().ToString())
      .Add("value", f[0].cpu.median)
      .Add("unit", "env steps/s, per CPU second (one core)")
      .Add("clock", "thread CPU time")
      .Add("wall_value", f[0].wall.median)
      .Add("steps_per_episode", episodes > 0 ? static_cast<double>(steps) / episodes : NAN)
      .Add("baseline", "memcpy of one stored observation per step")
      .Add("baseline_value", f[1].cpu.median)
      .Add("ratio", PairedRatio(f[0], f[1], &Window::cpu_rate).median)
      .Add("min", f[0].cpu.min)
      .Add("max", f[0].cpu.max)
      .Add("rounds", s.rounds)
      .Add("window_s", s.window_s)
      .Add("load1", Load1())
      .Print();
}

int Main(int argc, char** argv) {
  Settings s;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      s = QuickSettings();
    } else if (arg.rfind("--env=", 0) == 0) {
      only = arg.substr(6);
    } else {
      std::cerr << "usage: acting_bench [--quick] [--env=ID]\n";
      return 2;
    }
  }
  const double start = core::NowSeconds();
  PrintMachineLine(s.quick);
  if (!only.empty()) {
    EnvStepsBench(s, only);  // Dies naming the registered ids if there is no such env.
  } else {
    for (const std::string& id : envs::RegisteredEnvs()) EnvStepsBench(s, id);
  }
  JsonLine("done").Add("seconds", core::NowSeconds() - start).Add("load1", Load1()).Print();
  return 0;
}

}  // namespace
}  // namespace ferry::bench

int main(int argc, char** argv) { return ferry::bench::Main(argc, argv); }
