// The Ape-X DQN learner, one process per MPI rank.
//
//   each rank: prefetched share of the global batch from every shard
//           -> n-step (Double) DQN loss with IS weights (Huber) -> backward
//           -> gradients fused into one buffer, plus a few control slots
//              (end code, stop signal, ranks without data, loss), and summed
//              across ranks (learner/gradient_reducer.h: shared memory on one
//              node, MPI otherwise; optionally in buckets during backward)
//           -> identical clipped Adam step on every rank
//           -> |TD| priorities back to the owning shards
//   every checksum_period: parameter checksums compared across ranks
//   every lsdqn_period: least-squares refit of the head (learner/ls_refit.h)
//   rank 0: publishes weights, evaluates the greedy policy, writes
//           metrics.jsonl, checkpoints, and decides when the run ends.
//
// The ranks stay in lock-step: every iteration is one allreduce on every rank,
// even for a rank whose sampling failed (it contributes zeros and the step is
// skipped everywhere), so parameters never diverge.
#ifndef FERRY_LEARNER_APEX_DQN_H_
#define FERRY_LEARNER_APEX_DQN_H_

#include <mpi.h>

#include <atomic>

#include "core/config.h"
#include "core/status.h"
#include "learner/dqn_updater.h"

namespace ferry::learner {

// How a learner run ended; the process exit code.
enum class RunEnd : int { kTargetReached = 0, kError = 1, kBudgetExhausted = 2, kStopped = 3 };

// Runs this rank's learner (MPI must be initialised) until the run ends. With
// `resume`, starts from the newest checkpoint in <run.dir>/checkpoints.
Result<RunEnd> RunLearner(const core::Config& config, bool resume, const std::atomic<bool>& stop);

// Compares every rank's parameter checksum (one allreduce over `comm`, called by all its
// ranks): an error on every rank if any two differ, since the data-parallel invariant broke
// and going on would train diverged copies.
Status CheckParametersAgree(DqnUpdater& updater, MPI_Comm comm);

}  // namespace ferry::learner

#endif  // FERRY_LEARNER_APEX_DQN_H_
