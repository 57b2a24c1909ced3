// Distributed regularised least squares: the linear algebra of the LS-DQN refit of the
// network's last layer.
//
//   rank r: features Phi_r [n_r, d], targets y_r [n_r]
//     -> FormNormalEquations       G_r = Phi_r^T Phi_r, b_r = Phi_r^T y_r      (local, float64)
//     -> AllreduceNormalEquations  G = sum_r G_r, b = sum_r b_r               (one allreduce)
//     -> SolveCholesky             (G + lambda I) w = b + lambda w0           (every rank)
//
// Where d is too large to form G, SolveConjugateGradient solves the same system from the
// rank-local rows, one allreduce per iteration. w0 is the head's current weight vector: lambda
// pulls the refit towards it (LS-DQN's prior), and it is where a direction the data does not
// determine (a dead feature, duplicated features) ends up.
//
// Threading: free functions without shared state; any thread may call them, and LibTorch's
// intra-op threads do the arithmetic. They record no autograd graph, so features and weights
// straight from the network (requiring grad) are fine; the tensors they return require none. The
// collective ones (AllreduceNormalEquations and the distributed SolveConjugateGradient) must be
// called by every rank of `comm` in the same order, with the same d and the same rank-independent
// arguments, from a thread allowed to make MPI calls. The solvers are deterministic: ranks holding
// the same reduced system and running the same LibTorch thread count compute the same w; a caller
// that must have bit-identical weights on every rank broadcasts rank 0's w.
#ifndef FERRY_LEARNER_LINALG_LEAST_SQUARES_H_
#define FERRY_LEARNER_LINALG_LEAST_SQUARES_H_

#include <mpi.h>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/status.h"

namespace ferry::learner::linalg {

// A system G w = rhs, before regularisation, summed over `rows` feature rows.
struct NormalEquations {
  torch::Tensor gram;  // [d, d] float64, symmetric positive semi-definite.
  torch::Tensor rhs;   // [d] float64.
  int64_t rows = 0;
};

struct SolveReport {
  torch::Tensor w;  // [d], w0's dtype.
  // The lambda the returned w solves for: the caller's, or larger where that left the system
  // singular or too ill-conditioned to solve (then regularised_more is set and note says why).
  double lambda_used = 0;
  // A lower bound on the condition number of the Jacobi-scaled G + lambda_used I; for CG, of
  // G + lambda I itself, from the Lanczos tridiagonal of its iterations (0 when it ran none,
  // infinity when G + lambda I is singular).
  double condition_estimate = 0;
  bool regularised_more = false;
  int cg_iterations = 0;  // 0 for Cholesky.
  // ||(G + lambda_used I) w - (b + lambda_used w0)|| / ||b + lambda_used w0||; for CG, that
  // of its residual recurrence.
  double residual_norm = 0;
  std::string note;  // Empty unless something needs a reader's attention.
};

// Beyond this condition number (of the Jacobi-scaled matrix) the weakest directions of w are
// set by rounding rather than by the data, since FormNormalEquations' G is accurate to about
// float32 precision: SolveCholesky then raises lambda.
inline constexpr double kMaxConditionNumber = 1e7;

// Local normal equations of the rows of `phi` [n, d] (float32 or float64, CPU; n may be 0) and
// `y` [n]. Products are computed in phi's dtype over blocks of rows and summed in float64, so G
// is accurate to about one rounding of phi's dtype. Non-finite features or targets make G or
// rhs non-finite, which the solvers reject after the reduction, so all ranks agree on it.
// Shapes that do not match are a caller bug and abort.
NormalEquations FormNormalEquations(const torch::Tensor& phi, const torch::Tensor& y);

// Sums `equations` across the ranks of `comm` in place with one fused allreduce.
void AllreduceNormalEquations(NormalEquations* equations, MPI_Comm comm);

// Solves (G + lambda I) w = b + lambda w0 by Cholesky, on the Jacobi-scaled matrix. Where that
// matrix is not positive definite or its condition exceeds kMaxConditionNumber, lambda is raised
// (first to 1e-6 of G's mean diagonal, then tenfold, at most 12 times) and the report says so:
// w is always finite. InvalidArgument for shapes that do not match, lambda < 0 or not finite,
// and non-finite G, b or w0.
Result<SolveReport> SolveCholesky(const NormalEquations& equations, const torch::Tensor& w0,
                                  double lambda);

// v [d] float64 -> G v [d] float64. Must return the same values on every rank that runs the CG
// (a distributed operator reduces across ranks itself), so that all stop at the same iteration.
using GramOperator = std::function<torch::Tensor(const torch::Tensor&)>;

// Conjugate gradient for (G + lambda I) w = rhs + lambda w0, warm-started at w0, stopping when
// the relative residual falls below `tolerance` or after `max_iterations`. G must be symmetric
// positive semi-definite; lambda is never raised (a singular G with rhs in its range, as from
// real data, still converges, keeping w0's component in G's null space). InvalidArgument for
// shapes that do not match, bad lambda, max_iterations < 1, tolerance <= 0, non-finite rhs or
// w0, and an operator returning non-finite values.
Result<SolveReport> SolveConjugateGradient(const GramOperator& gram, const torch::Tensor& rhs,
                                           const torch::Tensor& w0, double lambda,
                                           int max_iterations, double tolerance);

// CG with G applied as v -> sum_r Phi_r^T (Phi_r v): two matvecs over this rank's rows `phi`
// [n_r, d] in phi's dtype (float32: G v good to about 1e-6 relative, which bounds the reachable
// tolerance; pass float64 features for more) and one allreduce per iteration. `rhs` is the
// reduced b. Collective: every rank calls it. Argument errors on any rank, non-finite features
// included, are agreed on before the iterations start, so every rank returns an error and none
// is left waiting; a later error (only from LibTorch failing, e.g. out of memory) leaves the
// others blocked in the collective, and the caller ends the job.
Result<SolveReport> SolveConjugateGradient(const torch::Tensor& phi, const torch::Tensor& rhs,
                                           const torch::Tensor& w0, double lambda, MPI_Comm comm,
                                           int max_iterations, double tolerance);

// CG with the reduced G of `equations`; rank-local.
Result<SolveReport> SolveConjugateGradient(const NormalEquations& equations,
                                           const torch::Tensor& w0, double lambda,
                                           int max_iterations, double tolerance);

}  // namespace ferry::learner::linalg

#endif  // FERRY_LEARNER_LINALG_LEAST_SQUARES_H_
