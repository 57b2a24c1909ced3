#include "learner/ls_refit.h"

#include "core/log.h"
#include "learner/linalg/least_squares.h"

namespace ferry::learner {

Result<RefitReport> RefitHead(DqnUpdater& updater, const std::vector<DqnBatch>& batches,
                              double lambda, const std::string& solver, MPI_Comm comm) {
  torch::NoGradGuard no_grad;
  RefitReport report;
  double t = core::NowSeconds();
  auto& online = updater.online();
  std::vector<torch::Tensor> phis, ys, actions;
  for (const auto& b : batches) {
    const torch::Tensor features = online->Features(b.obs).to(torch::kCPU);
    phis.push_back(torch::cat({features, torch::ones({features.size(0), 1})}, 1));
    const torch::Tensor q_next =
        BootstrapValues(online, updater.target(), b.next_obs, updater.options().double_dqn);
    ys.push_back((b.reward + b.discount * q_next).to(torch::kCPU));
    actions.push_back(b.action.to(torch::kCPU));
  }
  const torch::Tensor phi = torch::cat(phis);
  const torch::Tensor y = torch::cat(ys);
  const torch::Tensor action = torch::cat(actions);
  report.features_seconds = core::NowSeconds() - t;

  auto& head = online->head();
  const torch::Tensor old_head =
      torch::cat({head->weight, head->bias.unsqueeze(1)}, 1).to(torch::kCPU, torch::kFloat64);
  torch::Tensor new_head = old_head.clone();
  for (int a = 0; a < online->num_actions(); ++a) {
    t = core::NowSeconds();
    const torch::Tensor rows = (action == a).nonzero().squeeze(1);
    linalg::NormalEquations eq =
        linalg::FormNormalEquations(phi.index_select(0, rows), y.index_select(0, rows));
    report.gram_seconds += core::NowSeconds() - t;
    t = core::NowSeconds();
    linalg::AllreduceNormalEquations(&eq, comm);
    report.allreduce_seconds += core::NowSeconds() - t;
    report.rows += eq.rows;
    t = core::NowSeconds();
    const torch::Tensor w0 = old_head[a];
    Result<linalg::SolveReport> solved =
        solver == "cg" ? linalg::SolveConjugateGradient(eq, w0, lambda, /*max_iterations=*/200,
                                                        /*tolerance=*/1e-8)
                       : linalg::SolveCholesky(eq, w0, lambda);
    if (!solved.ok()) return solved.status();
    report.regularised_more |= solved->regularised_more;
    new_head[a].copy_(solved->w);
    report.solve_seconds += core::NowSeconds() - t;
  }
  // Every rank solved the same system; rank 0's answer makes them bit-identical.
  MPI_Bcast(new_head.data_ptr<double>(), static_cast<int>(new_head.numel()), MPI_DOUBLE, 0, comm);
  report.head_change =
      (new_head - old_head).norm().item<double>() / (old_head.norm().item<double>() + 1e-12);
  const int64_t width = head->weight.size(1);
  head->weight.copy_(new_head.narrow(1, 0, width).to(head->weight.options()));
  head->bias.copy_(new_head.select(1, width).to(head->bias.options()));
  return report;
}

}  // namespace ferry::learner
