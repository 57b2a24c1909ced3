#include "learner/linalg/least_squares.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "learner/linalg/allreduce.h"

namespace ferry::learner::linalg {
namespace {

// Rows per block of products in the features' dtype, summed in float64. Measured at n = 64k,
// d = 256, float32: as fast as one product over all rows with a tenth of its error (6e-8
// relative, about one float32 rounding), and 2-3x faster than products in float64.
constexpr int64_t kRowsPerBlock = 4096;
// Tenfold steps from 1e-6 of the mean diagonal reach 1e5 of it, where G + lambda I is
// dominated by lambda I and always factors.
constexpr int kMaxRegularisationSteps = 12;
constexpr int kConditionIterations = 10;
// Extreme Ritz values settle long before this; it bounds the eigensolve of the tridiagonal.
constexpr int kMaxLanczosSteps = 200;

std::string Sci(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3g", x);
  return buffer;
}

// A NaN or Inf entry makes the sum non-finite, so a finite sum proves every entry finite in one
// fast pass (isfinite().all() takes 25x longer on 64k x 256 features); only a sum that overflows
// needs the elementwise test.
bool AllFinite(const torch::Tensor& t) {
  return std::isfinite(t.sum().item<double>()) || torch::isfinite(t).all().item<bool>();
}

std::string ShapeOf(const torch::Tensor& t) {
  std::string shape = "[";
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (i > 0) shape += ", ";
    shape += std::to_string(t.size(i));
  }
  return shape + "]";
}

torch::Tensor Double(const torch::Tensor& t) { return t.to(torch::kDouble).contiguous(); }

// A float64 copy that in-place updates may change without touching the caller's tensor.
torch::Tensor DoubleCopy(const torch::Tensor& t) {
  return t.to(torch::kDouble, /*non_blocking=*/false, /*copy=*/true).contiguous();
}

// The CG vector arithmetic runs serially on contiguous float64 [d] vectors: the results, and so
// the iteration at which every rank stops, do not depend on LibTorch's thread count.
double Dot(const torch::Tensor& a, const torch::Tensor& b) {
  const double* pa = a.data_ptr<double>();
  const double* pb = b.data_ptr<double>();
  double sum = 0;
  for (int64_t i = 0; i < a.numel(); ++i) sum += pa[i] * pb[i];
  return sum;
}

// y += alpha * x.
void Axpy(double alpha, const torch::Tensor& x, torch::Tensor& y) {
  const double* px = x.data_ptr<double>();
  double* py = y.data_ptr<double>();
  for (int64_t i = 0; i < x.numel(); ++i) py[i] += alpha * px[i];
}

// p = r + beta * p.
void UpdateDirection(const torch::Tensor& r, double beta, torch::Tensor& p) {
  const double* pr = r.data_ptr<double>();
  double* pp = p.data_ptr<double>();
  for (int64_t i = 0; i < r.numel(); ++i) pp[i] = pr[i] + beta * pp[i];
}

double RelativeResidual(const torch::Tensor& residual, double rhs_norm) {
  const double norm = residual.norm().item<double>();
  return rhs_norm > 0 ? norm / rhs_norm : norm;
}

// A fixed pseudo-random unit vector: the condition estimate is reproducible and leaves
// LibTorch's global generator, whose state the learner checkpoints, untouched.
torch::Tensor StartVector(int64_t d) {
  std::mt19937_64 engine(0x5eed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  auto v = torch::empty({d}, torch::kDouble);
  double* data = v.data_ptr<double>();
  for (int64_t i = 0; i < d; ++i) data[i] = uniform(engine);
  return v / v.norm();
}

// Solves L L^T x = v.
torch::Tensor SolveWithFactor(const torch::Tensor& lower, const torch::Tensor& v) {
  // Two triangular solves: 10x faster than cholesky_solve, which copies the factor each call.
  const auto half = torch::linalg_solve_triangular(lower, v.unsqueeze(1), /*upper=*/false);
  return torch::linalg_solve_triangular(lower.t(), half, /*upper=*/true).squeeze(1);
}

// Lower bound on cond(a), given its Cholesky factor: the larger of (max L_ii / min L_ii)^2 and
// the Rayleigh quotients of power iteration on a and on a^-1.
double EstimateCondition(const torch::Tensor& a, const torch::Tensor& lower) {
  const auto diagonal = lower.diagonal();
  const double ratio = (diagonal.max() / diagonal.min()).item<double>();
  auto v = StartVector(a.size(0));
  double largest = 0;
  for (int i = 0; i < kConditionIterations; ++i) {
    const auto u = a.mv(v);
    largest = v.dot(u).item<double>();
    v = u / u.norm();
  }
  v = StartVector(a.size(0));
  double inverse_smallest = 0;
  for (int i = 0; i < kConditionIterations; ++i) {
    const auto u = SolveWithFactor(lower, v);
    inverse_smallest = v.dot(u).item<double>();
    v = u / u.norm();
  }
  return std::max(ratio * ratio, largest * inverse_smallest);
}

struct Attempt {
  torch::Tensor w;  // float64; undefined when the attempt failed.
  double condition = 0;
  std::string failure;
};

Attempt Failed(std::string failure, double condition = 0) {
  return {torch::Tensor(), condition, std::move(failure)};
}

// One Cholesky solve of (G + lambda I) w = b + lambda w0, scaled by s = sqrt(diag) so that
// feature scale does not count as ill-conditioning.
Attempt TryCholesky(const torch::Tensor& gram, const torch::Tensor& rhs, const torch::Tensor& w0,
                    double lambda) {
  // Scaled in place: at d = 1024 each fresh d x d tensor costs tens of ms in page faults.
  auto scaled = gram.clone();
  scaled.diagonal().add_(lambda);
  const auto diagonal = scaled.diagonal().clone();
  const int64_t not_positive = (diagonal <= 0).sum().item<int64_t>();
  if (not_positive > 0) {
    return Failed(std::to_string(not_positive) +
                  " diagonal entries of G + lambda I are not positive (features that are zero on "
                  "every row)");
  }
  const auto inverse_scale = diagonal.rsqrt();
  scaled.mul_(inverse_scale.unsqueeze(1)).mul_(inverse_scale.unsqueeze(0));
  const auto [lower, info] = torch::linalg_cholesky_ex(scaled);
  const int64_t column = info.item<int64_t>();
  if (column != 0) {
    return Failed("G + lambda I is not positive definite (Cholesky broke down at column " +
                  std::to_string(column) + ")");
  }
  const double condition = EstimateCondition(scaled, lower);
  if (condition > kMaxConditionNumber) {
    return Failed("G + lambda I has condition number about " + Sci(condition) + ", beyond the " +
                      Sci(kMaxConditionNumber) + " its precision supports",
                  condition);
  }
  auto w = SolveWithFactor(lower, (rhs + lambda * w0) * inverse_scale) * inverse_scale;
  if (!AllFinite(w)) return Failed("the solution is not finite", condition);
  return {std::move(w), condition, ""};
}

Status ValidateSystem(const torch::Tensor& rhs, const torch::Tensor& w0, double lambda) {
  if (!rhs.defined() || rhs.dim() != 1 || rhs.size(0) < 1) {
    return InvalidArgument("least squares: rhs must be a vector [d] with d >= 1, got " +
                           (rhs.defined() ? ShapeOf(rhs) : "undefined"));
  }
  if (!w0.defined() || w0.dim() != 1 || w0.size(0) != rhs.size(0)) {
    return InvalidArgument("least squares: w0 must be [" + std::to_string(rhs.size(0)) +
                           "] like rhs, got " + (w0.defined() ? ShapeOf(w0) : "undefined"));
  }
  if (!std::isfinite(lambda) || lambda < 0) {
    return InvalidArgument("least squares: lambda must be finite and >= 0, got " + Sci(lambda));
  }
  if (!AllFinite(rhs)) {
    return InvalidArgument(
        "least squares: the right-hand side contains NaN or Inf: targets or features on some "
        "rank are not finite");
  }
  if (!AllFinite(w0)) {
    return InvalidArgument("least squares: w0 (the current head weights) contains NaN or Inf");
  }
  return Status::Ok();
}

Status ValidateGram(const torch::Tensor& gram, int64_t d) {
  if (!gram.defined() || gram.dim() != 2 || gram.size(0) != d || gram.size(1) != d) {
    return InvalidArgument("least squares: the Gram matrix must be [" + std::to_string(d) + ", " +
                           std::to_string(d) + "] like rhs, got " +
                           (gram.defined() ? ShapeOf(gram) : "undefined"));
  }
  if (!AllFinite(gram)) {
    return InvalidArgument(
        "least squares: the Gram matrix contains NaN or Inf: the features on some rank are not "
        "finite");
  }
  return Status::Ok();
}

Status ValidateIterations(int max_iterations, double tolerance) {
  if (max_iterations < 1) {
    return InvalidArgument("conjugate gradient: max_iterations must be >= 1, got " +
                           std::to_string(max_iterations));
  }
  if (!(tolerance > 0)) {
    return InvalidArgument("conjugate gradient: tolerance must be > 0, got " + Sci(tolerance));
  }
  return Status::Ok();
}

Status ValidateFeatures(const torch::Tensor& phi, int64_t d, MPI_Comm comm) {
  if (!phi.defined() || phi.dim() != 2 || phi.size(1) != d || !phi.device().is_cpu() ||
      (phi.scalar_type() != torch::kFloat && phi.scalar_type() != torch::kDouble)) {
    return InvalidArgument("conjugate gradient: features must be a CPU float32 or float64 [n, " +
                           std::to_string(d) + "] tensor, got " +
                           (phi.defined() ? ShapeOf(phi) : "undefined"));
  }
  if (!AllFinite(phi)) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    return InvalidArgument("conjugate gradient: the features on rank " + std::to_string(rank) +
                           " contain NaN or Inf; fix the feature extractor or drop those rows");
  }
  return Status::Ok();
}

// Every rank returns an error when any rank has one, so none is left in a collective alone.
Status AgreeOnStatus(const Status& local, MPI_Comm comm) {
  double failed = local.ok() ? 0 : 1;
  AllreduceSum(&failed, 1, comm);
  if (!local.ok()) return local;
  if (failed > 0) {
    return InvalidArgument("conjugate gradient: " + std::to_string(std::llround(failed)) +
                           " other rank(s) rejected their arguments; see their errors");
  }
  return Status::Ok();
}

// Extreme eigenvalues of the Lanczos tridiagonal that CG's coefficients define bound those of
// the operator from inside: their ratio is a lower bound on its condition number.
double LanczosCondition(const std::vector<double>& alphas, const std::vector<double>& betas) {
  const int64_t k = static_cast<int64_t>(alphas.size());
  if (k == 0) return 0;
  auto t = torch::zeros({k, k}, torch::kDouble);
  auto entries = t.accessor<double, 2>();
  for (int64_t j = 0; j < k; ++j) {
    entries[j][j] = 1.0 / alphas[j] + (j > 0 ? betas[j - 1] / alphas[j - 1] : 0.0);
    if (j + 1 < k) entries[j][j + 1] = entries[j + 1][j] = std::sqrt(betas[j]) / alphas[j];
  }
  const auto ritz = torch::linalg_eigvalsh(t);
  const double smallest = ritz.min().item<double>();
  const double largest = ritz.max().item<double>();
  return smallest > 0 ? largest / smallest : std::numeric_limits<double>::infinity();
}

Result<SolveReport> RunConjugateGradient(const GramOperator& gram, const torch::Tensor& rhs,
                                         const torch::Tensor& w0, double lambda, int max_iterations,
                                         double tolerance) {
  FERRY_RETURN_IF_ERROR(ValidateSystem(rhs, w0, lambda));
  FERRY_RETURN_IF_ERROR(ValidateIterations(max_iterations, tolerance));
  const int64_t d = rhs.size(0);
  SolveReport report;
  report.lambda_used = lambda;
  auto b = DoubleCopy(rhs);
  Axpy(lambda, Double(w0), b);
  const double b_norm = std::sqrt(Dot(b, b));
  if (b_norm == 0) {
    report.w = torch::zeros({d}, w0.options());
    report.note = "b + lambda w0 is zero, and so is w";
    return report;
  }
  int iteration = 0;
  auto apply = [&](const torch::Tensor& v) -> Result<torch::Tensor> {
    auto out = gram(v);
    if (!out.defined() || out.dim() != 1 || out.size(0) != d) {
      return InvalidArgument("conjugate gradient: the Gram operator must return [" +
                             std::to_string(d) + "], got " +
                             (out.defined() ? ShapeOf(out) : "undefined"));
    }
    out = DoubleCopy(out);
    if (!AllFinite(out)) {
      return InvalidArgument("conjugate gradient: G v is not finite at iteration " +
                             std::to_string(iteration) +
                             ": the features are too large for their dtype");
    }
    Axpy(lambda, v, out);
    return out;
  };

  auto x = DoubleCopy(w0);
  auto ax = apply(x);
  if (!ax.ok()) return ax.status();
  auto r = b.clone();
  Axpy(-1.0, *ax, r);
  auto p = r.clone();
  double rr = Dot(r, r);
  const double threshold = tolerance * b_norm;
  std::vector<double> alphas;
  std::vector<double> betas;
  while (std::sqrt(rr) > threshold && iteration < max_iterations) {
    auto q = apply(p);
    if (!q.ok()) return q.status();
    const double curvature = Dot(p, *q);
    if (!(curvature > 0)) {
      report.note = "CG stopped at iteration " + std::to_string(iteration) +
                    ": no curvature along the search direction (G singular and lambda = 0, with "
                    "the residual left in its null space)";
      break;
    }
    const double alpha = rr / curvature;
    Axpy(alpha, p, x);
    Axpy(-alpha, *q, r);
    const double rr_next = Dot(r, r);
    const double beta = rr_next / rr;
    UpdateDirection(r, beta, p);
    rr = rr_next;
    ++iteration;
    if (static_cast<int>(alphas.size()) < kMaxLanczosSteps) {
      alphas.push_back(alpha);
      betas.push_back(beta);
    }
  }
  report.w = x.to(w0.scalar_type());
  report.cg_iterations = iteration;
  report.residual_norm = std::sqrt(rr) / b_norm;
  report.condition_estimate = LanczosCondition(alphas, betas);
  if (report.note.empty() && report.residual_norm > tolerance) {
    report.note = "CG did not reach the tolerance " + Sci(tolerance) + " in " +
                  std::to_string(max_iterations) + " iterations (relative residual " +
                  Sci(report.residual_norm) + ")";
  }
  return report;
}

Result<SolveReport> RunCholesky(const NormalEquations& equations, const torch::Tensor& w0,
                                double lambda) {
  FERRY_RETURN_IF_ERROR(ValidateSystem(equations.rhs, w0, lambda));
  FERRY_RETURN_IF_ERROR(ValidateGram(equations.gram, equations.rhs.size(0)));
  const auto gram = Double(equations.gram);
  const auto rhs = Double(equations.rhs);
  const auto w0_double = Double(w0);
  const double mean_diagonal = gram.diagonal().mean().item<double>();
  const double floor = mean_diagonal > 0 ? 1e-6 * mean_diagonal : 1.0;

  SolveReport report;
  report.lambda_used = lambda;
  std::string first_failure;
  for (int step = 0;; ++step) {
    const Attempt attempt = TryCholesky(gram, rhs, w0_double, report.lambda_used);
    if (attempt.w.defined()) {
      auto b = rhs + report.lambda_used * w0_double;
      auto residual = gram.mv(attempt.w) + report.lambda_used * attempt.w - b;
      report.w = attempt.w.to(w0.scalar_type());
      report.condition_estimate = attempt.condition;
      report.residual_norm = RelativeResidual(residual, b.norm().item<double>());
      report.regularised_more = step > 0;
      if (report.regularised_more) {
        report.note = "at lambda = " + Sci(lambda) + ", " + first_failure +
                      "; solved with lambda = " + Sci(report.lambda_used);
      }
      return report;
    }
    if (step == 0) first_failure = attempt.failure;
    if (step == kMaxRegularisationSteps) {
      return Internal("least squares: no lambda up to " + Sci(report.lambda_used) +
                      " made the system solvable: " + attempt.failure);
    }
    report.lambda_used = std::max(floor, 10 * report.lambda_used);
  }
}

}  // namespace

NormalEquations FormNormalEquations(const torch::Tensor& phi, const torch::Tensor& y) {
  FERRY_CHECK(phi.dim() == 2 && y.dim() == 1 && y.size(0) == phi.size(0));
  FERRY_CHECK(phi.device().is_cpu());
  FERRY_CHECK(phi.scalar_type() == torch::kFloat || phi.scalar_type() == torch::kDouble);
  at::NoGradGuard no_grad;
  const int64_t n = phi.size(0);
  const int64_t d = phi.size(1);
  const auto features = phi.contiguous();
  const auto targets = y.to(phi.scalar_type()).contiguous();
  auto gram = torch::zeros({d, d}, torch::kDouble);
  auto rhs = torch::zeros({d}, torch::kDouble);
  auto block_gram = torch::empty({d, d}, phi.options());
  auto block_rhs = torch::empty({d}, phi.options());
  for (int64_t start = 0; start < n; start += kRowsPerBlock) {
    const int64_t rows = std::min(kRowsPerBlock, n - start);
    const auto block = features.narrow(0, start, rows);
    torch::mm_out(block_gram, block.t(), block);
    gram.add_(block_gram);
    torch::mv_out(block_rhs, block.t(), targets.narrow(0, start, rows));
    rhs.add_(block_rhs);
  }
  // The blocked products need not be bitwise symmetric; the reduced G then is.
  gram = (gram + gram.t()) / 2;
  return {std::move(gram), std::move(rhs), n};
}

void AllreduceNormalEquations(NormalEquations* equations, MPI_Comm comm) {
  FERRY_CHECK(equations != nullptr);
  FERRY_CHECK(equations->rhs.dim() == 1 && equations->gram.dim() == 2);
  const int64_t d = equations->rhs.size(0);
  FERRY_CHECK(equations->gram.size(0) == d && equations->gram.size(1) == d);
  at::NoGradGuard no_grad;
  auto fused = torch::empty({d * d + d + 1}, torch::kDouble);
  fused.narrow(0, 0, d * d).copy_(equations->gram.reshape({-1}));
  fused.narrow(0, d * d, d).copy_(equations->rhs);
  double* data = fused.data_ptr<double>();
  data[d * d + d] = static_cast<double>(equations->rows);
  AllreduceSum(data, static_cast<size_t>(fused.numel()), comm);
  equations->gram = fused.narrow(0, 0, d * d).view({d, d});
  equations->rhs = fused.narrow(0, d * d, d);
  equations->rows = std::llround(data[d * d + d]);
}

Result<SolveReport> SolveCholesky(const NormalEquations& equations, const torch::Tensor& w0,
                                  double lambda) {
  at::NoGradGuard no_grad;
  try {
    return RunCholesky(equations, w0, lambda);
  } catch (const c10::Error& e) {
    return Internal(std::string("least squares: LibTorch failed in SolveCholesky: ") +
                    e.what_without_backtrace());
  }
}

Result<SolveReport> SolveConjugateGradient(const GramOperator& gram, const torch::Tensor& rhs,
                                           const torch::Tensor& w0, double lambda,
                                           int max_iterations, double tolerance) {
  at::NoGradGuard no_grad;
  try {
    return RunConjugateGradient(gram, rhs, w0, lambda, max_iterations, tolerance);
  } catch (const c10::Error& e) {
    return Internal(std::string("conjugate gradient: LibTorch failed: ") +
                    e.what_without_backtrace());
  }
}

Result<SolveReport> SolveConjugateGradient(const torch::Tensor& phi, const torch::Tensor& rhs,
                                           const torch::Tensor& w0, double lambda, MPI_Comm comm,
                                           int max_iterations, double tolerance) {
  at::NoGradGuard no_grad;
  Status local;
  try {
    local = ValidateSystem(rhs, w0, lambda);
    if (local.ok()) local = ValidateIterations(max_iterations, tolerance);
    if (local.ok()) local = ValidateFeatures(phi, rhs.size(0), comm);
  } catch (const c10::Error& e) {
    local = Internal(std::string("conjugate gradient: LibTorch failed checking arguments: ") +
                     e.what_without_backtrace());
  }
  FERRY_RETURN_IF_ERROR(AgreeOnStatus(local, comm));
  const auto features = phi.contiguous();
  const int64_t n = features.size(0);
  const GramOperator apply = [&](const torch::Tensor& v) {
    const auto v_features = v.to(features.scalar_type());
    auto out = torch::zeros({v.size(0)}, torch::kDouble);
    // Both matvecs of a block run back to back, while it is likely still cached, and the sum
    // over blocks is float64.
    for (int64_t start = 0; start < n; start += kRowsPerBlock) {
      const auto block = features.narrow(0, start, std::min(kRowsPerBlock, n - start));
      out.add_(block.t().mv(block.mv(v_features)));
    }
    AllreduceSum(out.data_ptr<double>(), static_cast<size_t>(out.numel()), comm);
    return out;
  };
  return SolveConjugateGradient(apply, rhs, w0, lambda, max_iterations, tolerance);
}

Result<SolveReport> SolveConjugateGradient(const NormalEquations& equations,
                                           const torch::Tensor& w0, double lambda,
                                           int max_iterations, double tolerance) {
  at::NoGradGuard no_grad;
  torch::Tensor gram;
  try {
    FERRY_RETURN_IF_ERROR(ValidateSystem(equations.rhs, w0, lambda));
    FERRY_RETURN_IF_ERROR(ValidateGram(equations.gram, equations.rhs.size(0)));
    gram = Double(equations.gram);
  } catch (const c10::Error& e) {
    return Internal(std::string("conjugate gradient: LibTorch failed checking arguments: ") +
                    e.what_without_backtrace());
  }
  return SolveConjugateGradient([&gram](const torch::Tensor& v) { return gram.mv(v); },
                                equations.rhs, w0, lambda, max_iterations, tolerance);
}

}  // namespace ferry::learner::linalg
