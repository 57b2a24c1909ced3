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
// Each section is a file of this folder (update.cc holds sgemm too); common.h is what they share.
#include <mpi.h>
#include <torch/torch.h>

#include <algorithm>
#include <iostream>
#include <string>

#include "bench/learner_bench/common.h"
#include "core/blas_kernels.h"
#include "core/log.h"
#include "core/malloc_tuning.h"

namespace ferry::bench::learner_bench {
namespace {

int Main(int argc, char** argv) {
  core::KeepLargeBlocksInHeap();  // As ferry's own processes run, baselines included.
  core::WarnIfBlasIsGeneric("learner_bench");
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
}  // namespace ferry::bench::learner_bench

int main(int argc, char** argv) { return ferry::bench::learner_bench::Main(argc, argv); }
