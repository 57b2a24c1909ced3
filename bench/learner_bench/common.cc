#include "bench/learner_bench/common.h"

#include <dlfcn.h>
#include <torch/torch.h>

#include <algorithm>

#include "core/log.h"

namespace ferry::bench::learner_bench {

Settings QuickSettings() {
  Settings s;
  s.quick = true;
  s.rounds = 5;
  s.window_s = 0.01;
  s.update_window_s = 0.05;
  s.max_allreduce_bytes = size_t{1} << 20;
  return s;
}

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

void Emit(JsonLine& line) {
  if (Rank() == 0) line.Print();
}

void SleepingBarrier() {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  for (int done = 0; MPI_Test(&request, &done, MPI_STATUS_IGNORE), !done;) Sleep(1e-3);
}

double OnRankZero(const std::function<double()>& work) {
  double result = 0;
  if (Rank() == 0) result = work();
  SleepingBarrier();
  MPI_Bcast(&result, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return result;
}

Timing SecondsPerCall(MPI_Comm comm, int64_t calls, const std::function<void()>& op) {
  MPI_Barrier(comm);
  const double start = core::NowSeconds();
  const double cpu_start = ThreadCpuSeconds();
  for (int64_t i = 0; i < calls; ++i) op();
  double elapsed[2] = {core::NowSeconds() - start, ThreadCpuSeconds() - cpu_start};
  MPI_Allreduce(MPI_IN_PLACE, elapsed, 2, MPI_DOUBLE, MPI_MAX, comm);
  return {elapsed[0] / static_cast<double>(calls), elapsed[1] / static_cast<double>(calls)};
}

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

const std::vector<ModelSpec>& Models() {
  static const std::vector<ModelSpec> models = {{"cartpole_mlp", 4, {64, 64}, 2, 512},
                                                {"mlp_512x3", 128, {512, 512, 512}, 4, 512},
                                                {"zoo_mlp", 4, {256, 256}, 2, 64}};
  return models;
}

}  // namespace ferry::bench::learner_bench
