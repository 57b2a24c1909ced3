#include "cli/replay_role.h"

#include <signal.h>

#include <memory>
#include <string>
#include <zmq.hpp>

#include "core/cpu_affinity.h"
#include "core/curve.h"
#include "core/experience.h"
#include "core/log.h"
#include "core/topology.h"
#include "envs/env.h"
#include "replay/shard.h"

namespace ferry::cli {

namespace {

// SIGUSR1: the learner has ended (the supervisor and launch/slurm/ferry.sbatch send it before
// they stop the actors).
std::atomic<bool> g_learner_ended{false};
void OnLearnerEnded(int) { g_learner_ended.store(true); }

// Installs the handler, then unblocks SIGUSR1: `ferry run` starts shards with it blocked, so
// one sent before this point is pending, not fatal, and arrives now.
void HandleLearnerEnded() {
  signal(SIGUSR1, OnLearnerEnded);
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigprocmask(SIG_UNBLOCK, &usr1, nullptr);
}

}  // namespace

Status ServeReplayShard(const core::Config& config, int shard, const std::atomic<bool>& stop) {
  HandleLearnerEnded();
  core::SetLogName("replay-" + std::to_string(shard));
  auto probe = envs::MakeEnv(config.env.id, 0);
  if (!probe.ok()) return probe.status();
  replay::ShardOptions options;
  options.shard_id = static_cast<uint32_t>(shard);
  options.endpoint = core::ReplayBindEndpoint(config, shard);
  options.schema = core::TransitionSchema((*probe)->observation_space().flat_size(),
                                          /*discrete_actions=*/true, 1);
  options.capacity = config.replay.capacity;
  if (config.replay.capacity_bytes > 0) {
    options.capacity =
        config.replay.capacity_bytes / static_cast<int64_t>(options.schema.row_bytes());
    if (options.capacity < 1) {
      return InvalidArgument(
          "replay.capacity_bytes: " + std::to_string(config.replay.capacity_bytes) +
          " bytes hold no transition of " + std::to_string(options.schema.row_bytes()) +
          " bytes; raise it or set it to 0 to use replay.capacity");
    }
  }
  options.alpha = config.replay.alpha;
  auto selector = replay::ParseSelectorKind(config.replay.selector);
  if (!selector.ok()) return selector.status();
  options.selector = *selector;
  auto compression = replay::ParseCompression(config.replay.compression);
  if (!compression.ok()) return compression.status();
  options.compression = *compression;
  options.min_size_to_sample = config.replay.min_size_to_sample;
  options.samples_per_insert = config.replay.samples_per_insert;
  options.samples_per_insert_tolerance = config.replay.samples_per_insert_tolerance;
  options.seed = config.seed * 31337ull + static_cast<uint64_t>(shard);
  options.snapshot_dir = config.replay.snapshot_dir;
  if (options.snapshot_dir.empty()) {
    options.snapshot_dir = config.run.dir.empty() ? "snapshots" : config.run.dir + "/snapshots";
  }
  options.snapshot_period_seconds = config.replay.snapshot_period_seconds;

  zmq::context_t context(1);
  auto authenticator = core::SecureServerRole(config.security, context);
  if (!authenticator.ok()) return authenticator.status();
  replay::ShardServer server(context, options);
  FERRY_RETURN_IF_ERROR(server.Bind());
  FERRY_RETURN_IF_ERROR(server.Restore());
  core::Log("serving %s (capacity %lld, selector %s, alpha %.2f, schema %s)",
            options.endpoint.c_str(), static_cast<long long>(options.capacity),
            replay::SelectorKindName(options.selector), options.alpha,
            options.schema.ToString().c_str());
  FERRY_RETURN_IF_ERROR(core::MoveToRunCpus());  // Started (core/cpu_affinity.h).
  server.Serve(stop, g_learner_ended);
  const auto stats = server.Stats();
  core::Log("stopped: %lld stored, %lld sampled, %lld duplicates dropped, %lld bad messages",
            static_cast<long long>(stats.mass.inserted_total),
            static_cast<long long>(stats.samples_total),
            static_cast<long long>(stats.duplicates_dropped),
            static_cast<long long>(stats.bad_messages));
  return Status::Ok();
}

}  // namespace ferry::cli
