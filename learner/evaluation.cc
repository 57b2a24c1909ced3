#include "learner/evaluation.h"

#include <cmath>
#include <filesystem>
#include <memory>
#include <vector>

#include "envs/env.h"
#include "learner/dqn_updater.h"

namespace ferry::learner {

Result<EvalResult> EvaluateGreedy(models::QNetwork& net, const std::string& env_id, int episodes,
                                  uint64_t seed) {
  std::vector<std::unique_ptr<envs::Env>> envs;
  for (int i = 0; i < episodes; ++i) {
    auto env = envs::MakeEnv(env_id, seed + static_cast<uint64_t>(i));
    if (!env.ok()) return env.status();
    envs.push_back(std::move(env).value());
  }
  const int obs_dim = envs[0]->observation_space().flat_size();
  const torch::Device device = net->parameters().front().device();
  std::vector<float> obs(static_cast<size_t>(episodes) * obs_dim);
  std::vector<double> returns(episodes, 0.0);
  std::vector<int> active(episodes);
  for (int i = 0; i < episodes; ++i) {
    envs[i]->Reset(&obs[static_cast<size_t>(i) * obs_dim]);
    active[i] = i;
  }
  EvalResult result;
  result.episodes = episodes;
  std::vector<float> batch;
  float action[1];
  torch::NoGradGuard no_grad;
  while (!active.empty()) {
    const int n = static_cast<int>(active.size());
    batch.resize(static_cast<size_t>(n) * obs_dim);
    for (int j = 0; j < n; ++j) {
      std::copy_n(&obs[static_cast<size_t>(active[j]) * obs_dim], obs_dim, &batch[j * obs_dim]);
    }
    const torch::Tensor greedy =
        net->forward(torch::from_blob(batch.data(), {n, obs_dim}).to(device))
            .argmax(1)
            .to(torch::kCPU);
    const int64_t* a = greedy.data_ptr<int64_t>();
    std::vector<int> still_active;
    for (int j = 0; j < n; ++j) {
      const int i = active[j];
      action[0] = static_cast<float>(a[j]);
      float* o = &obs[static_cast<size_t>(i) * obs_dim];
      const envs::StepResult r = envs[i]->Step(action, o);
      returns[i] += r.reward;
      ++result.steps;
      if (!r.terminated && !r.truncated) still_active.push_back(i);
    }
    active.swap(still_active);
  }
  double sum = 0, sq = 0;
  for (double r : returns) sum += r;
  result.mean_return = sum / episodes;
  for (double r : returns) sq += (r - result.mean_return) * (r - result.mean_return);
  result.std_return = std::sqrt(sq / episodes);
  return result;
}

uint64_t FinalEvalSeed(const core::Config& config) { return config.seed * 1000003ull + 7777777ull; }

Result<EvalResult> EvaluateCheckpoint(const core::Config& config, int episodes, uint64_t seed,
                                      std::string* checkpoint, int64_t* updates) {
  const auto options = UpdaterOptionsFor(config);
  if (!options.ok()) return options.status();
  DqnUpdater updater(*options, torch::Device(torch::kCPU));
  RunCounters counters;
  const std::string run_dir = config.run.dir.empty() ? "." : config.run.dir;
  auto loaded = LoadNewestCheckpoint(run_dir + "/checkpoints", &updater, &counters);
  if (!loaded.ok()) return loaded.status();
  *checkpoint = *loaded;
  *updates = updater.updates();
  return EvaluateGreedy(updater.online(), config.env.id, episodes, seed);
}

Result<EvalResult> EvaluateBestPolicy(const core::Config& config, int episodes, uint64_t seed,
                                      std::string* path, int64_t* updates) {
  const auto options = UpdaterOptionsFor(config);
  if (!options.ok()) return options.status();
  models::QNetwork net(options->obs_dim, options->num_actions, options->hidden);
  const std::string run_dir = config.run.dir.empty() ? "." : config.run.dir;
  *path = BestPolicyPath(run_dir + "/checkpoints");
  if (!std::filesystem::exists(*path)) {
    return NotFound("no best policy in this run (" + *path +
                    "): its learner never finished a periodic evaluation");
  }
  PolicyInfo info;
  FERRY_RETURN_IF_ERROR(LoadPolicy(*path, net, &info));
  *updates = info.updates;
  return EvaluateGreedy(net, config.env.id, episodes, seed);
}

}  // namespace ferry::learner
