// What the sections of learner_bench share: settings, rank helpers (timing on rank 0 alone
// while the others sleep, or on every rank together), the networks the update and adam sections
// run, and each section's entry point (allreduce.cc, update.cc, adam.cc, least_squares.cc),
// which main.cc calls.
#ifndef FERRY_BENCH_LEARNER_BENCH_COMMON_H_
#define FERRY_BENCH_LEARNER_BENCH_COMMON_H_

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench.h"

namespace ferry::bench::learner_bench {

struct Settings {
  bool quick = false;
  int rounds = 5;                // Each figure is the median of this many timed windows.
  double window_s = 0.1;         // One timed window of an allreduce or memcpy.
  double update_window_s = 0.4;  // One timed window of learner updates.
  size_t max_allreduce_bytes = size_t{64} << 20;
  double refit_case_budget_s = 70;  // Fewer repeats, then none, for refit cases beyond it.
};

// A smoke run: every code path, figures too noisy to quote.
Settings QuickSettings();

// LibTorch's intra-op threads, and the BLAS's own: Debian's LibTorch calls an OpenBLAS built
// with pthreads, which ignores torch::set_num_threads and starts a thread per core in every
// process, so two ranks would run four threads on two cores.
void SetThreads(int threads);

int Rank();   // In MPI_COMM_WORLD.
int Ranks();  // Of MPI_COMM_WORLD.

// Prints on rank 0 only.
void Emit(JsonLine& line);

// Waits for every rank without polling a core, which a busy MPI_Barrier would take from rank 0
// while it measures alone.
void SleepingBarrier();

// Runs `work` on rank 0 while the other ranks sleep; every rank returns its result.
double OnRankZero(const std::function<double()>& work);

// Seconds per call of `op`, run `calls` times by every rank of `comm` after a barrier, by the
// wall clock and by the calling thread's CPU time: the slowest rank's.
struct Timing {
  double wall = 0;
  double cpu = 0;
};
Timing SecondsPerCall(MPI_Comm comm, int64_t calls, const std::function<void()>& op);

// Times about `seconds` of calls of `op` on every rank of `comm`, the number of calls set by
// one untimed call that all ranks agree on.
Timing TimeCollective(MPI_Comm comm, double seconds, const std::function<void()>& op);

double Median(std::vector<double> values);

// `name`, `name`_min and `name`_max: the spread's median, min and max times `scale`.
void AddSpread(JsonLine& line, const std::string& name, const Spread& spread, double scale);

struct ModelSpec {
  std::string name;
  int obs_dim;
  std::vector<int> hidden;
  int num_actions;
  int batch;  // Global: split across ranks.
};

// The quick-start CartPole network, a large MLP, and the tuned configs' network at CartPole's
// batch (configs/cartpole_zoo.yaml), where per-op costs weigh most.
const std::vector<ModelSpec>& Models();

// allreduce.cc: the allreduce and allreduce_chunk lines.
void AllreduceBench(const Settings& s);
void AllreduceChunkBench(const Settings& s);

// update.cc: the sgemm line, whose rates the update lines compare with, and the update lines.
//
// FLOP/s per core, counted against the wall clock and against CPU time: on a shared machine the
// wall rate drops with the share of the core the process gets, the CPU rate much less.
struct SgemmRates {
  Window one_core;  // Rank 0 alone.
  Window per_rank;  // Each rank while all of them run it.
};
SgemmRates SgemmBench(const Settings& s);
void UpdateBench(const Settings& s, const SgemmRates& sgemm);

// adam.cc: the adam lines.
void AdamBench(const Settings& s);

// least_squares.cc: the least_squares lines.
void LeastSquaresBench(const Settings& s);

}  // namespace ferry::bench::learner_bench

#endif  // FERRY_BENCH_LEARNER_BENCH_COMMON_H_
