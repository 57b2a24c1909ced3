// The env_steps, actor_steps and greedy_eval sections (main.cc describes every line).
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "actors/actor.h"
#include "actors/vector_actor.h"
#include "bench/acting_bench/common.h"
#include "bench/bench.h"
#include "core/log.h"
#include "envs/env.h"
#include "learner/evaluation.h"
#include "models/fast_mlp.h"
#include "models/q_network.h"

namespace ferry::bench::acting_bench {
namespace {

// Pre-drawn actions (and stored observations of the baseline), cycled through.
constexpr int kRing = 4096;
// Steps per timed call, so that reading the clock costs nothing next to them.
constexpr int kStepsPerCall = 256;

}  // namespace

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
      .Add("ratio", PairedRatio(f[0], f[1], &Window::cpu_rate).median);
  AddWindowSummary(line, f[0].cpu, s.rounds, s.window_s);
  line.Print();
}

void ActorStepsBench(const Settings& s, int num_envs) {
  const std::vector<int> hidden = {64, 64};
  torch::manual_seed(5);
  models::QNetwork net(kCartPoleObs, kCartPoleActions, hidden);
  net->eval();
  const std::vector<uint8_t> weights = models::ToBlob(*net);
  auto actor = MakeActor(CartPoleActor(num_envs, hidden), weights);

  const int steps_per_call = std::max(1, kStepsPerCall / num_envs);
  auto act = [&] {
    for (int i = 0; i < steps_per_call; ++i) {
      actor->Step();
      if (actor->batch_ready()) {
        const actors::InsertBatch batch = actor->TakeBatch();  // The local sink.
        KeepAlive(batch.priorities.data());
      }
    }
    return int64_t{steps_per_call} * num_envs;
  };
  // The baseline: the same envs, stepped with actions drawn before timing, reset at episode ends.
  std::vector<std::unique_ptr<envs::Env>> envs;
  for (int e = 0; e < num_envs; ++e) {
    Result<std::unique_ptr<envs::Env>> made = envs::MakeEnv("CartPole-v1", 1000 + e);
    if (!made.ok()) Die(made.status().ToString());
    envs.push_back(std::move(made).value());
  }
  std::vector<float> env_obs(static_cast<size_t>(num_envs) * kCartPoleObs);
  for (int e = 0; e < num_envs; ++e) envs[e]->Reset(&env_obs[e * kCartPoleObs]);
  std::mt19937_64 action_rng(4);
  std::vector<float> actions(kRing);
  for (float& a : actions) a = static_cast<float>(action_rng() % kCartPoleActions);
  int64_t env_steps = 0;
  auto step_envs = [&] {
    for (int i = 0; i < steps_per_call; ++i) {
      for (int e = 0; e < num_envs; ++e) {
        float* o = &env_obs[e * kCartPoleObs];
        const envs::StepResult r = envs[e]->Step(&actions[env_steps++ & (kRing - 1)], o);
        if (r.terminated || r.truncated) envs[e]->Reset(o);
      }
    }
    KeepAlive(env_obs.data());
    return int64_t{steps_per_call} * num_envs;
  };
  // The action inference alone, on one fixed batch of observations.
  std::vector<float> obs(static_cast<size_t>(num_envs) * kCartPoleObs);
  std::mt19937_64 rng(6);
  std::normal_distribution<float> normal(0.f, 0.1f);
  for (float& x : obs) x = normal(rng);
  models::FastMlp fast_mlp = models::FastMlpOf(*net);
  auto libtorch_forward = [&] {
    torch::NoGradGuard no_grad;
    for (int i = 0; i < steps_per_call; ++i) {
      const torch::Tensor q = net->forward(torch::from_blob(obs.data(), {num_envs, kCartPoleObs}));
      KeepAlive(q.data_ptr<float>());
    }
    return int64_t{steps_per_call} * num_envs;
  };
  auto fast_forward = [&] {
    for (int i = 0; i < steps_per_call; ++i) KeepAlive(fast_mlp.Forward(obs.data(), num_envs));
    return int64_t{steps_per_call} * num_envs;
  };

  TimeOnThisThread(s.warmup_s, act);
  TimeOnThisThread(s.warmup_s, step_envs);
  const std::vector<Figure> f =
      Alternate(s.rounds, {[&] { return TimeOnThisThread(s.window_s, act); },
                           [&] { return TimeOnThisThread(s.window_s, step_envs); },
                           [&] { return TimeOnThisThread(s.window_s, fast_forward); },
                           [&] { return TimeOnThisThread(s.window_s, libtorch_forward); }});
  const auto ns_per_step = [](double rate) { return 1e9 / rate; };
  JsonLine line("actor_steps");
  line.Add("env", "CartPole-v1")
      .Add("envs_per_actor", num_envs)
      .Add("model", "MLP 4-64-64-2")
      .Add("includes",
           "inference, Ape-X epsilon-greedy, Env::Step+Reset, 3-step accumulation, "
           "priorities from acting Q-values, TakeBatch per 64 transitions (columns built); "
           "no send")
      .Add("value", f[0].cpu.median)
      .Add("unit", "env steps/s, per CPU second (one core)")
      .Add("clock", "thread CPU time")
      .Add("wall_value", f[0].wall.median)
      .Add("baseline", "the same envs stepped alone, actions drawn before timing")
      .Add("baseline_value", f[1].cpu.median)
      .Add("ratio", PairedRatio(f[0], f[1], &Window::cpu_rate).median)
      .Add("actor_ns_per_step", ns_per_step(f[0].cpu.median))
      .Add("envs_ns_per_step", ns_per_step(f[1].cpu.median))
      .Add("fast_inference_ns_per_step", ns_per_step(f[2].cpu.median))
      .Add("libtorch_inference_ns_per_step", ns_per_step(f[3].cpu.median));
  AddWindowSummary(line, f[0].cpu, s.rounds, s.window_s);
  line.Print();
}

void GreedyEvalBench(const Settings& s, int episodes) {
  const std::string env_id = "MountainCar-v0";
  const std::vector<int> hidden = {256, 256};
  torch::manual_seed(7);
  models::QNetwork net(2, 3, hidden);  // MountainCar: 2 observations, 3 actions.
  net->eval();
  // An untrained policy never reaches the flag, so every episode runs to the 200-step limit.
  auto evaluate = [&](models::Inference inference) {
    return [&, inference] {
      const auto r = learner::EvaluateGreedy(net, env_id, episodes, /*seed=*/11, inference);
      if (!r.ok()) Die("greedy_eval: " + r.status().message());
      return r->steps;
    };
  };
  const auto fast = evaluate(models::Inference::kFastMlp);
  const auto libtorch = evaluate(models::Inference::kLibTorch);
  TimeOnThisThread(s.warmup_s, fast);
  TimeOnThisThread(s.warmup_s, libtorch);
  const std::vector<Figure> f =
      Alternate(s.rounds, {[&] { return TimeOnThisThread(s.window_s, fast); },
                           [&] { return TimeOnThisThread(s.window_s, libtorch); }});
  JsonLine line("greedy_eval");
  line.Add("env", env_id)
      .Add("episodes", episodes)
      .Add("model", "MLP 2-256-256-3")
      .Add("includes",
           "learner::EvaluateGreedy: env construction and Reset, one batched forward per step "
           "over the episodes still running, greedy actions, Env::Step; 200 steps an episode")
      .Add("value", f[0].cpu.median)
      .Add("unit", "env steps/s, per CPU second (one core)")
      .Add("clock", "thread CPU time")
      .Add("wall_value", f[0].wall.median)
      .Add("baseline", "the same evaluation on LibTorch's forward (the same episodes, to the bit)")
      .Add("baseline_value", f[1].cpu.median)
      .Add("ratio", PairedRatio(f[0], f[1], &Window::cpu_rate).median)
      .Add("ms_per_evaluation", 1e3 * episodes * 200 / f[0].cpu.median)
      .Add("libtorch_ms_per_evaluation", 1e3 * episodes * 200 / f[1].cpu.median);
  AddWindowSummary(line, f[0].cpu, s.rounds, s.window_s);
  line.Print();
}

}  // namespace ferry::bench::acting_bench
