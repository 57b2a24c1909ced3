// The learner's periodic greedy evaluations on a thread of their own, so that
// updates go on while the episodes play out. Each evaluation runs on a copy of
// the online network taken when it was due (Start), and hands that copy back
// with its result, for the learner to keep as its best policy.
//
//   learner thread:  Start(copy at update U) ... Poll() -> nothing ... Poll() -> U's result
//   evaluator:                 [ EvaluateGreedy(copy) ...................... ]
//
// One evaluation runs at a time: Start waits for the one before to finish and
// returns its result, so none is dropped and results come back in order; the
// copy that result hands back is not the one Start fills next. The
// evaluator's thread is started by its constructor and runs on the CPUs the
// constructing thread has then, or, given `idle_cpus`, on those at the kernel's
// idle priority: a learner whose update thread has a CPU of its own evaluates in
// the time that CPU and the others leave (the update thread's waits for batches),
// and when that is not enough, Start's wait for the evaluation before is such a time.
// An evaluation that Start or Wait waits for runs at the normal priority until it ends
// (where the process may raise it back: core::RunAtNormalPriority), so that other
// programs busy on every CPU cannot starve it while the learner waits; the next
// evaluation starts at idle priority again.
#ifndef FERRY_LEARNER_BACKGROUND_EVALUATOR_H_
#define FERRY_LEARNER_BACKGROUND_EVALUATOR_H_

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/metrics.h"
#include "core/status.h"
#include "learner/dqn_updater.h"
#include "learner/evaluation.h"
#include "models/q_network.h"

namespace ferry::learner {

// A finished evaluation of the copy taken after `updates` updates.
struct FinishedEval {
  int64_t updates = 0;
  int64_t env_steps = 0;  // The run's env steps when the copy was taken.
  double time = 0;        // The learner's clock when the copy was taken.
  Result<EvalResult> result = EvalResult{};
  // The evaluated copy; unchanged until the next Start.
  models::QNetwork* policy = nullptr;
};

class BackgroundEvaluator {
 public:
  // Evaluations of `episodes` episodes of `env_id` from env seed `seed` (the same start states
  // every time), of networks shaped as `options` says; at idle priority on `idle_cpus` unless
  // that is empty (core::RunOnIdleTime; logged and left when the kernel refuses).
  BackgroundEvaluator(const UpdaterOptions& options, std::string env_id, int episodes,
                      uint64_t seed, std::vector<int> idle_cpus = {});
  // Waits for a running evaluation (its result is dropped) and stops the thread.
  ~BackgroundEvaluator();
  BackgroundEvaluator(const BackgroundEvaluator&) = delete;
  BackgroundEvaluator& operator=(const BackgroundEvaluator&) = delete;

  // Copies `online` (on any device) and starts evaluating the copy. If the previous evaluation
  // is still running, waits for it first and returns it (nothing when Poll already has).
  std::optional<FinishedEval> Start(models::QNetwork& online, int64_t updates, int64_t env_steps,
                                    double time);
  // The running evaluation's result once it has finished, without waiting; nothing while it
  // runs or when none was started since the last result.
  std::optional<FinishedEval> Poll();
  // Waits for the running evaluation, if any, and returns it.
  std::optional<FinishedEval> Wait();
  // Seconds Start and Wait spent waiting for an evaluation, in all.
  double waited_seconds() const { return waited_seconds_; }

 private:
  void Work();
  FinishedEval Collect();  // Requires done_; mu_ held.

  const std::string env_id_;
  const int episodes_;
  const uint64_t seed_;
  const std::vector<int> idle_cpus_;
  // Evaluations alternate between two copies: the one Start returns (or Poll or Wait did) keeps
  // the parameters it was scored on while the next evaluation plays the other.
  models::QNetwork copies_[2];
  int next_copy_ = 0;     // The copy the next Start fills.
  FinishedEval running_;  // The running evaluation's copy data; its result comes in result_.
  double waited_seconds_ = 0;
  bool raise_refused_ = false;  // Raising the evaluator's priority failed once: not tried again.

  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;  // Started and not yet collected.
  bool done_ = false;     // result_ holds the running evaluation's result.
  bool quit_ = false;
  bool placed_ = false;   // The evaluator thread runs where, and at the priority, it should.
  pid_t worker_tid_ = 0;  // Its thread id when that priority is idle; 0 otherwise.
  bool raised_ = false;   // A wait has raised the running (or about to run) evaluation.
  Result<EvalResult> result_ = EvalResult{};
  std::thread worker_;  // Last: starts once the members above exist.
};

// What a run does with a finished periodic evaluation: writes its metrics record and log line,
// and keeps the evaluated copy as the run's best policy (BestPolicyPath(checkpoint_dir)) when
// its return equals or beats *best_eval, which then becomes that return. Returns the evaluation's
// own error when it failed.
Status RecordEvaluation(const FinishedEval& done, const std::string& checkpoint_dir,
                        double* best_eval, core::MetricsWriter& metrics);

}  // namespace ferry::learner

#endif  // FERRY_LEARNER_BACKGROUND_EVALUATOR_H_
