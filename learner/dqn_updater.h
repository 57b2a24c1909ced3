// The learner's trainable state and its update step, apart from any transport.
//
//   ComputeGradients(batch) -> [sum across ranks: learner/gradient_reducer.h]
//   -> UnpackGradients(reducer) -> ApplyGradients(): clip, Adam, target sync
//
// Everything a resumed run needs (online and target networks, Adam moments,
// update count, torch RNG state, the run's counters) is saved and loaded as one
// checkpoint file, written atomically (temp file, fsync, rename). Two updaters
// fed the same batches from the same checkpoint end with identical parameters. A
// checkpoint written on a GPU resumes on the CPU and the other way round.
// Used from one thread.
#ifndef FERRY_LEARNER_DQN_UPDATER_H_
#define FERRY_LEARNER_DQN_UPDATER_H_

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/status.h"
#include "learner/dqn_loss.h"
#include "learner/fast_dqn_gradients.h"
#include "models/q_network.h"

namespace ferry::learner {

class GradientReducer;

struct UpdaterOptions {
  int obs_dim = 0;
  int num_actions = 0;
  std::vector<int> hidden;
  double learning_rate = 1e-3;
  double learning_rate_final_fraction = 1.0;  // At `decay_env_steps` (core/config.h).
  int64_t decay_env_steps = 1;
  double huber_delta = 1.0;
  double max_grad_norm = 10.0;
  int target_update_period = 500;
  bool double_dqn = true;
  // In (0, 1): policy() is an exponential moving average of the online network's weights,
  // average = policy_average * average + (1 - policy_average) * online after every update;
  // 0: policy() is the online network.
  double policy_average = 0;
  // The update as LibTorch's modules run it (autograd, clip_grad_norm_, optim::Adam) even on
  // the CPU, where FastDqnGradients and ClipAndStep replace them otherwise: the overlapped
  // allreduce's hooks fire from autograd.
  bool autograd = false;
};

// The options of `config`'s learner: network shape from its env (which must have discrete
// actions) and model, the rest from learner.*.
Result<UpdaterOptions> UpdaterOptionsFor(const core::Config& config);

// Run counters kept beside the parameters in a checkpoint.
struct RunCounters {
  int64_t env_steps = 0;
  double elapsed_seconds = 0;  // Learner wall-clock so far, so budgets carry over.
  double best_eval = -INFINITY;
};

class DqnUpdater {
 public:
  DqnUpdater(const UpdaterOptions& options, torch::Device device);

  // Loss and gradients of `batch`; the loss is divided by `normaliser` (the
  // global batch size, so summing gradients across ranks gives the mean). By
  // FastDqnGradients on the CPU unless options().autograd, else by autograd. The batch's
  // target_next_q replaces the target network's forward pass where it was computed by this
  // target_version(); values of an earlier target network are ignored.
  DqnLoss ComputeGradients(const DqnBatch& batch, double normaliser);
  // Replaces the gradients with the sums `reducer` reduced; on one rank, where the reducer
  // leaves them in the grads, there is nothing to do.
  void UnpackGradients(GradientReducer& reducer);
  // Sets the learning rate for `env_steps` steps taken so far (options' linear schedule).
  void ScheduleLearningRate(int64_t env_steps);
  double learning_rate();
  // Clipped Adam step (fused where the gradients are: learner/fused_adam.h); copies
  // online -> target every target_update_period; moves the weight average towards online.
  void ApplyGradients();

  // CRC32C of the online network's parameter bytes: equal on two ranks exactly when
  // (up to a checksum collision) they hold the same bits. A sum would miss swapped
  // values and changes that cancel.
  uint32_t ParameterChecksum();
  int64_t num_parameters() { return models::ParameterCount(*online_); }
  int64_t updates() const { return updates_; }
  // Which copy of the online network the target network holds: it changes with every copy.
  int64_t target_version() const { return updates_ / options_.target_update_period; }
  // Whether the update runs through LibTorch's autograd and optimizer (not FastDqnGradients).
  bool autograd() const { return !fast_.has_value(); }
  models::QNetwork& online() { return online_; }
  models::QNetwork& target() { return target_; }
  // The policy the learner evaluates and ends with: the weight average where
  // options().policy_average is set, else the online network. Actors act on the online one.
  models::QNetwork& policy() { return average_ ? average_ : online_; }
  const UpdaterOptions& options() const { return options_; }

  Status SaveCheckpoint(const std::string& path, const RunCounters& counters);
  Status LoadCheckpoint(const std::string& path, RunCounters* counters);

 private:
  UpdaterOptions options_;
  torch::Device device_;
  models::QNetwork online_;
  models::QNetwork target_;
  models::QNetwork average_{nullptr};  // Set where options_.policy_average > 0.
  torch::optim::Adam optimizer_;
  std::optional<FastDqnGradients> fast_;  // Set where the update runs without autograd.
  int64_t updates_ = 0;
};

// The newest checkpoint in `dir` that loads into `updater` (files
// learner-<updates>.pt), falling back to older ones; NotFound if none does.
Result<std::string> LoadNewestCheckpoint(const std::string& dir, DqnUpdater* updater,
                                         RunCounters* counters);
// Checkpoint path for the updater's current update count; keeps the newest `keep` files.
std::string CheckpointPath(const std::string& dir, int64_t updates);
void PruneCheckpoints(const std::string& dir, int keep);

// The policy a run selects by its periodic evaluations (the online network at the best one),
// kept as BestPolicyPath(checkpoint dir) and written atomically like a checkpoint.
struct PolicyInfo {
  int64_t updates = 0;
  int64_t env_steps = 0;
  double eval_return = -INFINITY;  // The periodic evaluation that selected it.
};
std::string BestPolicyPath(const std::string& dir);
Status SavePolicy(models::QNetwork& net, const PolicyInfo& info, const std::string& path);
// DataLoss for a file that does not load into `net`'s shape.
Status LoadPolicy(const std::string& path, models::QNetwork& net, PolicyInfo* info);

}  // namespace ferry::learner

#endif  // FERRY_LEARNER_DQN_UPDATER_H_
