#include "learner/background_evaluator.h"

#include <chrono>
#include <utility>

#include "core/log.h"

namespace ferry::learner {

BackgroundEvaluator::BackgroundEvaluator(const UpdaterOptions& options, std::string env_id,
                                         int episodes, uint64_t seed)
    : env_id_(std::move(env_id)),
      episodes_(episodes),
      seed_(seed),
      copy_(options.obs_dim, options.num_actions, options.hidden) {
  copy_->eval();
}

BackgroundEvaluator::~BackgroundEvaluator() {
  if (future_.valid()) future_.wait();
}

std::optional<FinishedEval> BackgroundEvaluator::Start(models::QNetwork& online, int64_t updates,
                                                       int64_t env_steps, double time) {
  std::optional<FinishedEval> previous = Wait();
  models::CopyParameters(*online, *copy_);
  running_ = FinishedEval{updates, env_steps, time, EvalResult{}, &copy_};
  future_ = std::async(std::launch::async,
                       [this] { return EvaluateGreedy(copy_, env_id_, episodes_, seed_); });
  return previous;
}

std::optional<FinishedEval> BackgroundEvaluator::Poll() {
  if (!future_.valid() || future_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    return std::nullopt;
  }
  return Collect();
}

std::optional<FinishedEval> BackgroundEvaluator::Wait() {
  if (!future_.valid()) return std::nullopt;
  const double t = core::NowSeconds();
  future_.wait();
  waited_seconds_ += core::NowSeconds() - t;
  return Collect();
}

FinishedEval BackgroundEvaluator::Collect() {
  FinishedEval done = running_;
  done.result = future_.get();
  return done;
}

Status RecordEvaluation(const FinishedEval& done, const std::string& checkpoint_dir,
                        double* best_eval, core::MetricsWriter& metrics) {
  if (!done.result.ok()) return done.result.status();
  const EvalResult& eval = *done.result;
  if (eval.mean_return > *best_eval) {
    *best_eval = eval.mean_return;
    const Status saved = SavePolicy(*done.policy, {done.updates, done.env_steps, eval.mean_return},
                                    BestPolicyPath(checkpoint_dir));
    if (!saved.ok()) core::Log("best policy not kept: %s", saved.message().c_str());
  }
  metrics.Write(core::MetricsRecord()
                    .Add("time", done.time)
                    .Add("updates", static_cast<double>(done.updates))
                    .Add("env_steps", static_cast<double>(done.env_steps))
                    .Add("eval_return", eval.mean_return)
                    .Add("eval_return_std", eval.std_return)
                    .Add("eval_episodes", eval.episodes));
  core::Log("eval after %lld updates, %lld env steps: mean return %.1f +- %.1f over %d episodes",
            static_cast<long long>(done.updates), static_cast<long long>(done.env_steps),
            eval.mean_return, eval.std_return, eval.episodes);
  return Status::Ok();
}

}  // namespace ferry::learner
