#include "actors/actor.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <zmq.hpp>

#include "actors/vector_actor.h"
#include "actors/weights_follower.h"
#include "core/cpu_affinity.h"
#include "core/experience.h"
#include "core/log.h"
#include "core/topology.h"
#include "replay/writer.h"

namespace ferry::actors {

namespace {

// The writer's durable-ack counters (replay/writer.h), for the actor's log lines.
std::string DurabilitySummary(const replay::ReplayWriter& writer) {
  char text[200];
  std::snprintf(text, sizeof(text),
                "retained %lld (%.1f MB), re-sent after shard restarts %lld, unprotected %lld",
                static_cast<long long>(writer.retained_transitions()),
                static_cast<double>(writer.retained_bytes()) / 1e6,
                static_cast<long long>(writer.restart_resent_transitions()),
                static_cast<long long>(writer.unprotected_transitions()));
  return text;
}

}  // namespace

double ApexEpsilon(double epsilon, double alpha, int slot, int slots) {
  if (slots <= 1) return epsilon;
  return std::pow(epsilon, 1.0 + static_cast<double>(slot) / (slots - 1) * alpha);
}

Status RunActor(const core::Config& config, int actor_id, const std::atomic<bool>& stop) {
  const int num_envs = config.actors.envs_per_actor;
  const int slots = config.actors.count * num_envs;
  VectorActorOptions options;
  options.env_id = config.env.id;
  for (int e = 0; e < num_envs; ++e) {
    options.env_seeds.push_back(config.seed * 1000003ull + actor_id * 1009ull + e);
    options.epsilon.push_back(ApexEpsilon(config.actors.epsilon, config.actors.epsilon_alpha,
                                          actor_id * num_envs + e, slots));
  }
  options.seed = config.seed * 7919ull + actor_id;
  options.hidden = config.model.hidden;
  options.n_step = config.actors.n_step;
  options.gamma = config.learner.gamma;
  options.insert_batch = config.actors.insert_batch;
  options.priority_epsilon = config.replay.priority_epsilon;
  Result<std::unique_ptr<VectorActor>> created = VectorActor::Create(options);
  if (!created.ok()) return created.status();
  VectorActor& actor = **created;
  const core::Schema schema = core::TransitionSchema(actor.obs_dim(), true, 1);

  zmq::context_t context(1);
  replay::WriterOptions writer_options;
  writer_options.actor_id = static_cast<uint32_t>(actor_id);
  writer_options.epoch =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  writer_options.max_in_flight = config.actors.max_in_flight;
  writer_options.resend_after = 5.0;
  writer_options.retain_bytes = config.actors.retain_bytes;
  replay::ReplayWriter writer(context, core::ReplayEndpoints(config), schema, writer_options);
  WeightsFollower weights(
      context, core::ParamServerEndpoint(config), core::BroadcastEndpoint(config),
      [&actor](const paramserver::WeightsBlob& blob, PreparedWeights* into) {
        return actor.PrepareWeights(blob.version, blob.data(), blob.size(), into);
      });

  core::Log("actor %d: %d x %s, epsilon %.4g..%.4g, sending to %d shards", actor_id, num_envs,
            config.env.id.c_str(), options.epsilon.front(), options.epsilon.back(),
            config.replay.shards);
  FERRY_RETURN_IF_ERROR(core::MoveToRunCpus());  // Started (core/cpu_affinity.h).
  double last_report = core::NowSeconds();
  int64_t steps_at_report = 0;
  int64_t acks_at_report = 0;
  double ack_wait_at_report = 0;
  while (!stop.load()) {
    Result<std::optional<PreparedWeights>> next = weights.Take();
    if (!next.ok()) return next.status();
    if (*next) {
      actor.AdoptWeights(**next);
      weights.Recycle(std::move(**next));
    }
    actor.Step();
    if (actor.batch_ready()) {
      InsertBatch batch = actor.TakeBatch();
      Status sent =
          writer.Write(batch.count, std::move(batch.columns), std::move(batch.priorities), stop);
      if (!sent.ok() && !stop.load()) return sent;
    }
    writer.Poll(0);
    const double now = core::NowSeconds();
    if (now - last_report >= 10.0) {
      // The mean time from writing a batch to its ack: behind a rate limiter, how old the
      // policy that acted it is by the time the learner can sample it.
      const int64_t acks = writer.acked_batches() - acks_at_report;
      const double ack_ms =
          acks > 0 ? 1e3 * (writer.ack_wait_seconds() - ack_wait_at_report) / acks : NAN;
      core::Log(
          "actor %d: %lld steps (%.0f/s), acked %lld (%.0f ms after writing), "
          "in flight %lld of %lld, %s, policy v%lld, recent return %.1f",
          actor_id, static_cast<long long>(actor.steps()),
          (actor.steps() - steps_at_report) / (now - last_report),
          static_cast<long long>(writer.acked_transitions()), ack_ms,
          static_cast<long long>(writer.in_flight()), static_cast<long long>(writer.window()),
          DurabilitySummary(writer).c_str(), static_cast<long long>(actor.policy_version()),
          actor.RecentMeanReturn());
      last_report = now;
      steps_at_report = actor.steps();
      acks_at_report = writer.acked_batches();
      ack_wait_at_report = writer.ack_wait_seconds();
    }
  }
  // A shard acks within milliseconds, except an insert its rate limiter holds back, which at the
  // end of a run (no learner sampling any more) it never admits: waiting longer only delays
  // the shards' final snapshots.
  const Status flushed = writer.Flush(/*timeout_seconds=*/0.5);
  core::Log(
      "actor %d: stopped after %lld steps, %lld transitions acked, %s, %lld steps not sent (in "
      "n-step windows or awaiting bootstrap values), policy v%lld%s",
      actor_id, static_cast<long long>(actor.steps()),
      static_cast<long long>(writer.acked_transitions()), DurabilitySummary(writer).c_str(),
      static_cast<long long>(actor.transitions_waiting()),
      static_cast<long long>(actor.policy_version()),
      flushed.ok() ? "" : (", " + flushed.message()).c_str());
  return Status::Ok();
}

}  // namespace ferry::actors
