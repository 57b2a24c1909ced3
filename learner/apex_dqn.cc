#include "learner/apex_dqn.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include "core/cpu_affinity.h"
#include "core/experience.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/topology.h"
#include "learner/background_evaluator.h"
#include "learner/dqn_updater.h"
#include "learner/evaluation.h"
#include "learner/gradient_reducer.h"
#include "learner/ls_refit.h"
#include "learner/prefetcher.h"
#include "learner/target_ahead.h"
#include "paramserver/client.h"

namespace ferry::learner {
namespace {

// Control slots in the fused gradient buffer (GradientReducer::control).
enum Control : int { kEndCode = 0, kSignalled, kMissingData, kLossSum, kEnvSteps, kNumControl };

// The policy lag of the data trained on, (learner version - policy version) per transition,
// over one report interval: a uniform reservoir of up to kKeep lags of rank 0's batches.
class LagStats {
 public:
  void Add(const replay::SampledBatch& s, int64_t updates) {
    versions_.resize(static_cast<size_t>(s.count));
    s.CopyColumn(core::kPolicyVersion, versions_.data());
    for (int i = 0; i < s.count; ++i) {
      if (versions_[i] < 0) continue;  // Inserted without a policy (random warm-up).
      const double lag = static_cast<double>(updates - versions_[i]);
      if (kept_.size() < kKeep) {
        kept_.push_back(lag);
      } else if (const uint64_t j = rng_() % (seen_ + 1); j < kKeep) {
        kept_[j] = lag;
      }
      ++seen_;
    }
  }
  // The q-quantile (0..1) of the interval's lags; NaN when there were none.
  double Quantile(double q) {
    if (kept_.empty()) return NAN;
    const auto at =
        kept_.begin() + static_cast<ptrdiff_t>(q * static_cast<double>(kept_.size() - 1));
    std::nth_element(kept_.begin(), at, kept_.end());
    return *at;
  }
  void Clear() {
    kept_.clear();
    seen_ = 0;
  }

 private:
  static constexpr size_t kKeep = 1 << 14;
  std::vector<double> kept_;
  uint64_t seen_ = 0;
  std::vector<int64_t> versions_;  // The batch's policy versions, reused.
  std::mt19937_64 rng_{12345};
};

void BroadcastParameters(models::QNetwork& net, MPI_Comm comm) {
  std::vector<uint8_t> blob = models::ToBlob(*net);
  MPI_Bcast(blob.data(), static_cast<int>(blob.size()), MPI_BYTE, 0, comm);
  FERRY_CHECK(models::FromBlob(*net, blob.data(), blob.size()).ok());
}

torch::Device PickDevice(const std::string& name) {
  return name == "cuda" ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
}

}  // namespace

Status CheckParametersAgree(DqnUpdater& updater, MPI_Comm comm) {
  const uint32_t mine = updater.ParameterChecksum();
  uint32_t bounds[2] = {mine, ~mine};  // The largest checksum, and the complement of the smallest.
  MPI_Allreduce(MPI_IN_PLACE, bounds, 2, MPI_UINT32_T, MPI_MAX, comm);
  if (bounds[0] != ~bounds[1]) {
    char checksums[80];
    std::snprintf(checksums, sizeof(checksums),
                  "parameter checksums from %08x to %08x, this rank's %08x", ~bounds[1], bounds[0],
                  mine);
    return Internal("learner ranks hold different parameters after " +
                    std::to_string(updater.updates()) + " updates (" + checksums + "); stopping");
  }
  return Status::Ok();
}

Result<RunEnd> RunLearner(const core::Config& config, bool resume, const std::atomic<bool>& stop) {
  torch::set_num_threads(1);
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  core::SetLogName("learner-" + std::to_string(rank));
  if (ranks != config.learner.ranks && rank == 0) {
    core::Log("running with %d MPI ranks (learner.ranks says %d)", ranks, config.learner.ranks);
  }
  if (config.learner.batch_size < ranks) {
    return InvalidArgument("learner.batch_size " + std::to_string(config.learner.batch_size) +
                           " is smaller than the number of ranks " + std::to_string(ranks));
  }
  if (config.learner.device == "cuda" && !torch::cuda::is_available()) {
    return InvalidArgument(
        "learner.device is cuda but LibTorch sees no CUDA device "
        "(build against a CUDA LibTorch with -DTorch_DIR=...)");
  }
  const torch::Device device = PickDevice(config.learner.device);

  const auto options = UpdaterOptionsFor(config);
  if (!options.ok()) return options.status();
  const int obs_dim = options->obs_dim;

  torch::manual_seed(config.seed);
  DqnUpdater updater(*options, device);
  const std::string run_dir = config.run.dir.empty() ? "." : config.run.dir;
  const std::string checkpoint_dir = run_dir + "/checkpoints";
  RunCounters counters;
  if (resume) {
    auto loaded = LoadNewestCheckpoint(checkpoint_dir, &updater, &counters);
    if (!loaded.ok()) return loaded.status();
    if (rank == 0) {
      core::Log("resumed from %s at update %lld", loaded->c_str(),
                static_cast<long long>(updater.updates()));
    }
    // A best policy saved after the checkpoint still counts: a later evaluation must match it.
    models::QNetwork probe(options->obs_dim, options->num_actions, options->hidden);
    PolicyInfo best;
    if (LoadPolicy(BestPolicyPath(checkpoint_dir), probe, &best).ok()) {
      counters.best_eval = std::max(counters.best_eval, best.eval_return);
    }
  } else {
    BroadcastParameters(updater.online(), comm);
    models::CopyParameters(*updater.online(), *updater.target());
  }
  FERRY_RETURN_IF_ERROR(CheckParametersAgree(updater, comm));

  zmq::context_t context(1);
  std::unique_ptr<paramserver::WeightsPublisher> publisher;
  core::MetricsWriter metrics;
  if (rank == 0) {
    std::error_code ec;
    std::filesystem::create_directories(checkpoint_dir, ec);
    // A fresh run in a used directory must not end by evaluating an earlier run's policy.
    if (!resume) std::filesystem::remove(BestPolicyPath(checkpoint_dir), ec);
    publisher =
        std::make_unique<paramserver::WeightsPublisher>(context, core::ParamServerEndpoint(config));
    const auto blob = models::ToBlob(*updater.online());
    publisher->Publish(updater.updates(), blob.data(), blob.size());
    FERRY_RETURN_IF_ERROR(metrics.Open(run_dir));
  }
  auto checkpoint = [&](const char* why) {
    const std::string path = CheckpointPath(checkpoint_dir, updater.updates());
    const double t = core::NowSeconds();
    const Status saved = updater.SaveCheckpoint(path, counters);
    if (!saved.ok()) {
      core::Log("checkpoint failed: %s", saved.message().c_str());
      return;
    }
    PruneCheckpoints(checkpoint_dir, /*keep=*/2);
    core::Log("checkpoint (%s) %s in %.0f ms", why, path.c_str(), (core::NowSeconds() - t) * 1e3);
  };

  double last_eval = NAN;
  auto record_eval = [&](const FinishedEval& done) {
    if (done.result.ok()) last_eval = done.result->mean_return;
    return RecordEvaluation(done, checkpoint_dir, &counters.best_eval, metrics);
  };

  const int global_batch = config.learner.batch_size;
  const int local_batch = global_batch / ranks + (rank < global_batch % ranks ? 1 : 0);
  // The target network's forward pass on the sampling thread (learner/target_ahead.h), where
  // the update runs without autograd.
  std::unique_ptr<TargetAhead> ahead;
  if (config.learner.target_ahead && !updater.autograd() && TargetAhead::Available()) {
    ahead = std::make_unique<TargetAhead>(*updater.target(), updater.target_version());
  }
  Prefetcher prefetcher(
      context, core::ReplayEndpoints(config), core::TransitionSchema(obs_dim, true, 1), 1000 + rank,
      config.seed * 104729ull + rank + updater.updates(), local_batch,
      config.learner.batches_per_request, config.replay.beta, /*depth=*/2, device, ahead.get());
  GradientReducerOptions reducer_options;
  reducer_options.algorithm = *linalg::ParseAlgorithm(config.learner.allreduce);
  reducer_options.overlap = config.learner.overlap_allreduce;
  reducer_options.bucket_bytes = static_cast<size_t>(config.learner.bucket_bytes);
  reducer_options.control_slots = kNumControl;
  GradientReducer reducer(updater.online()->parameters(), comm, reducer_options);
  if (rank == 0) {
    core::Log("gradient allreduce: %s, %s, %zu bucket(s)",
              std::string(linalg::AlgorithmName(reducer.algorithm())).c_str(),
              reducer_options.overlap ? "overlapped with backward" : "after backward",
              reducer.num_buckets());
  }

  // Started: every thread to the CPUs `ferry run` leaves the rest of the run; then this one,
  // the update thread, to its own (after every helper thread has started where it could run).
  const std::vector<int> start_cpus = core::AllowedCpus();
  FERRY_RETURN_IF_ERROR(core::MoveToRunCpus());
  if (config.learner.update_cpu >= 0) {
    const int cpu = core::UpdateCpu(config.learner.update_cpu, rank);
    FERRY_RETURN_IF_ERROR(core::RunOn({cpu}));
    core::Log("update thread on CPU %d", cpu);
  }
  // Rank 0's periodic evaluations run beside its updates (learner/background_evaluator.h). With
  // the update thread on a CPU of its own they take the time left on any CPU the learner started
  // on: on 2 cores the rest of the run keeps CPU 0 busy while the update thread waits for
  // batches on CPU 1, and there they play out instead.
  std::unique_ptr<BackgroundEvaluator> evaluator;
  if (rank == 0) {
    evaluator = std::make_unique<BackgroundEvaluator>(
        *options, config.env.id, config.learner.eval_episodes, PeriodicEvalSeed(config),
        config.learner.update_cpu >= 0 ? start_cpus : std::vector<int>{});
  }
  const double start = core::NowSeconds() - counters.elapsed_seconds;
  double wait_replay = 0, wait_allreduce = 0, compute = 0, rate_limited = 0;
  double last_report = core::NowSeconds();
  double last_checkpoint = last_report;
  int64_t updates_at_report = updater.updates(), steps_at_report = counters.env_steps;
  double loss_acc = 0;
  int loss_count = 0;
  int ahead_count = 0;      // Batches of the report interval whose target values came ahead.
  int64_t ahead_total = 0;  // The same over the whole session, since update first_update.
  const int64_t first_update = updater.updates();
  LagStats lags;
  int64_t replay_size = 0;
  RunEnd end = RunEnd::kStopped;

  while (true) {
    const double t0 = core::NowSeconds();
    auto sampled = prefetcher.Next(/*timeout_seconds=*/2.0);
    const double t1 = core::NowSeconds();
    wait_replay += t1 - t0;
    const bool have_data = sampled.ok();
    const bool came_ahead = have_data && sampled->batch.target_version == updater.target_version();
    torch::Tensor td;
    float local_loss = 0;
    if (have_data) {
      counters.env_steps = sampled->sampled.inserted_total;
      rate_limited += sampled->sampled.wait_seconds;
      replay_size = sampled->sampled.global_size;
      if (rank == 0) lags.Add(sampled->sampled, updater.updates());
      reducer.BeginBackward();
      DqnLoss loss = updater.ComputeGradients(sampled->batch, static_cast<double>(global_batch));
      td = loss.td.to(torch::kCPU);
      local_loss = loss.loss.item<float>();
    } else if (!stop.load()) {
      core::Log("no batch this step: %s", sampled.status().message().c_str());
    }

    int end_code = -1;
    if (rank == 0) {
      counters.elapsed_seconds = core::NowSeconds() - start;
      if (counters.best_eval >= config.stop.target_return &&
          counters.elapsed_seconds >= config.stop.min_seconds) {
        end_code = static_cast<int>(RunEnd::kTargetReached);
      } else if (counters.env_steps >= config.stop.max_env_steps ||
                 counters.elapsed_seconds >= config.stop.max_seconds) {
        end_code = static_cast<int>(RunEnd::kBudgetExhausted);
      }
    }
    float* control = reducer.control();
    control[kEndCode] = static_cast<float>(end_code + 1);
    control[kSignalled] = stop.load() ? 1.f : 0.f;
    control[kMissingData] = have_data ? 0.f : 1.f;
    control[kLossSum] = local_loss;
    // Rank 0's count, so every rank schedules the same learning rate.
    control[kEnvSteps] = rank == 0 ? static_cast<float>(counters.env_steps) : 0.f;
    const double t2 = core::NowSeconds();
    reducer.Reduce(have_data);
    const double t3 = core::NowSeconds();
    wait_allreduce += t3 - t2;

    if (control[kEndCode] > 0) {
      end = static_cast<RunEnd>(static_cast<int>(control[kEndCode]) - 1);
      break;
    }
    if (control[kSignalled] > 0) {
      end = RunEnd::kStopped;
      break;
    }
    if (control[kMissingData] > 0) continue;  // Skipped on every rank alike.

    updater.UnpackGradients(reducer);
    updater.ScheduleLearningRate(static_cast<int64_t>(control[kEnvSteps]));
    updater.ApplyGradients();
    if (ahead) ahead->Publish(*updater.target(), updater.target_version());
    const int64_t updates = updater.updates();
    loss_acc += control[kLossSum];
    ++loss_count;
    ahead_count += came_ahead ? 1 : 0;
    ahead_total += came_ahead ? 1 : 0;
    std::vector<float> priorities(td.numel());
    const float* td_data = td.data_ptr<float>();
    for (size_t i = 0; i < priorities.size(); ++i) {
      priorities[i] = std::abs(td_data[i]) + static_cast<float>(config.replay.priority_epsilon);
    }
    prefetcher.UpdatePriorities(sampled->sampled, priorities);
    if (updates % config.learner.checksum_period == 0) {
      FERRY_RETURN_IF_ERROR(CheckParametersAgree(updater, comm));
    }
    if (config.learner.lsdqn_period > 0 && updates % config.learner.lsdqn_period == 0) {
      std::vector<DqnBatch> refit_batches;
      const int wanted = std::max(1, config.learner.lsdqn_samples / ranks / local_batch);
      for (int i = 0; i < wanted; ++i) {
        auto extra = prefetcher.Next(/*timeout_seconds=*/5.0);
        if (extra.ok()) refit_batches.push_back(std::move(extra->batch));
      }
      auto refit = RefitHead(updater, refit_batches, config.learner.lsdqn_lambda,
                             config.learner.lsdqn_solver, comm);
      if (!refit.ok()) return refit.status();
      if (rank == 0) {
        metrics.Write(core::MetricsRecord()
                          .Add("time", core::NowSeconds() - start)
                          .Add("updates", static_cast<double>(updates))
                          .Add("lsdqn_rows", static_cast<double>(refit->rows))
                          .Add("lsdqn_head_change", refit->head_change)
                          .Add("lsdqn_features_s", refit->features_seconds)
                          .Add("lsdqn_gram_s", refit->gram_seconds)
                          .Add("lsdqn_allreduce_s", refit->allreduce_seconds)
                          .Add("lsdqn_solve_s", refit->solve_seconds)
                          .Add("lsdqn_regularised_more", refit->regularised_more ? 1.0 : 0.0));
      }
    }
    compute += core::NowSeconds() - t3 + (t2 - t1);
    if (rank != 0) continue;

    if (updates % config.learner.publish_period == 0) {
      const auto blob = models::ToBlob(*updater.online());
      publisher->Publish(updates, blob.data(), blob.size());
    }
    const double now = core::NowSeconds();
    if (updates % config.learner.eval_period == 0) {
      if (auto done =
              evaluator->Start(updater.policy(), updates, counters.env_steps, now - start)) {
        FERRY_RETURN_IF_ERROR(record_eval(*done));
      }
    }
    if (auto done = evaluator->Poll()) FERRY_RETURN_IF_ERROR(record_eval(*done));
    if (now - last_checkpoint >= config.learner.checkpoint_period_seconds) {
      checkpoint("periodic");
      last_checkpoint = now;
    }
    if (now - last_report >= 2.0) {
      const double dt = now - last_report;
      metrics.Write(core::MetricsRecord()
                        .Add("time", now - start)
                        .Add("updates", static_cast<double>(updates))
                        .Add("env_steps", static_cast<double>(counters.env_steps))
                        .Add("updates_per_s", (updates - updates_at_report) / dt)
                        .Add("env_steps_per_s", (counters.env_steps - steps_at_report) / dt)
                        .Add("loss", loss_count ? loss_acc / loss_count : NAN)
                        .Add("target_ahead_share",
                             loss_count ? static_cast<double>(ahead_count) / loss_count : NAN)
                        .Add("learning_rate", updater.learning_rate())
                        .Add("replay_size", static_cast<double>(replay_size))
                        .Add("policy_lag_median", lags.Quantile(0.5))
                        .Add("policy_lag_p90", lags.Quantile(0.9))
                        .Add("policy_lag_max", lags.Quantile(1.0))
                        .Add("wait_replay_s", wait_replay)
                        .Add("allreduce_s", wait_allreduce)
                        .Add("compute_s", compute)
                        .Add("rate_limited_s", rate_limited)
                        .Add("eval_wait_s", evaluator->waited_seconds())
                        .Add("last_eval_return", last_eval));
      last_report = now;
      updates_at_report = updates;
      steps_at_report = counters.env_steps;
      loss_acc = 0;
      loss_count = 0;
      ahead_count = 0;
      lags.Clear();
    }
  }

  if (rank == 0) {
    // The last periodic evaluation may still choose the best policy.
    if (auto done = evaluator->Wait()) FERRY_RETURN_IF_ERROR(record_eval(*done));
    counters.elapsed_seconds = core::NowSeconds() - start;
    checkpoint(end == RunEnd::kStopped ? "stop" : "end");
    const char* reason = end == RunEnd::kTargetReached     ? "target_reached"
                         : end == RunEnd::kBudgetExhausted ? "budget_exhausted"
                                                           : "stopped";
    core::MetricsRecord record;
    record.Add("time", counters.elapsed_seconds)
        .Add("updates", static_cast<double>(updater.updates()))
        .Add("env_steps", static_cast<double>(counters.env_steps))
        .Add("best_eval_return", counters.best_eval)
        .Add("target_ahead_share",
             updater.updates() > first_update
                 ? static_cast<double>(ahead_total) / (updater.updates() - first_update)
                 : NAN);
    if (end != RunEnd::kStopped) {
      FERRY_RETURN_IF_ERROR(AddFinalEvaluations(config, updater, checkpoint_dir, &record));
    }
    metrics.Write(record.Add("end", reason));
    core::Log("learner ended (%s) after %lld updates, %lld env steps, best eval return %.1f",
              reason, static_cast<long long>(updater.updates()),
              static_cast<long long>(counters.env_steps), counters.best_eval);
  }
  return end;
}

}  // namespace ferry::learner
