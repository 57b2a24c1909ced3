// Experiment configuration: one YAML file describes a whole run.
//
// YAML is read here and nowhere else, into the typed structs below, and
// validated once. Unknown keys, wrong types and out-of-range values are errors
// that name the key path (e.g. "replay.alpha") and, for a misspelt key, the
// closest valid one. `--set key.path=value` overrides are applied to the YAML
// tree before it is converted, so they are validated the same way.
#ifndef FERRY_CORE_CONFIG_H_
#define FERRY_CORE_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace ferry::core {

struct RunOptions {
  std::string name = "ferry";
  std::string dir;  // Empty: runs/<name>-<timestamp>.
};

struct NetworkOptions {
  std::string host = "127.0.0.1";  // Interface every server binds; loopback by default.
  // Where clients find the servers when they run elsewhere (launch/slurm/): the host of each
  // replay shard, comma-separated (one for all, or one per shard), and the paramserver's host.
  // Empty: `host`.
  std::string replay_hosts;
  std::string paramserver_host;
  int replay_port = 5550;       // Shard k listens on replay_port + k.
  int paramserver_port = 5540;  // Publish/fetch (ROUTER).
  int broadcast_port = 5541;    // Weight broadcast (PUB).
  // Weight blobs larger than this are announced and fetched in chunks of this size
  // (paramserver::kChunkBytes); at its maximum, 1 GiB, every blob is sent whole.
  int64_t weights_chunk_bytes = int64_t{1} << 20;
};

struct EnvOptions {
  std::string id = "CartPole-v1";
};

struct ReplayOptions {
  int shards = 2;
  int64_t capacity = 100000;   // Transitions per shard.
  int64_t capacity_bytes = 0;  // If > 0: capacity = capacity_bytes / bytes per transition.
  std::string selector = "prioritized";  // prioritized | uniform | fifo | lifo.
  double alpha = 0.6;                    // Priority exponent; 0 is uniform.
  double beta = 0.4;                     // Importance-sampling exponent.
  double priority_epsilon = 1e-6;        // Added to |TD| so no item has zero priority.
  int64_t min_size_to_sample = 1000;     // Per shard.
  // Rate limiter: each shard keeps samples / inserts near samples_per_insert,
  // within +- samples_per_insert_tolerance samples (Reverb's SampleToInsertRatio).
  double samples_per_insert = 8.0;
  double samples_per_insert_tolerance = 2000.0;
  // Snapshots: every snapshot_period_seconds (0: only on SIGTERM), into
  // snapshot_dir (empty: <run.dir>/snapshots), restored at start-up.
  std::string snapshot_dir;
  double snapshot_period_seconds = 0.0;
  // none | lz4: uint8 columns (image observations) kept LZ4-compressed row by row.
  std::string compression = "none";
};

struct ActorOptions {
  int count = 2;
  int envs_per_actor = 8;
  double epsilon = 0.4;  // Ape-X: eps_i = epsilon^(1 + i/(N-1) * epsilon_alpha).
  double epsilon_alpha = 7.0;
  int n_step = 3;
  int insert_batch = 64;  // Transitions per InsertBatch message.
  int max_in_flight = 8;  // Most unacked batches per shard (one while its rate limiter holds).
  // Acked batches not yet in a completed shard snapshot, kept to re-send to a
  // restarted shard; beyond this many bytes the oldest are let go (0: none kept).
  int64_t retain_bytes = int64_t{256} << 20;
};

struct ModelOptions {
  std::vector<int> hidden = {64, 64};
};

struct LearnerOptions {
  int ranks = 2;
  int batch_size = 128;  // Global: split across ranks.
  // Batches each of a rank's sample requests to a shard serves (learner/prefetcher.h): fewer
  // messages for the shards, priorities up to batches_per_request - 1 updates staler.
  int batches_per_request = 1;
  double learning_rate = 1e-3;
  // The fraction of learning_rate reached at stop.max_env_steps, falling linearly in env steps
  // from the start (1: constant).
  double learning_rate_final_fraction = 1.0;
  double gamma = 0.99;
  bool double_dqn = true;  // Target action from the online net (false: plain DQN max).
  double huber_delta = 1.0;
  double max_grad_norm = 10.0;
  int target_update_period = 500;  // Updates between target-network copies.
  int publish_period = 10;         // Updates between weight publications (rank 0).
  int eval_period = 500;           // Updates between greedy evaluations (rank 0).
  int eval_episodes = 100;
  int final_eval_episodes = 100;  // On fresh episodes when the run reaches its target or budget.
  std::string device = "cpu";     // cpu | cuda.
  double checkpoint_period_seconds = 60;  // Also on SIGTERM; into <run.dir>/checkpoints.
  int checksum_period = 1000;             // Updates between cross-rank parameter checks.
  // With `ferry run` on one machine: rank r's update thread runs on CPU update_cpu + r (mod the
  // CPUs online) alone, the rest of the run on the other CPUs and rank 0's evaluations on any CPU
  // at idle priority (core/cpu_affinity.h); -1: the kernel places every thread.
  int update_cpu = -1;
  // The target network's Q-values of each batch computed on the sampling thread, ahead of the
  // update (learner/target_ahead.h); only where the update runs without autograd.
  bool target_ahead = true;
  // Gradient allreduce (learner/gradient_reducer.h): auto | mpi | shared_memory; with
  // overlap_allreduce, buckets of bucket_bytes are reduced while backward runs.
  std::string allreduce = "auto";
  bool overlap_allreduce = false;
  int bucket_bytes = 1 << 20;
  // The policy the learner evaluates and ends with: with policy_average in (0, 1), an
  // exponential moving average of the online network's weights, each update
  // average = policy_average * average + (1 - policy_average) * online; 0: the online network.
  double policy_average = 0;
  // LS-DQN: every lsdqn_period updates (0: off) refit the last layer by
  // regularised least squares on lsdqn_samples transitions, summed over ranks.
  int lsdqn_period = 0;
  int lsdqn_samples = 8192;
  double lsdqn_lambda = 1.0;
  std::string lsdqn_solver = "cholesky";  // cholesky | cg.
};

// CurveZMQ on every socket (core/curve.h); key files come from `ferry keygen`, paths relative to
// the working directory.
struct SecurityOptions {
  bool curve = false;
  std::string server_key;         // Servers' key pair (.key).
  std::string server_public_key;  // What clients trust (.pub).
  std::string client_key;         // Clients' key pair (.key).
  std::string authorized_keys;    // Client public keys the servers admit, one per line.
};

struct StopOptions {
  double target_return = 475.0;    // Mean greedy eval return that ends the run (exit 0)...
  double min_seconds = 0;          // ...once the learner has trained at least this long.
  int64_t max_env_steps = 500000;  // Budget; reaching it ends the run (exit 2).
  double max_seconds = 300.0;
};

struct Config {
  uint64_t seed = 0;
  RunOptions run;
  NetworkOptions network;
  EnvOptions env;
  ReplayOptions replay;
  ActorOptions actors;
  ModelOptions model;
  LearnerOptions learner;
  SecurityOptions security;
  StopOptions stop;
};

// The hosts of a comma-separated list, without blanks; empty for an empty list.
std::vector<std::string> SplitHosts(const std::string& list);

// Parses YAML text; `source` names it in errors (a file path or "<string>").
// `overrides` are "key.path=value" strings applied before conversion.
Result<Config> ParseConfig(const std::string& yaml_text, const std::string& source,
                           const std::vector<std::string>& overrides = {});
Result<Config> LoadConfig(const std::string& path, const std::vector<std::string>& overrides = {});
// The resolved config as YAML (every key, defaults included); ParseConfig of
// the result gives back an equal Config.
std::string ConfigToYaml(const Config& config);

}  // namespace ferry::core

#endif  // FERRY_CORE_CONFIG_H_
