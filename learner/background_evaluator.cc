#include "learner/background_evaluator.h"

#include <unistd.h>

#include <utility>

#include "core/cpu_affinity.h"
#include "core/log.h"

namespace ferry::learner {

BackgroundEvaluator::BackgroundEvaluator(const UpdaterOptions& options, std::string env_id,
                                         int episodes, uint64_t seed, std::vector<int> idle_cpus)
    : env_id_(std::move(env_id)),
      episodes_(episodes),
      seed_(seed),
      idle_cpus_(std::move(idle_cpus)),
      copies_{models::QNetwork(options.obs_dim, options.num_actions, options.hidden),
              models::QNetwork(options.obs_dim, options.num_actions, options.hidden)},
      worker_([this] { Work(); }) {
  for (auto& copy : copies_) copy->eval();
  // Until the thread has placed itself, a wait could not tell which thread to raise.
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return placed_; });
}

BackgroundEvaluator::~BackgroundEvaluator() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void BackgroundEvaluator::Work() {
  bool idle = false;
  if (!idle_cpus_.empty()) {
    const Status placed = core::RunOnIdleTime(idle_cpus_);
    if (!placed.ok()) core::Log("evaluations at normal priority: %s", placed.message().c_str());
    idle = placed.ok();
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (idle) worker_tid_ = gettid();
  placed_ = true;
  cv_.notify_all();
  while (true) {
    cv_.wait(lock, [this] { return quit_ || (started_ && !done_); });
    // A started evaluation runs even when quit_ is set: the destructor waits for it.
    if (!started_ || done_) return;
    models::QNetwork& policy = *running_.policy;
    // Back to idle priority, should a wait for the evaluation before have raised it; not when
    // one waiting for this evaluation already has.
    if (idle && !raised_) core::RunAtIdlePriority(0);
    lock.unlock();
    Result<EvalResult> result = EvaluateGreedy(policy, env_id_, episodes_, seed_);
    lock.lock();
    result_ = std::move(result);
    done_ = true;
    cv_.notify_all();
  }
}

std::optional<FinishedEval> BackgroundEvaluator::Start(models::QNetwork& online, int64_t updates,
                                                       int64_t env_steps, double time) {
  std::optional<FinishedEval> previous = Wait();
  models::QNetwork& copy = copies_[next_copy_];
  next_copy_ = 1 - next_copy_;
  models::CopyParameters(*online, *copy);
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = FinishedEval{updates, env_steps, time, EvalResult{}, &copy};
    started_ = true;
    done_ = false;
    raised_ = false;
  }
  cv_.notify_all();
  return previous;
}

std::optional<FinishedEval> BackgroundEvaluator::Poll() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!started_ || !done_) return std::nullopt;
  return Collect();
}

std::optional<FinishedEval> BackgroundEvaluator::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!started_) return std::nullopt;
  const double t = core::NowSeconds();
  if (!done_ && worker_tid_ != 0 && !raise_refused_) {
    const Status raised = core::RunAtNormalPriority(worker_tid_);
    raised_ = true;
    if (!raised.ok()) {
      raise_refused_ = true;
      core::Log("evaluations the learner waits for stay at idle priority: %s",
                raised.message().c_str());
    }
  }
  cv_.wait(lock, [this] { return done_; });
  waited_seconds_ += core::NowSeconds() - t;
  return Collect();
}

FinishedEval BackgroundEvaluator::Collect() {
  FinishedEval done = running_;
  done.result = std::move(result_);
  result_ = EvalResult{};
  started_ = false;
  done_ = false;
  return done;
}

Status RecordEvaluation(const FinishedEval& done, const std::string& checkpoint_dir,
                        double* best_eval, core::MetricsWriter& metrics) {
  if (!done.result.ok()) return done.result.status();
  const EvalResult& eval = *done.result;
  // A tie goes to the later policy: trained on more data, and on an env whose return has a
  // ceiling (CartPole's 500) the first policy to touch it on the evaluation's start states is
  // often a lucky early one.
  if (eval.mean_return >= *best_eval) {
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
