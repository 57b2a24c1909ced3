// The acting half of an actor, everything but the network: E envs stepped
// together behind one batched Q-network.
//
//   obs [E, obs_dim] -> Q [E, A] (one inference call) -> epsilon-greedy per env
//     -> Env::Step x E -> n-step accumulators -> TransitionBuffer
//   TakeBatch: the waiting transitions -> initial priorities |n-step TD error|
//     under the same network (one inference call over obs and next obs)
//     -> InsertBatch, as ReplayWriter::Write takes it
//
// Inference runs on models::FastMlp when it gives LibTorch's bits for this
// network at the batch sizes this actor uses (E, and obs plus next obs of a
// batch), checked once at construction; on LibTorch otherwise. The choice
// needs no configuration; Inference forces one side for benchmarks and tests.
//
// Step and TakeBatch do no per-transition allocation: the n-step rings, the
// transition buffer and the inference scratch are sized at construction, and
// TakeBatch allocates the batch's columns once, since the writer keeps them
// until the shard acks. Used from one thread.
#ifndef FERRY_ACTORS_VECTOR_ACTOR_H_
#define FERRY_ACTORS_VECTOR_ACTOR_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "actors/n_step.h"
#include "core/status.h"
#include "envs/env.h"
#include "models/fast_mlp.h"
#include "models/q_network.h"

namespace ferry::actors {

enum class Inference {
  kAuto,  // FastMlp where it is bit-exact with LibTorch, LibTorch otherwise.
  kLibTorch,
  kFastMlp,  // Refused (InvalidArgument) where it is not bit-exact.
};

struct VectorActorOptions {
  std::string env_id;
  std::vector<uint64_t> env_seeds;  // One env per seed.
  std::vector<double> epsilon;      // Exploration rate per env.
  uint64_t seed = 0;                // Exploration RNG.
  std::vector<int> hidden;          // Q-network hidden widths.
  int n_step = 3;
  double gamma = 0.99;
  int insert_batch = 64;           // Transitions per InsertBatch.
  double priority_epsilon = 1e-6;  // Added to every |TD error|.
  Inference inference = Inference::kAuto;
};

// `count` rows of every transition column (core::TransitionColumn order) and
// their raw initial priorities.
struct InsertBatch {
  int count = 0;
  std::vector<std::vector<uint8_t>> columns;
  std::vector<float> priorities;
};

class VectorActor {
 public:
  static Result<std::unique_ptr<VectorActor>> Create(const VectorActorOptions& options);

  // One step of every env.
  void Step();
  // Whether insert_batch or more transitions wait for TakeBatch.
  bool batch_ready() const { return buffer_.size >= insert_batch_; }
  // Every waiting transition, with priorities; none wait afterwards.
  InsertBatch TakeBatch();
  // Acts with the weights in `blob` (models::ToBlob layout) from now on.
  Status LoadWeights(int64_t version, const uint8_t* blob, size_t bytes);

  int num_envs() const { return static_cast<int>(envs_.size()); }
  int obs_dim() const { return obs_dim_; }
  int64_t policy_version() const { return version_; }
  int64_t steps() const { return steps_; }
  bool fast_inference() const { return fast_.has_value(); }
  // Mean return of the last (up to 20) finished episodes; 0 before the first.
  double RecentMeanReturn() const;

 private:
  VectorActor(const VectorActorOptions& options, std::vector<std::unique_ptr<envs::Env>> envs);
  // Q-values [batch, num_actions] of `obs` [batch, obs_dim]; valid until the next call.
  const float* QValues(const float* obs, int batch);

  std::vector<std::unique_ptr<envs::Env>> envs_;
  int obs_dim_;
  int num_actions_;
  int insert_batch_;
  float priority_epsilon_;
  std::vector<double> epsilon_;
  models::QNetwork net_;
  std::optional<models::FastMlp> fast_;
  torch::Tensor libtorch_q_;  // Keeps LibTorch's output alive for QValues' caller.
  int64_t version_ = -1;

  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
  std::uniform_int_distribution<int> random_action_;
  std::vector<NStepAccumulator> nstep_;
  TransitionBuffer buffer_;
  std::vector<float> obs_;             // [E, obs_dim], the observation each env acts on.
  std::vector<float> next_obs_;        // One env's.
  std::vector<float> priority_input_;  // [2 * buffer capacity, obs_dim]: obs, then next obs.
  std::vector<double> episode_return_;
  std::array<double, 20> recent_returns_{};
  int64_t episodes_ = 0;
  int64_t steps_ = 0;
};

}  // namespace ferry::actors

#endif  // FERRY_ACTORS_VECTOR_ACTOR_H_
