// Learner benchmarks, each figure beside a baseline measured in the same run.
//
//   allreduce      bus bandwidth of each Allreducer algorithm, 4 KB..64 MB,
//                    vs MPI_Allreduce and vs memcpy of the same bytes (rank 0 alone)
//   sgemm          torch::mm of 512 x 512 float32: the core's matmul limit
//   update         Double-DQN updates/s: loss, backward, fused gradient allreduce, clip, Adam;
//                    R = 1 vs R = ranks, without autograd (ferry's CPU path) vs with it,
//                    with the target values computed ahead on a second thread or not,
//                    matmul FLOP/s vs sgemm
//   adam           the clip + Adam step alone, ferry's fused one vs LibTorch's, over ordinary
//                    and over subnormal first moments (units whose gradients stopped)
//   least_squares  the LS refit's phases (features, Gram, allreduce, Cholesky, CG)
//                    for N rows x d features, R = 1 vs R = ranks
//
// Run it under MPI with two ranks; R = 1 figures come from rank 0 while the others sleep:
//   mpirun -np 2 --oversubscribe --bind-to none
//          --mca btl_vader_single_copy_mechanism none BUILD/bench/learner_bench [--quick]
// Every rank runs one thread (LibTorch's and the BLAS's), so R ranks use R cores. Bus bandwidth is
// algbw * 2 (R - 1) / R with algbw = bytes / time (NCCL's convention): the link traffic an
// optimal allreduce needs, comparable across R and with memcpy.
//   usage: learner_bench [--quick] [--only=allreduce|update|adam|least_squares]
#include <dlfcn.h>
#include <mpi.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench.h"
#include "core/log.h"
#include "core/malloc_tuning.h"
#include "core/queue.h"
#include "learner/dqn_loss.h"
#include "learner/dqn_updater.h"
#include "learner/fused_adam.h"
#include "learner/gradient_reducer.h"
#include "learner/linalg/allreducer.h"
#include "learner/linalg/least_squares.h"
#include "learner/target_ahead.h"
#include "models/q_network.h"

namespace ferry::bench {
namespace {

using learner::linalg::Allreducer;
using Algorithm = Allreducer::Algorithm;

constexpr int64_t kSgemmSize = 512;

struct Settings {
  bool quick = false;
  int rounds = 5;                // Each figure is the median of this many timed windows.
  double window_s = 0.1;         // One timed window of an allreduce or memcpy.
  double update_window_s = 0.4;  // One timed window of learner updates.
  size_t max_allreduce_bytes = size_t{64} << 20;
  double refit_case_budget_s = 70;  // Fewer repeats, then none, for refit cases beyond it.
};

// A smoke run: every code path, figures too noisy to quote.
Settings QuickSettings() {
  Settings s;
  s.quick = true;
  s.rounds = 5;
  s.window_s = 0.01;
  s.update_window_s = 0.05;
  s.max_allreduce_bytes = size_t{1} << 20;
  return s;
}

// LibTorch's intra-op threads, and the BLAS's own: Debian's LibTorch calls an OpenBLAS built
// with pthreads, which ignores torch::set_num_threads and starts a thread per core in every
// process, so two ranks would run four threads on two cores.
void SetThreads(int threads) {
  torch::set_num_threads(threads);
  using SetBlasThreads = void (*)(int);
  if (auto set =
          reinterpret_cast<SetBlasThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    set(threads);
  }
}

int Rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int Ranks() {
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  return ranks;
}

// Prints on rank 0 only.
void Emit(JsonLine& line) {
  if (Rank() == 0) line.Print();
}

// Waits for every rank without polling a core, which a busy MPI_Barrier would take from rank 0
// while it measures alone.
void SleepingBarrier() {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  for (int done = 0; MPI_Test(&request, &done, MPI_STATUS_IGNORE), !done;) Sleep(1e-3);
}

// Runs `work` on rank 0 while the other ranks sleep; every rank returns its result.
double OnRankZero(const std::function<double()>& work) {
  double result = 0;
  if (Rank() == 0) result = work();
  SleepingBarrier();
  MPI_Bcast(&result, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return result;
}

// Seconds per call of `op`, run `calls` times by every rank of `comm` after a barrier, by the
// wall clock and by the calling thread's CPU time: the slowest rank's.
struct Timing {
  double wall = 0;
  double cpu = 0;
};

Timing SecondsPerCall(MPI_Comm comm, int64_t calls, const std::function<void()>& op) {
  MPI_Barrier(comm);
  const double start = core::NowSeconds();
  const double cpu_start = ThreadCpuSeconds();
  for (int64_t i = 0; i < calls; ++i) op();
  double elapsed[2] = {core::NowSeconds() - start, ThreadCpuSeconds() - cpu_start};
  MPI_Allreduce(MPI_IN_PLACE, elapsed, 2, MPI_DOUBLE, MPI_MAX, comm);
  return {elapsed[0] / static_cast<double>(calls), elapsed[1] / static_cast<double>(calls)};
}

// Times about `seconds` of calls of `op` on every rank of `comm`, the number of calls set by
// one untimed call that all ranks agree on.
Timing TimeCollective(MPI_Comm comm, double seconds, const std::function<void()>& op) {
  const double one = SecondsPerCall(comm, 1, op).wall;
  const auto calls = static_cast<int64_t>(std::clamp(seconds / one, 1.0, 1e6));
  return SecondsPerCall(comm, calls, op);
}

double Median(std::vector<double> values) { return Summarize(std::move(values)).median; }

void AddSpread(JsonLine& line, const std::string& name, const Spread& spread, double scale) {
  line.Add(name, spread.median * scale)
      .Add(name + "_min", spread.min * scale)
      .Add(name + "_max", spread.max * scale);
}

// ---------------------------------------------------------------------------------------------
// allreduce

double BusFactor(int ranks) { return 2.0 * (ranks - 1) / ranks; }

void AllreduceBench(const Settings& s) {
  const int ranks = Ranks();
  if (ranks < 2) {
    JsonLine line("allreduce");
    line.Add("skipped", "needs 2 or more ranks: run under mpirun -np 2");
    Emit(line);
    return;
  }
  // Zeros stay zeros however often they are summed; every buffer is touched before timing.
  std::vector<float> data(s.max_allreduce_bytes / sizeof(float));
  Allreducer mpi(MPI_COMM_WORLD, Algorithm::kMpi);
  Allreducer shared_memory(MPI_COMM_WORLD, Algorithm::kSharedMemory, Allreducer::kDefaultChunkBytes,
                           data.size());
  std::fill_n(shared_memory.buffer(), data.size(), 0.f);
  // The learner's path is the zero-copy one: it packs gradients straight into the buffer.
  struct Variant {
    const char* name;
    std::function<void(size_t count)> sum;
  };
  const std::vector<Variant> variants = {
      {"mpi", [&](size_t count) { mpi.Sum(data.data(), count); }},
      {"shared_memory", [&](size_t count) { shared_memory.Sum(data.data(), count); }},
      {"shared_memory_zero_copy", [&](size_t count) { shared_memory.SumBuffer(0, count); }},
  };
  std::vector<char> source(Rank() == 0 ? s.max_allreduce_bytes : 0, 1);
  std::vector<char> target(source.size(), 0);

  for (size_t bytes = 4096; bytes <= s.max_allreduce_bytes; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    std::vector<std::function<Window()>> candidates;
    candidates.push_back([&] {
      const double seconds = OnRankZero([&] {
        return TimeCollective(MPI_COMM_SELF, s.window_s,
                              [&] {
                                std::memcpy(target.data(), source.data(), bytes);
                                KeepAlive(target.data());
                              })
            .wall;
      });
      return Window{static_cast<double>(bytes) / seconds, 0};
    });
    for (const Variant& variant : variants) {
      candidates.push_back([&] {
        const double seconds =
            TimeCollective(MPI_COMM_WORLD, s.window_s, [&] { variant.sum(count); }).wall;
        return Window{static_cast<double>(bytes) / seconds, 0};
      });
    }
    const std::vector<Figure> figures = Alternate(s.rounds, candidates);
    const double memcpy_rate = figures[0].wall.median;
    const double mpi_busbw = figures[1].wall.median * BusFactor(ranks);
    for (size_t v = 0; v < variants.size(); ++v) {
      const Spread& algbw = figures[v + 1].wall;
      const double busbw = algbw.median * BusFactor(ranks);
      JsonLine line("allreduce");
      line.Add("ranks", ranks)
          .Add("bytes", static_cast<int64_t>(bytes))
          .Add("algorithm", variants[v].name)
          .Add("time_us", static_cast<double>(bytes) / algbw.median * 1e6)
          .Add("algbw_gbs", algbw.median / 1e9);
      AddSpread(line, "busbw_gbs", algbw, BusFactor(ranks) / 1e9);
      line.Add("mpi_busbw_gbs", mpi_busbw / 1e9)
          .Add("vs_mpi", busbw / mpi_busbw)
          .Add("memcpy_gbs", memcpy_rate / 1e9)
          .Add("vs_memcpy", busbw / memcpy_rate);
      Emit(line);
    }
  }
}

// The shared-memory algorithm's pipeline chunk, at 16 MB.
void AllreduceChunkBench(const Settings& s) {
  const int ranks = Ranks();
  const size_t bytes = size_t{16} << 20;
  if (ranks < 2 || s.quick) return;
  std::vector<float> data(bytes / sizeof(float));
  const size_t count = data.size();
  Allreducer mpi(MPI_COMM_WORLD, Algorithm::kMpi);
  for (size_t chunk : {size_t{64} << 10, size_t{256} << 10, size_t{1} << 20, size_t{4} << 20}) {
    Allreducer shared_memory(MPI_COMM_WORLD, Algorithm::kSharedMemory, chunk);
    std::vector<std::function<Window()>> candidates;
    for (Allreducer* a : {&mpi, &shared_memory}) {
      candidates.push_back([&, a] {
        const double seconds =
            TimeCollective(MPI_COMM_WORLD, s.window_s, [&] { a->Sum(data.data(), count); }).wall;
        return Window{static_cast<double>(bytes) / seconds * BusFactor(ranks), 0};
      });
    }
    const std::vector<Figure> figures = Alternate(s.rounds, candidates);
    JsonLine line("allreduce_chunk");
    line.Add("ranks", ranks)
        .Add("bytes", static_cast<int64_t>(bytes))
        .Add("algorithm", std::string(AlgorithmName(shared_memory.algorithm())))
        .Add("chunk_bytes", static_cast<int64_t>(chunk));
    AddSpread(line, "busbw_gbs", figures[1].wall, 1e-9);
    line.Add("mpi_busbw_gbs", figures[0].wall.median / 1e9)
        .Add("vs_mpi", figures[1].wall.median / figures[0].wall.median);
    Emit(line);
  }
}

// ---------------------------------------------------------------------------------------------
// sgemm

// FLOP/s per core, counted against the wall clock and against CPU time: on a shared machine the
// wall rate drops with the share of the core the process gets, the CPU rate much less.
struct SgemmRates {
  Window one_core;  // Rank 0 alone.
  Window per_rank;  // Each rank while all of them run it.
};

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

// ---------------------------------------------------------------------------------------------
// update

struct ModelSpec {
  std::string name;
  int obs_dim;
  std::vector<int> hidden;
  int num_actions;
  int batch;  // Global: split across ranks.
};

// The quick-start CartPole network, a large MLP, and the tuned configs' network at CartPole's
// batch (configs/cartpole_zoo.yaml), where per-op costs weigh most.
const std::vector<ModelSpec>& Models() {
  static const std::vector<ModelSpec> models = {{"cartpole_mlp", 4, {64, 64}, 2, 512},
                                                {"mlp_512x3", 128, {512, 512, 512}, 4, 512},
                                                {"zoo_mlp", 4, {256, 256}, 2, 64}};
  return models;
}

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

// ---------------------------------------------------------------------------------------------
// adam

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

// ---------------------------------------------------------------------------------------------
// least squares

constexpr int64_t kFeatureBlock = 4096;
constexpr int64_t kInputPoolRows = 16384;
constexpr int kCgMaxIterations = 1000;
constexpr double kCgTolerance = 1e-6;
// CG over the rows passes over all features twice per iteration: its time per iteration is
// measured over this many, once per case.
constexpr int kCgRowsIterations = 5;
// Refit cases too slow for Settings::rounds repeats within their budget run this many.
constexpr int kMinRefitRepeats = 3;

struct RefitCase {
  int64_t rows;
  int64_t d;
};

struct RefitTimes {
  double features = 0, gram = 0, allreduce = 0, cholesky = 0, cg_gram = 0;
  int cg_iterations = 0;
};

// One rank's data for a refit: features from the body's last layer (d -> d, ReLU) over a pool
// of 16k random inputs repeated down the rows, which costs what distinct rows cost and keeps G
// full rank, and random targets.
class RefitData {
 public:
  RefitData(int64_t rows, int64_t d, torch::Tensor& storage)
      : layer_(d, d),
        inputs_(torch::randn({kInputPoolRows, d})),
        targets_(torch::randn({rows})),
        w0_(torch::randn({d}) * 0.1) {
    const int64_t needed = rows * d;
    if (storage.numel() < needed) {
      storage = torch::empty({0});  // Freed before the larger one is touched.
      storage = torch::zeros({needed});
    }
    features_ = storage.narrow(0, 0, needed).view({rows, d});
  }

  void ComputeFeatures() {
    torch::NoGradGuard no_grad;
    const auto weight_t = layer_->weight.t();
    const int64_t rows = features_.size(0);
    for (int64_t start = 0; start < rows; start += kFeatureBlock) {
      const int64_t n = std::min(kFeatureBlock, rows - start);
      auto out = features_.narrow(0, start, n);
      const int64_t pool_start = start % kInputPoolRows;
      torch::addmm_out(out, layer_->bias, inputs_.narrow(0, pool_start, n), weight_t);
      out.relu_();
    }
  }

  const torch::Tensor& features() const { return features_; }
  const torch::Tensor& targets() const { return targets_; }
  const torch::Tensor& w0() const { return w0_; }

 private:
  torch::nn::Linear layer_;
  torch::Tensor inputs_;
  torch::Tensor targets_;
  torch::Tensor w0_;
  torch::Tensor features_;
};

// The slowest rank's seconds for `op`, started together.
double TimePhase(MPI_Comm comm, const std::function<void()>& op) {
  return SecondsPerCall(comm, 1, op).wall;
}

struct RefitRun {
  std::vector<RefitTimes> repeats;
  double cg_rows_ms_per_iteration = 0;
};

// Every repeat of a refit on the ranks of `comm`, each holding its share of `c.rows`.
RefitRun RunRefit(const RefitCase& c, int repeats, MPI_Comm comm, torch::Tensor& storage) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  const int64_t rows = c.rows / ranks + (rank < c.rows % ranks ? 1 : 0);
  RefitData data(rows, c.d, storage);
  const double lambda = 1e-4 * static_cast<double>(c.rows);
  RefitRun run;
  for (int r = 0; r < repeats; ++r) {
    RefitTimes t;
    learner::linalg::NormalEquations equations;
    t.features = TimePhase(comm, [&] { data.ComputeFeatures(); });
    t.gram = TimePhase(comm, [&] {
      equations = learner::linalg::FormNormalEquations(data.features(), data.targets());
    });
    t.allreduce =
        TimePhase(comm, [&] { learner::linalg::AllreduceNormalEquations(&equations, comm); });
    t.cholesky = TimePhase(comm, [&] {
      FERRY_CHECK(learner::linalg::SolveCholesky(equations, data.w0(), lambda).ok());
    });
    t.cg_gram = TimePhase(comm, [&] {
      auto report = learner::linalg::SolveConjugateGradient(equations, data.w0(), lambda,
                                                            kCgMaxIterations, kCgTolerance);
      FERRY_CHECK(report.ok());
      t.cg_iterations = report->cg_iterations;
    });
    if (r == 0) {
      run.cg_rows_ms_per_iteration =
          1e3 / kCgRowsIterations * TimePhase(comm, [&] {
            FERRY_CHECK(learner::linalg::SolveConjugateGradient(
                            data.features(), equations.rhs, data.w0(), lambda, comm,
                            kCgRowsIterations, /*tolerance=*/1e-30)
                            .ok());
          });
    }
    run.repeats.push_back(t);
  }
  return run;
}

double MedianOf(const std::vector<RefitTimes>& repeats, double RefitTimes::*field) {
  std::vector<double> values;
  for (const RefitTimes& t : repeats) values.push_back(t.*field);
  return Median(values);
}

void AddRefit(JsonLine& line, const std::string& prefix, const RefitRun& run) {
  const auto median_ms = [&](double RefitTimes::*field) {
    return 1e3 * MedianOf(run.repeats, field);
  };
  line.Add(prefix + "features_ms", median_ms(&RefitTimes::features))
      .Add(prefix + "gram_ms", median_ms(&RefitTimes::gram))
      .Add(prefix + "allreduce_ms", median_ms(&RefitTimes::allreduce))
      .Add(prefix + "cholesky_ms", median_ms(&RefitTimes::cholesky))
      .Add(prefix + "refit_ms", median_ms(&RefitTimes::features) + median_ms(&RefitTimes::gram) +
                                    median_ms(&RefitTimes::allreduce) +
                                    median_ms(&RefitTimes::cholesky))
      .Add(prefix + "cg_gram_ms", median_ms(&RefitTimes::cg_gram))
      .Add(prefix + "cg_iterations", run.repeats.front().cg_iterations)
      .Add(prefix + "cg_rows_ms_per_iteration", run.cg_rows_ms_per_iteration);
}

void LeastSquaresBench(const Settings& s) {
  const int ranks = Ranks();
  // In order of cost, so that each case's time can be foreseen from the last one's.
  std::vector<RefitCase> cases = {{65536, 256},   {65536, 512},   {262144, 256},
                                  {65536, 1024},  {262144, 512},  {1048576, 256},
                                  {262144, 1024}, {1048576, 512}, {1048576, 1024}};
  if (s.quick) cases.resize(1);
  torch::Tensor storage = torch::empty({0});
  double seconds_per_flop = 0;  // Of features + Gram at R = 1, from the last case run.
  for (const RefitCase& c : cases) {
    // Features (the d -> d layer) and Gram, 2 N d^2 FLOPs each, dominate; R ranks take 1/R.
    const double flops = 4.0 * static_cast<double>(c.rows) * static_cast<double>(c.d * c.d);
    const double repeat_s = flops * seconds_per_flop * (1 + (ranks > 1 ? 1.0 / ranks : 0.0));
    int repeats = s.rounds;
    while (repeats > kMinRefitRepeats && repeats * repeat_s > s.refit_case_budget_s) --repeats;
    JsonLine line("least_squares");
    line.Add("rows", c.rows).Add("d", c.d);
    if (repeats * repeat_s > s.refit_case_budget_s) {
      line.Add("skipped",
               std::to_string(repeats) + " repeats would take about " +
                   std::to_string(static_cast<int>(repeats * repeat_s)) + " s, over the " +
                   std::to_string(static_cast<int>(s.refit_case_budget_s)) + " s budget of a case");
      Emit(line);
      continue;
    }
    RefitRun alone;
    if (Rank() == 0) alone = RunRefit(c, repeats, MPI_COMM_SELF, storage);
    SleepingBarrier();
    RefitRun together;
    if (ranks > 1) together = RunRefit(c, repeats, MPI_COMM_WORLD, storage);
    if (Rank() == 0) {
      seconds_per_flop = (MedianOf(alone.repeats, &RefitTimes::features) +
                          MedianOf(alone.repeats, &RefitTimes::gram)) /
                         flops;
      line.Add("repeats", repeats);
      AddRefit(line, "r1_", alone);
      if (ranks > 1) AddRefit(line, "r" + std::to_string(ranks) + "_", together);
      line.Print();
    }
    MPI_Bcast(&seconds_per_flop, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  }
}

int Main(int argc, char** argv) {
  core::KeepLargeBlocksInHeap();  // As ferry's own processes run, baselines included.
  MPI_Init(&argc, &argv);
  Settings settings;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      settings = QuickSettings();
    } else if (arg.rfind("--only=", 0) == 0 &&
               (arg == "--only=allreduce" || arg == "--only=update" || arg == "--only=adam" ||
                arg == "--only=least_squares")) {
      only = arg.substr(7);
    } else {
      if (Rank() == 0) {
        std::cerr
            << "usage: learner_bench [--quick] [--only=allreduce|update|adam|least_squares]\n";
      }
      MPI_Finalize();
      return 2;
    }
  }
  const auto run = [&only](const char* section) { return only.empty() || only == section; };
  SetThreads(1);
  torch::manual_seed(1);
  if (Rank() == 0) PrintMachineLine(settings.quick);
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  const std::string library(version, std::find(version, version + length, ','));
  JsonLine mpi_line("mpi");
  mpi_line.Add("library", library).Add("ranks", Ranks()).Add("torch_threads_per_rank", 1);
  Emit(mpi_line);
  const double start = core::NowSeconds();
  if (run("allreduce")) {
    AllreduceBench(settings);
    AllreduceChunkBench(settings);
  }
  if (run("update")) UpdateBench(settings, SgemmBench(settings));
  if (run("adam")) AdamBench(settings);
  if (run("least_squares")) LeastSquaresBench(settings);
  JsonLine done("done");
  done.Add("seconds", core::NowSeconds() - start).Add("load1", Load1());
  Emit(done);
  MPI_Finalize();
  return 0;
}

}  // namespace
}  // namespace ferry::bench

int main(int argc, char** argv) { return ferry::bench::Main(argc, argv); }
