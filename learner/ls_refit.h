// LS-DQN: refits the Q-network's linear head by regularised least squares,
// with the heavy linear algebra in MPI-parallel kernels (learner/linalg/).
//
//   each rank: its sample -> features phi = [body(obs), 1] and n-step targets y
//   for each action a: the rows that took a -> partial Phi^T Phi, Phi^T y
//   -> one allreduce per action -> (G + lambda I) w = b + lambda w_head[a]
//   -> Cholesky (or CG) -> rank 0's w broadcast -> head row a
//
// Collective: every rank calls RefitHead together.
#ifndef FERRY_LEARNER_LS_REFIT_H_
#define FERRY_LEARNER_LS_REFIT_H_

#include <mpi.h>

#include <string>
#include <vector>

#include "core/status.h"
#include "learner/dqn_loss.h"
#include "learner/dqn_updater.h"

namespace ferry::learner {

struct RefitReport {
  int64_t rows = 0;  // Summed over ranks.
  double features_seconds = 0, gram_seconds = 0, allreduce_seconds = 0, solve_seconds = 0;
  bool regularised_more = false;  // Some action's system needed a larger lambda.
  double head_change = 0;         // Relative change of the head's weights.
};

Result<RefitReport> RefitHead(DqnUpdater& updater, const std::vector<DqnBatch>& batches,
                              double lambda, const std::string& solver, MPI_Comm comm);

}  // namespace ferry::learner

#endif  // FERRY_LEARNER_LS_REFIT_H_
