#include <torch/torch.h>

#include <functional>
#include <limits>
#include <vector>

#include "bench/learner_bench/common.h"
#include "learner/fused_adam.h"
#include "models/q_network.h"

namespace ferry::bench::learner_bench {

// The clip + Adam step alone on the tuned configs' network (zoo_mlp's 67k parameters), with the
// first moments a live learner holds: ordinary ones under ordinary gradients, or subnormal ones
// under zero gradients, as in a ReLU unit that stopped firing, whose moments decay by beta1
// each step through the range under 1.2e-38. ferry's fused step (learner/fused_adam.h), which
// flushes them to zero, against the same step keeping them and LibTorch's clip_grad_norm_ and
// Adam::step. Every call first refills the moments so that each step sees them; "refill" times
// that alone. On rank 0 while the others sleep.
void AdamBench(const Settings& s) {
  OnRankZero([&] {
    const ModelSpec& spec = Models().back();
    models::QNetwork net(spec.obs_dim, spec.num_actions, spec.hidden);
    const std::vector<torch::Tensor> params = net->parameters();
    torch::optim::Adam adam(params, torch::optim::AdamOptions(1e-4));
    for (const torch::Tensor& p : params) p.mutable_grad() = torch::zeros_like(p);
    learner::ClipAndStep(adam, 1.0);  // Creates the moments.
    std::vector<torch::Tensor> first, second;
    int64_t count = 0;
    for (const torch::Tensor& p : params) {
      auto& state = static_cast<torch::optim::AdamParamState&>(
          *adam.state().at(c10::guts::to_string(p.unsafeGetTensorImpl())));
      first.push_back(state.exp_avg());
      second.push_back(state.exp_avg_sq());
      count += p.numel();
    }
    const float subnormal = std::numeric_limits<float>::min() / 4;
    for (const bool stopped : {false, true}) {
      torch::manual_seed(2);
      for (const torch::Tensor& p : params) {
        p.mutable_grad() = stopped ? torch::zeros_like(p) : 1e-3 * torch::randn_like(p);
      }
      const auto refill = [&] {
        for (torch::Tensor& m : first) m.fill_(stopped ? subnormal : 1e-4f);
        for (torch::Tensor& v : second) v.fill_(1e-8f);
      };
      const std::vector<std::function<void()>> steps = {
          [&] {
            refill();
            learner::ClipAndStep(adam, /*max_grad_norm=*/1e9);
          },
          [&] {
            refill();
            learner::ClipAndStep(adam, 1e9, learner::Subnormals::kKeep);
          },
          [&] {
            refill();
            torch::nn::utils::clip_grad_norm_(params, 1e9);
            adam.step();
          },
          refill};
      std::vector<std::vector<double>> ms(steps.size());
      for (int round = 0; round < s.rounds; ++round) {
        for (size_t k = 0; k < steps.size(); ++k) {
          ms[k].push_back(1e3 * TimeCollective(MPI_COMM_SELF, s.window_s, steps[k]).wall);
        }
      }
      const char* names[] = {"ferry", "ferry, keeping subnormals", "LibTorch"};
      for (size_t k = 0; k < 3; ++k) {
        JsonLine line("adam");
        line.Add("model", spec.name)
            .Add("parameters", count)
            .Add("moments", stopped ? "subnormal" : "ordinary")
            .Add("step", names[k]);
        AddSpread(line, "ms", Summarize(ms[k]), 1.0);
        line.Add("refill_ms", Median(ms[3])).Add("rounds", s.rounds).Add("load1", Load1());
        line.Print();
      }
    }
    return 0.0;
  });
}

}  // namespace ferry::bench::learner_bench
