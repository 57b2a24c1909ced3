// The acting half of an actor, everything but the network: E envs stepped
// together behind one batched Q-network, as Ape-X actors run.
//
//   Step t: [obs E rows; final obs of the envs truncated at t-1] -> Q (one
//     inference call) -> the rows emitted at t-1 get their bootstrap values
//     max_a Q(next obs) and so their priorities -> epsilon-greedy per env
//     -> Env::Step x E -> n-step accumulators (each step with Q(obs, a))
//     -> TransitionBuffer
//   TakeBatch: the complete rows (every row but those of the latest Step)
//     with initial priorities |r + discount * max_a Q(next obs) - Q(obs, a)|
//     + priority_epsilon -> InsertBatch, as ReplayWriter::Write takes it
//
// No inference runs for priorities alone. Q(obs, a) is the acting Q-value of
// the transition's first step, kept in the n-step ring. Its next observation
// is one an env acts on at the following Step, except after a truncation,
// where it is the final observation, which that Step's inference call takes as
// an extra row; termination needs no bootstrap. So rows are complete one Step
// after they are emitted, and TakeBatch keeps the rest. Weights loaded in
// between (LoadWeights) make Q(obs, a), the bootstrap and the policy version
// of one transition come from different versions; for an initial priority, a
// guess the learner replaces after the first sample, that is fine (Ape-X's
// actors do the same). PrepareWeights does the copying on another thread and
// AdoptWeights swaps the result in between two Steps, so a new version costs
// the acting thread nothing but the swap.
//
// Inference runs on models::FastMlp: LibTorch's bits without LibTorch, so an
// actor process (ferry-actor) loads none and starts in milliseconds, where
// loading LibTorch costs about 0.5 s of CPU. Until its first version arrives an
// actor acts with weights drawn as LibTorch's Linear draws its own
// (FastMlp::InitUniform, seeded with the exploration seed).
//
// Step and TakeBatch do no per-transition allocation: the n-step rings, the
// transition buffer (insert_batch plus two Steps' rows, as each env emits up
// to n_step rows a Step) and the inference input are sized at construction,
// and TakeBatch allocates the batch's columns once, since the writer keeps
// them until the shard acks. Call TakeBatch whenever batch_ready() after a
// Step, or the buffer overflows (a checked abort). Used from one thread.
#ifndef FERRY_ACTORS_VECTOR_ACTOR_H_
#define FERRY_ACTORS_VECTOR_ACTOR_H_

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

namespace ferry::actors {

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
};

// A version of the policy made ready for VectorActor::AdoptWeights.
struct PreparedWeights {
  int64_t version = -1;
  std::optional<models::FastMlp> net;  // Empty until a version is first prepared into it.
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
  // Whether insert_batch or more complete transitions wait for TakeBatch.
  bool batch_ready() const { return complete_ >= insert_batch_; }
  // Every complete transition, with priorities, in the order the n-step
  // accumulators emitted them; the latest Step's rows stay for the next.
  InsertBatch TakeBatch();
  // Acts with the weights in `blob` (models::ToBlob layout) from now on.
  Status LoadWeights(int64_t version, const uint8_t* blob, size_t bytes);
  // Makes `into` hold the weights in `blob`, reusing its storage once it holds
  // any. Reads only what Create fixed, so it may run on another thread while
  // this actor steps.
  Status PrepareWeights(int64_t version, const uint8_t* blob, size_t bytes,
                        PreparedWeights* into) const;
  // Acts with `weights` from now on, swapped in without a copy; `weights` gets
  // the ones it replaced, for the next PrepareWeights to reuse.
  void AdoptWeights(PreparedWeights& weights);

  int num_envs() const { return static_cast<int>(envs_.size()); }
  int obs_dim() const { return obs_dim_; }
  int64_t policy_version() const { return version_; }
  int64_t steps() const { return steps_; }
  // Env steps whose transitions TakeBatch has not handed over yet (in the
  // n-step rings or the buffer): steps() is every transition handed over
  // plus these.
  int64_t transitions_waiting() const;
  // Mean return of the last (up to 20) finished episodes; 0 before the first.
  double RecentMeanReturn() const;

 private:
  VectorActor(const VectorActorOptions& options, std::vector<std::unique_ptr<envs::Env>> envs);
  // Gives the rows emitted by the last Step their priorities, from `q`, the
  // Q-values of this Step's input.
  void CompleteRows(const float* q);

  std::vector<std::unique_ptr<envs::Env>> envs_;
  int obs_dim_;
  int num_actions_;
  std::vector<int> sizes_;  // The network's layer widths, obs_dim_ to num_actions_.
  int insert_batch_;
  float priority_epsilon_;
  std::vector<double> epsilon_;
  models::FastMlp net_;
  int64_t version_ = -1;

  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
  std::uniform_int_distribution<int> random_action_;
  std::vector<NStepAccumulator> nstep_;
  TransitionBuffer buffer_;
  int complete_ = 0;                // buffer_ rows [0, complete_) have priorities.
  std::vector<float> priorities_;   // Per buffer_ row, once complete.
  std::vector<int> bootstrap_row_;  // Per buffer_ row: its next obs's row in the next
                                    // Step's input, or -1 (terminated: no bootstrap).
  // [2E, obs_dim], the next Step's inference input: rows 0..E-1 the observation
  // each env acts on, then the final observations of the envs truncated in the
  // last Step (truncated_rows_ of them).
  std::vector<float> obs_;
  int truncated_rows_ = 0;
  std::vector<float> next_obs_;  // One env's.
  std::vector<double> episode_return_;
  std::array<double, 20> recent_returns_{};
  int64_t episodes_ = 0;
  int64_t steps_ = 0;
};

}  // namespace ferry::actors

#endif  // FERRY_ACTORS_VECTOR_ACTOR_H_
