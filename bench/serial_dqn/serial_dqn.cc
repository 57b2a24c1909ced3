#include "bench/serial_dqn/serial_dqn.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "actors/actor.h"
#include "actors/vector_actor.h"
#include "core/experience.h"
#include "core/log.h"
#include "core/metrics.h"
#include "learner/background_evaluator.h"
#include "learner/dqn_updater.h"
#include "learner/evaluation.h"
#include "models/q_network.h"
#include "replay/global_sampling.h"
#include "replay/rate_limiter.h"
#include "replay/table.h"

namespace ferry::bench {
namespace {

// Column c of a sampled batch as a tensor of `count` rows of `per_row` values.
torch::Tensor Column(const replay::SampleBatch& s, int c, int count, int per_row,
                     torch::Dtype dtype) {
  std::vector<int64_t> shape = {count};
  if (per_row > 1) shape.push_back(per_row);
  torch::Tensor column = torch::empty(shape, dtype);
  std::memcpy(column.data_ptr(), s.columns[c].data(), s.columns[c].size());
  return column;
}

learner::DqnBatch ToTensors(const replay::SampleBatch& s, int count, int obs_dim,
                            std::vector<float> weights) {
  learner::DqnBatch b;
  b.obs = Column(s, core::kObs, count, obs_dim, torch::kFloat32);
  b.next_obs = Column(s, core::kNextObs, count, obs_dim, torch::kFloat32);
  b.action = Column(s, core::kAction, count, 1, torch::kInt32).to(torch::kInt64);
  b.reward = Column(s, core::kReward, count, 1, torch::kFloat32);
  b.discount = Column(s, core::kDiscount, count, 1, torch::kFloat32);
  b.weights = torch::from_blob(weights.data(), {count}).clone();
  return b;
}

// The one env of a ferry run's actor 0 (actors/actor.cc), acting at the rate of one slot.
actors::VectorActorOptions ActingOptions(const core::Config& config) {
  actors::VectorActorOptions options;
  options.env_id = config.env.id;
  options.env_seeds = {config.seed * 1000003ull};
  options.epsilon = {
      actors::ApexEpsilon(config.actors.epsilon, config.actors.epsilon_alpha, /*slot=*/0, 1)};
  options.seed = config.seed * 7919ull;
  options.hidden = config.model.hidden;
  options.n_step = config.actors.n_step;
  options.gamma = config.learner.gamma;
  options.insert_batch = 1;  // Stored as soon as complete.
  options.priority_epsilon = config.replay.priority_epsilon;
  return options;
}

}  // namespace

Result<learner::RunEnd> RunSerialDqn(const core::Config& config, const std::atomic<bool>& stop) {
  if (config.run.dir.empty()) return InvalidArgument("run.dir: the serial DQN needs one");
  if (config.learner.lsdqn_period > 0) {
    return InvalidArgument("learner.lsdqn_period: the serial DQN has no least-squares refit");
  }
  if (config.replay.selector != "prioritized" || config.replay.capacity_bytes > 0) {
    return InvalidArgument(
        "replay.selector / replay.capacity_bytes: the serial DQN samples a prioritized table "
        "of replay.capacity rows per shard");
  }
  models::UseOneInferenceThread();
  const auto options = learner::UpdaterOptionsFor(config);
  if (!options.ok()) return options.status();
  auto created = actors::VectorActor::Create(ActingOptions(config));
  if (!created.ok()) return created.status();
  actors::VectorActor& actor = **created;

  torch::manual_seed(config.seed);
  learner::DqnUpdater updater(*options, torch::kCPU);
  auto publish = [&] {
    const auto blob = models::ToBlob(*updater.online());
    return actor.LoadWeights(updater.updates(), blob.data(), blob.size());
  };
  FERRY_RETURN_IF_ERROR(publish());

  // One table holding what the config's shards hold together, one limiter as one shard has.
  replay::Table table(core::TransitionSchema(options->obs_dim, true, 1),
                      config.replay.capacity * config.replay.shards, config.replay.alpha);
  replay::RateLimiter limiter(config.replay.samples_per_insert, config.replay.min_size_to_sample,
                              config.replay.samples_per_insert_tolerance);
  std::mt19937_64 rng(config.seed * 104729ull);

  const std::string checkpoint_dir = config.run.dir + "/checkpoints";
  std::error_code ec;
  std::filesystem::create_directories(checkpoint_dir, ec);
  std::filesystem::remove(learner::BestPolicyPath(checkpoint_dir), ec);
  core::MetricsWriter metrics;
  FERRY_RETURN_IF_ERROR(metrics.Open(config.run.dir));

  const int batch_size = config.learner.batch_size;
  const double start = core::NowSeconds();
  double best_eval = -INFINITY, last_report = start, last_log = start;
  int64_t env_steps = 0, updates_at_report = 0, steps_at_report = 0;
  replay::SampleBatch sampled;
  learner::RunEnd end = learner::RunEnd::kStopped;
  while (!stop.load()) {
    actor.Step();
    if (actor.batch_ready()) {
      actors::InsertBatch batch = actor.TakeBatch();
      std::vector<const uint8_t*> columns;
      for (const auto& column : batch.columns) columns.push_back(column.data());
      table.Insert(batch.count, columns, batch.priorities.data());
      limiter.Inserted(batch.count);
      env_steps += batch.count;
    }
    while (limiter.CanSample(table.size()) && !stop.load()) {
      table.Sample(batch_size, rng, &sampled);
      limiter.Sampled(batch_size);
      std::vector<double> probabilities(batch_size);
      for (int i = 0; i < batch_size; ++i) {
        probabilities[i] = sampled.masses[i] / table.total_mass();
      }
      learner::DqnLoss loss = updater.ComputeGradients(
          ToTensors(
              sampled, batch_size, options->obs_dim,
              replay::ImportanceWeights(probabilities, table.size(),
                                        table.min_mass() / table.total_mass(), config.replay.beta)),
          batch_size);
      updater.ScheduleLearningRate(env_steps);
      updater.ApplyGradients();
      const torch::Tensor td = loss.td.contiguous();
      const float* td_data = td.data_ptr<float>();
      std::vector<float> priorities(batch_size);
      for (int i = 0; i < batch_size; ++i) {
        priorities[i] = std::abs(td_data[i]) + static_cast<float>(config.replay.priority_epsilon);
      }
      table.UpdatePriorities(sampled.keys.data(), priorities.data(), batch_size);
      const int64_t updates = updater.updates();
      if (updates % config.learner.publish_period == 0) FERRY_RETURN_IF_ERROR(publish());
      if (updates % config.learner.eval_period == 0) {
        learner::FinishedEval done;
        done.updates = updates;
        done.env_steps = env_steps;
        done.time = core::NowSeconds() - start;
        done.result =
            learner::EvaluateGreedy(updater.policy(), config.env.id, config.learner.eval_episodes,
                                    learner::PeriodicEvalSeed(config));
        done.policy = &updater.policy();
        FERRY_RETURN_IF_ERROR(learner::RecordEvaluation(done, checkpoint_dir, &best_eval, metrics));
      }
    }
    const double now = core::NowSeconds();
    if (best_eval >= config.stop.target_return && now - start >= config.stop.min_seconds) {
      end = learner::RunEnd::kTargetReached;
      break;
    }
    if (env_steps >= config.stop.max_env_steps || now - start >= config.stop.max_seconds) {
      end = learner::RunEnd::kBudgetExhausted;
      break;
    }
    if (now - last_report >= 2.0) {
      const double dt = now - last_report;
      metrics.Write(core::MetricsRecord()
                        .Add("time", now - start)
                        .Add("updates", static_cast<double>(updater.updates()))
                        .Add("env_steps", static_cast<double>(env_steps))
                        .Add("updates_per_s", (updater.updates() - updates_at_report) / dt)
                        .Add("env_steps_per_s", (env_steps - steps_at_report) / dt)
                        .Add("replay_size", static_cast<double>(table.size())));
      if (now - last_log >= 10.0) {
        core::Log("%.0f s: %lld env steps (%.0f/s), %lld updates (%.1f/s), best eval return %.1f",
                  now - start, static_cast<long long>(env_steps),
                  (env_steps - steps_at_report) / dt, static_cast<long long>(updater.updates()),
                  (updater.updates() - updates_at_report) / dt, best_eval);
        last_log = now;
      }
      last_report = now;
      updates_at_report = updater.updates();
      steps_at_report = env_steps;
    }
  }

  const char* reason = end == learner::RunEnd::kTargetReached     ? "target_reached"
                       : end == learner::RunEnd::kBudgetExhausted ? "budget_exhausted"
                                                                  : "stopped";
  core::MetricsRecord record;
  record.Add("time", core::NowSeconds() - start)
      .Add("updates", static_cast<double>(updater.updates()))
      .Add("env_steps", static_cast<double>(env_steps))
      .Add("best_eval_return", best_eval);
  if (end != learner::RunEnd::kStopped) {
    FERRY_RETURN_IF_ERROR(learner::AddFinalEvaluations(config, updater, checkpoint_dir, &record));
  }
  metrics.Write(record.Add("end", reason));
  core::Log("serial DQN ended (%s) after %lld updates, %lld env steps, best eval return %.1f",
            reason, static_cast<long long>(updater.updates()), static_cast<long long>(env_steps),
            best_eval);
  return end;
}

}  // namespace ferry::bench
