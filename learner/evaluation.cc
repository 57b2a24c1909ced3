#include "learner/evaluation.h"

#include <cmath>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/log.h"
#include "envs/env.h"
#include "learner/dqn_updater.h"

namespace ferry::learner {

Result<EvalResult> EvaluateGreedy(models::QNetwork& net, const std::string& env_id, int episodes,
                                  uint64_t seed, models::Inference inference) {
  std::vector<std::unique_ptr<envs::Env>> envs;
  for (int i = 0; i < episodes; ++i) {
    auto env = envs::MakeEnv(env_id, seed + static_cast<uint64_t>(i));
    if (!env.ok()) return env.status();
    envs.push_back(std::move(env).value());
  }
  // An evaluation's batches shrink from `episodes` to 1 as episodes end: checked at both ends
  // and the middle, as VectorActor checks its own.
  std::optional<models::FastMlp> fast;
  if (inference != models::Inference::kLibTorch && net->parameters().front().device().is_cpu()) {
    fast = models::ExactFastMlp(*net, {1, (episodes + 1) / 2, episodes});
  }
  if (inference == models::Inference::kFastMlp && !fast) {
    return InvalidArgument(
        "the fast MLP forward does not reproduce LibTorch's for this network here (a network "
        "off the CPU, no BLAS sgemm_, or other bits); evaluate with LibTorch");
  }
  const int obs_dim = envs[0]->observation_space().flat_size();
  const int num_actions = net->num_actions();
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
  torch::Tensor libtorch_q;
  torch::NoGradGuard no_grad;
  while (!active.empty()) {
    const int n = static_cast<int>(active.size());
    batch.resize(static_cast<size_t>(n) * obs_dim);
    for (int j = 0; j < n; ++j) {
      std::copy_n(&obs[static_cast<size_t>(active[j]) * obs_dim], obs_dim, &batch[j * obs_dim]);
    }
    const float* q;
    if (fast) {
      q = fast->Forward(batch.data(), n);
    } else {
      libtorch_q = net->forward(torch::from_blob(batch.data(), {n, obs_dim}).to(device))
                       .to(torch::kCPU)
                       .contiguous();
      q = libtorch_q.data_ptr<float>();
    }
    std::vector<int> still_active;
    for (int j = 0; j < n; ++j) {
      const int i = active[j];
      const float action = static_cast<float>(models::ArgMax(q + j * num_actions, num_actions));
      float* o = &obs[static_cast<size_t>(i) * obs_dim];
      const envs::StepResult r = envs[i]->Step(&action, o);
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

uint64_t PeriodicEvalSeed(const core::Config& config) {
  return config.seed * 1000003ull + 999983ull;
}

uint64_t FinalEvalSeed(const core::Config& config) { return config.seed * 1000003ull + 7777777ull; }

Status AddFinalEvaluations(const core::Config& config, DqnUpdater& updater,
                           const std::string& checkpoint_dir, core::MetricsRecord* record) {
  const int episodes = config.learner.final_eval_episodes;
  auto final_eval =
      EvaluateGreedy(updater.policy(), config.env.id, episodes, FinalEvalSeed(config));
  if (!final_eval.ok()) return final_eval.status();
  record->Add("final_eval_return", final_eval->mean_return)
      .Add("final_eval_std", final_eval->std_return)
      .Add("final_eval_episodes", final_eval->episodes);
  core::Log("final greedy evaluation on fresh episodes: mean return %.1f +- %.1f over %d",
            final_eval->mean_return, final_eval->std_return, final_eval->episodes);
  if (updater.policy().get() != updater.online().get()) {
    auto online_eval =
        EvaluateGreedy(updater.online(), config.env.id, episodes, FinalEvalSeed(config));
    if (!online_eval.ok()) return online_eval.status();
    record->Add("online_eval_return", online_eval->mean_return)
        .Add("online_eval_std", online_eval->std_return);
    core::Log("the online network, not averaged, on the same episodes: mean return %.1f +- %.1f",
              online_eval->mean_return, online_eval->std_return);
  }
  const UpdaterOptions& options = updater.options();
  models::QNetwork selected(options.obs_dim, options.num_actions, options.hidden);
  PolicyInfo info;
  if (!LoadPolicy(BestPolicyPath(checkpoint_dir), selected, &info).ok()) return Status::Ok();
  auto selected_eval = EvaluateGreedy(selected, config.env.id, episodes, FinalEvalSeed(config));
  if (!selected_eval.ok()) return selected_eval.status();
  record->Add("selected_eval_return", selected_eval->mean_return)
      .Add("selected_eval_std", selected_eval->std_return)
      .Add("selected_updates", static_cast<double>(info.updates))
      .Add("selected_env_steps", static_cast<double>(info.env_steps));
  core::Log(
      "the best periodic policy (update %lld, %lld env steps) on the same episodes: mean "
      "return %.1f +- %.1f",
      static_cast<long long>(info.updates), static_cast<long long>(info.env_steps),
      selected_eval->mean_return, selected_eval->std_return);
  return Status::Ok();
}

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
  return EvaluateGreedy(updater.policy(), config.env.id, episodes, seed);
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
