#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/learner_bench/common.h"
#include "core/log.h"
#include "core/queue.h"
#include "learner/dqn_loss.h"
#include "learner/dqn_updater.h"
#include "learner/gradient_reducer.h"
#include "learner/linalg/allreducer.h"
#include "learner/target_ahead.h"

namespace ferry::bench::learner_bench {
namespace {

using Algorithm = learner::linalg::Allreducer::Algorithm;

constexpr int64_t kSgemmSize = 512;

// Matmul FLOPs of one forward pass of `batch` rows.
double ForwardFlops(const ModelSpec& spec, int batch) {
  double flops = 0;
  int in = spec.obs_dim;
  for (int width : spec.hidden) {
    flops += 2.0 * batch * in * width;
    in = width;
  }
  return flops + 2.0 * batch * in * spec.num_actions;
}

// A way of running the update: how many ranks, with how many LibTorch threads each, how the
// gradients are summed, whether through LibTorch's autograd (learner/fast_dqn_gradients.h), and
// whether a second thread computes the target values ahead (learner/target_ahead.h).
struct UpdateConfig {
  int ranks;
  int threads;
  Algorithm algorithm;
  bool overlap = false;
  bool autograd = false;
  bool ahead = false;
};

// Buckets for the overlapped configurations. A bucket closes after the parameter that fills it,
// so the 3x512 MLP (2 MB of gradients, three 512-wide layers) gets 3.
constexpr size_t kOverlapBucketBytes = size_t{256} << 10;

// One rank's share of the learner's update, as learner/apex_dqn.cc runs it: DqnUpdater's
// Double-DQN loss and backward on a synthetic batch of its share of spec.batch rows, gradients
// summed across `comm` by a GradientReducer, then clip and Adam. With config.ahead a helper
// thread, standing in for the learner's sampling thread, fills each batch's target values
// while the update before it runs (started by StartAhead, for one timed window).
class UpdateLoop {
 public:
  UpdateLoop(const ModelSpec& spec, MPI_Comm comm, const UpdateConfig& config)
      : updater_(Options(spec, config), torch::kCPU),
        global_batch_(spec.batch),
        reducer_(updater_.online()->parameters(), comm, ReducerOptions(config)) {
    if (config.ahead) {
      ahead_ =
          std::make_unique<learner::TargetAhead>(*updater_.target(), updater_.target_version());
    }
    const int local_batch = spec.batch / config.ranks;
    batch_.obs = torch::randn({local_batch, spec.obs_dim});
    batch_.next_obs = torch::randn({local_batch, spec.obs_dim});
    batch_.action = torch::randint(spec.num_actions, {local_batch}, torch::kInt64);
    batch_.reward = torch::randn({local_batch});
    batch_.discount = torch::full({local_batch}, 0.99f);
    batch_.weights = torch::ones({local_batch});
  }

  // Starts and stops config.ahead's helper thread, around one timed window (no-ops without it).
  void StartAhead() {
    if (!ahead_) return;
    filled_ = std::make_unique<core::BoundedQueue<learner::DqnBatch>>(2);
    helper_ = std::thread([this] {
      while (!filled_->closed()) {
        learner::DqnBatch b = batch_;  // The same rows; target values of its own.
        ahead_->Fill(&b);
        while (!filled_->Push(std::move(b), std::chrono::milliseconds(5)) && !filled_->closed()) {
        }
      }
    });
  }
  void StopAhead() {
    if (!ahead_) return;
    filled_->Close();
    helper_.join();
    filled_.reset();
  }

  void Step() {
    const double t0 = core::NowSeconds();
    const double cpu0 = ProcessCpuSeconds();  // LibTorch's threads (and the helper) included.
    std::optional<learner::DqnBatch> filled;
    if (filled_) filled = filled_->Pop(std::chrono::seconds(5));
    reducer_.BeginBackward();
    updater_.ComputeGradients(filled ? *filled : batch_, /*normaliser=*/global_batch_);
    const double cpu1 = ProcessCpuSeconds();
    const double t1 = core::NowSeconds();
    reducer_.Reduce(/*have_gradients=*/true);
    const double t2 = core::NowSeconds();
    updater_.UnpackGradients(reducer_);
    updater_.ApplyGradients();
    if (ahead_) ahead_->Publish(*updater_.target(), updater_.target_version());
    const double t3 = core::NowSeconds();
    phases_.compute_ms += 1e3 * (t1 - t0);
    phases_.compute_cpu_ms += 1e3 * (cpu1 - cpu0);
    phases_.allreduce_ms += 1e3 * (t2 - t1);
    phases_.optimizer_ms += 1e3 * (t3 - t2);
    ++steps_;
  }

  // Milliseconds per update in each phase since the last call.
  struct Phases {
    double compute_ms = 0, compute_cpu_ms = 0, allreduce_ms = 0, optimizer_ms = 0;
  };
  Phases TakePhases() {
    const double n = static_cast<double>(std::max<int64_t>(steps_, 1));
    const Phases means{phases_.compute_ms / n, phases_.compute_cpu_ms / n, phases_.allreduce_ms / n,
                       phases_.optimizer_ms / n};
    phases_ = Phases();
    steps_ = 0;
    return means;
  }
  int64_t parameters() { return updater_.num_parameters(); }
  std::string_view algorithm() const { return AlgorithmName(reducer_.algorithm()); }
  size_t buckets() const { return reducer_.num_buckets(); }
  bool autograd() const { return updater_.autograd(); }

 private:
  static learner::UpdaterOptions Options(const ModelSpec& spec, const UpdateConfig& config) {
    learner::UpdaterOptions options;
    options.autograd = config.autograd || config.overlap;
    options.obs_dim = spec.obs_dim;
    options.num_actions = spec.num_actions;
    options.hidden = spec.hidden;
    options.learning_rate = 1e-4;
    return options;
  }
  static learner::GradientReducerOptions ReducerOptions(const UpdateConfig& config) {
    learner::GradientReducerOptions options;
    options.algorithm = config.algorithm;
    options.overlap = config.overlap;
    options.bucket_bytes = config.overlap ? kOverlapBucketBytes : size_t{1} << 30;
    return options;
  }

  learner::DqnUpdater updater_;
  int global_batch_;
  learner::GradientReducer reducer_;
  learner::DqnBatch batch_;
  std::unique_ptr<learner::TargetAhead> ahead_;
  std::unique_ptr<core::BoundedQueue<learner::DqnBatch>> filled_;  // From StartAhead to StopAhead.
  std::thread helper_;
  Phases phases_;
  int64_t steps_ = 0;
};

double MedianPhase(const std::vector<UpdateLoop::Phases>& windows,
                   double UpdateLoop::Phases::*phase) {
  std::vector<double> values;
  for (const UpdateLoop::Phases& p : windows) values.push_back(p.*phase);
  return values.empty() ? 0 : Median(values);
}

}  // namespace

SgemmRates SgemmBench(const Settings& s) {
  torch::NoGradGuard no_grad;
  const auto a = torch::randn({kSgemmSize, kSgemmSize});
  const auto b = torch::randn({kSgemmSize, kSgemmSize});
  auto c = torch::empty({kSgemmSize, kSgemmSize});
  const auto mm = [&] { torch::mm_out(c, a, b); };
  const double flops = 2.0 * kSgemmSize * kSgemmSize * kSgemmSize;
  const auto rates = [flops](Timing t) { return Window{flops / t.wall, flops / t.cpu}; };
  const std::vector<Figure> figures = Alternate(
      s.rounds, {[&] {
                   Timing t;
                   t.wall = OnRankZero([&] {
                     t = TimeCollective(MPI_COMM_SELF, s.update_window_s, mm);
                     return t.wall;
                   });
                   MPI_Bcast(&t.cpu, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
                   return rates(t);
                 },
                 [&] { return rates(TimeCollective(MPI_COMM_WORLD, s.update_window_s, mm)); }});
  const SgemmRates sgemm{{figures[0].wall.median, figures[0].cpu.median},
                         {figures[1].wall.median, figures[1].cpu.median}};
  JsonLine line("sgemm");
  line.Add("m", kSgemmSize).Add("n", kSgemmSize).Add("k", kSgemmSize).Add("threads_per_rank", 1);
  AddSpread(line, "gflops_one_core", figures[0].wall, 1e-9);
  AddSpread(line, "gflops_one_core_cpu", figures[0].cpu, 1e-9);
  line.Add("ranks", Ranks())
      .Add("gflops_per_rank_all_ranks", sgemm.per_rank.wall_rate / 1e9)
      .Add("gflops_per_rank_all_ranks_cpu", sgemm.per_rank.cpu_rate / 1e9);
  Emit(line);
  return sgemm;
}

void UpdateBench(const Settings& s, const SgemmRates& sgemm) {
  const int ranks = Ranks();
  std::vector<UpdateConfig> configs = {{1, 1, Algorithm::kAuto},
                                       {1, 1, Algorithm::kAuto, false, /*autograd=*/true}};
  // The helper thread takes a second core: on one rank, while the others sleep.
  if (ranks > 1) configs.push_back({1, 1, Algorithm::kAuto, false, false, /*ahead=*/true});
  if (ranks > 1) {
    // LibTorch's path: ferry's calls one BLAS thread (OPENBLAS_NUM_THREADS=1) whatever
    // LibTorch's pool holds.
    configs.push_back({1, ranks, Algorithm::kAuto, false, /*autograd=*/true});
    configs.push_back({ranks, 1, Algorithm::kSharedMemory});
    configs.push_back({ranks, 1, Algorithm::kMpi});
    configs.push_back({ranks, 1, Algorithm::kSharedMemory, /*overlap=*/true});
    configs.push_back({ranks, 1, Algorithm::kMpi, /*overlap=*/true});
  }
  for (const ModelSpec& spec : Models()) {
    std::vector<std::unique_ptr<UpdateLoop>> loops;
    // Rank 0's phase times per timed window, of every configuration (rank 0 runs them all).
    std::vector<std::vector<UpdateLoop::Phases>> phases(configs.size());
    std::vector<std::function<Window()>> candidates;
    for (size_t c = 0; c < configs.size(); ++c) {
      const UpdateConfig& config = configs[c];
      const bool alone = config.ranks == 1;
      loops.push_back(
          alone && Rank() != 0
              ? nullptr
              : std::make_unique<UpdateLoop>(spec, alone ? MPI_COMM_SELF : MPI_COMM_WORLD, config));
      UpdateLoop* loop = loops.back().get();
      candidates.push_back([&s, loop, alone, threads = config.threads, window = &phases[c]] {
        const auto run = [&](MPI_Comm comm) {
          SetThreads(threads);
          loop->StartAhead();
          loop->Step();  // Warm: allocations, caches.
          loop->TakePhases();
          const double seconds =
              TimeCollective(comm, s.update_window_s, [&] { loop->Step(); }).wall;
          loop->StopAhead();
          if (Rank() == 0) window->push_back(loop->TakePhases());
          SetThreads(1);
          return seconds;
        };
        const double seconds =
            alone ? OnRankZero([&] { return run(MPI_COMM_SELF); }) : run(MPI_COMM_WORLD);
        return Window{1.0 / seconds, 0};
      });
    }
    const std::vector<Figure> figures = Alternate(s.rounds, candidates);
    if (Rank() != 0) continue;
    const double baseline = figures[0].wall.median;
    for (size_t c = 0; c < configs.size(); ++c) {
      const UpdateConfig& config = configs[c];
      const double ups = figures[c].wall.median;
      // Online and target forward on next_obs, online forward on obs, and its backward (two
      // matmuls per layer): five forward passes' matmuls.
      const double flops = 5 * ForwardFlops(spec, spec.batch / config.ranks);
      const double compute_cpu_ms = MedianPhase(phases[c], &UpdateLoop::Phases::compute_cpu_ms);
      const double compute_flops_per_cpu_s = flops / (compute_cpu_ms / 1e3);
      JsonLine line("update");
      line.Add("model", spec.name)
          .Add("parameters", static_cast<int64_t>(loops[c]->parameters()))
          .Add("batch", spec.batch)
          .Add("ranks", config.ranks)
          .Add("threads_per_rank", config.threads)
          .Add("allreduce", std::string(loops[c]->algorithm()))
          .Add("overlap", config.overlap)
          .Add("autograd", loops[c]->autograd())
          .Add("target_ahead", config.ahead)
          .Add("buckets", static_cast<int64_t>(loops[c]->buckets()));
      AddSpread(line, "updates_per_s", figures[c].wall, 1);
      line.Add("r1_updates_per_s", baseline)
          .Add("speedup", ups / baseline)
          .Add("scaling_efficiency", ups / baseline / (config.ranks * config.threads))
          .Add("compute_ms", MedianPhase(phases[c], &UpdateLoop::Phases::compute_ms))
          .Add("compute_cpu_ms", compute_cpu_ms)
          .Add("allreduce_ms", MedianPhase(phases[c], &UpdateLoop::Phases::allreduce_ms))
          .Add("optimizer_ms", MedianPhase(phases[c], &UpdateLoop::Phases::optimizer_ms))
          .Add("matmul_gflop_per_update", flops / 1e9)
          .Add("compute_gflops_per_cpu_s", compute_flops_per_cpu_s / 1e9)
          .Add("sgemm_gflops_per_cpu_s", sgemm.one_core.cpu_rate / 1e9)
          .Add("vs_sgemm", compute_flops_per_cpu_s / sgemm.one_core.cpu_rate);
      line.Print();
    }
  }
}

}  // namespace ferry::bench::learner_bench
