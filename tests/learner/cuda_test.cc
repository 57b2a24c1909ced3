// The learner's update on a CUDA device, against the same update on the CPU. Skipped where
// LibTorch sees no GPU (Debian's LibTorch is CPU-only); bench/cuda_check.sh builds ferry
// against a CUDA LibTorch and runs them on a GPU machine.
#include <torch/torch.h>
// After LibTorch: the glog it includes defines CHECK too, and doctest's must win.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "learner/dqn_updater.h"
#include "tests/learner/random_batch.h"
#include "tests/learner/temp_dir.h"

namespace ferry::learner {
namespace {

namespace fs = std::filesystem;

const bool kNoGpu = !torch::cuda::is_available();

UpdaterOptions Options() {
  UpdaterOptions o;
  o.obs_dim = 6;
  o.num_actions = 3;
  o.hidden = {64, 64};
  o.learning_rate = 1e-3;
  o.target_update_period = 5;
  return o;
}

DqnBatch On(const DqnBatch& b, torch::Device device) {
  DqnBatch moved = b;
  for (torch::Tensor* t : {&moved.obs, &moved.next_obs, &moved.action, &moved.reward,
                           &moved.discount, &moved.weights}) {
    *t = t->to(device);
  }
  return moved;
}

// `steps` updates of both updaters on the same batches; the TD errors agree at every one.
void TrainBoth(DqnUpdater& cpu, DqnUpdater& gpu, int first_seed, int steps) {
  for (int step = 0; step < steps; ++step) {
    const DqnBatch b = testing::RandomBatch(64, 6, 3, first_seed + step);
    const DqnLoss a = cpu.ComputeGradients(b, 64);
    const DqnLoss c = gpu.ComputeGradients(On(b, torch::kCUDA), 64);
    CHECK(torch::allclose(a.td, c.td.cpu(), 1e-4, 1e-5));
    cpu.ApplyGradients();
    gpu.ApplyGradients();
  }
}

bool Close(DqnUpdater& cpu, DqnUpdater& gpu) {
  const auto p = cpu.online()->parameters();
  const auto q = gpu.online()->parameters();
  for (size_t i = 0; i < p.size(); ++i) {
    if (!torch::allclose(p[i], q[i].cpu(), 1e-4, 1e-6)) return false;
  }
  return true;
}

TEST_CASE("on a CUDA device the updater trains as on the CPU, to float rounding" *
          doctest::skip(kNoGpu)) {
  torch::manual_seed(9);
  DqnUpdater cpu(Options(), torch::kCPU);
  torch::manual_seed(9);
  DqnUpdater gpu(Options(), torch::kCUDA);
  CHECK(gpu.online()->parameters()[0].is_cuda());
  CHECK(gpu.autograd());  // The fast CPU path is not used there.
  const torch::Tensor initial = cpu.online()->parameters()[0].detach().clone();
  TrainBoth(cpu, gpu, 100, 20);  // Four target copies.
  CHECK(Close(cpu, gpu));
  CHECK_FALSE(torch::allclose(cpu.online()->parameters()[0], initial, 1e-4, 1e-6));
}

TEST_CASE("a checkpoint written on a CUDA device resumes on the CPU, and one from the CPU there" *
          doctest::skip(kNoGpu)) {
  const fs::path dir = testing::FreshTempDir("cuda-resume");
  torch::manual_seed(3);
  DqnUpdater gpu(Options(), torch::kCUDA);
  torch::manual_seed(3);
  DqnUpdater cpu(Options(), torch::kCPU);
  TrainBoth(cpu, gpu, 200, 7);
  const RunCounters counters{/*env_steps=*/777, /*elapsed_seconds=*/1.5, /*best_eval=*/-3.0};
  REQUIRE(gpu.SaveCheckpoint((dir / "gpu.pt").string(), counters).ok());
  REQUIRE(cpu.SaveCheckpoint((dir / "cpu.pt").string(), counters).ok());

  // Each file into an updater on the other device: the same bits, moments included, so the
  // resumed pair goes on as the pair that wrote them.
  torch::manual_seed(99);
  DqnUpdater cpu_from_gpu(Options(), torch::kCPU);
  torch::manual_seed(99);
  DqnUpdater gpu_from_cpu(Options(), torch::kCUDA);
  RunCounters restored;
  REQUIRE(cpu_from_gpu.LoadCheckpoint((dir / "gpu.pt").string(), &restored).ok());
  CHECK(restored.env_steps == 777);
  REQUIRE(gpu_from_cpu.LoadCheckpoint((dir / "cpu.pt").string(), &restored).ok());
  CHECK(cpu_from_gpu.updates() == 7);
  CHECK(gpu_from_cpu.online()->parameters()[0].is_cuda());
  CHECK(cpu_from_gpu.ParameterChecksum() == gpu.ParameterChecksum());
  CHECK(gpu_from_cpu.ParameterChecksum() == cpu.ParameterChecksum());
  TrainBoth(cpu_from_gpu, gpu, 300, 6);
  TrainBoth(cpu, gpu_from_cpu, 300, 6);
  CHECK(Close(cpu_from_gpu, gpu));
  CHECK(Close(cpu, gpu_from_cpu));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ferry::learner
