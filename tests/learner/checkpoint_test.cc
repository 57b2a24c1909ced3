// A learner stopped and resumed from its checkpoint continues exactly as if it
// had never stopped, given the same batches.
#include <torch/torch.h>
// After LibTorch: the glog it includes defines CHECK too, and doctest's must win.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "learner/dqn_updater.h"
#include "learner/evaluation.h"
#include "tests/learner/temp_dir.h"

namespace ferry::learner {
namespace {

namespace fs = std::filesystem;

UpdaterOptions SmallOptions() {
  UpdaterOptions o;
  o.obs_dim = 4;
  o.num_actions = 2;
  o.hidden = {16, 16};
  o.learning_rate = 1e-2;
  o.target_update_period = 3;
  return o;
}

std::vector<DqnBatch> Batches(int count) {
  torch::manual_seed(123);
  std::vector<DqnBatch> batches;
  for (int i = 0; i < count; ++i) {
    DqnBatch b;
    b.obs = torch::randn({32, 4});
    b.next_obs = torch::randn({32, 4});
    b.action = torch::randint(0, 2, {32}, torch::kInt64);
    b.reward = torch::randn({32});
    b.discount = torch::full({32}, 0.97f);
    b.weights = torch::rand({32});
    batches.push_back(b);
  }
  return batches;
}

void Train(DqnUpdater& updater, const std::vector<DqnBatch>& batches, size_t from, size_t to) {
  for (size_t i = from; i < to; ++i) {
    updater.ComputeGradients(batches[i], /*normaliser=*/32);
    updater.ApplyGradients();
  }
}

bool SameParameters(models::QNetwork& a, models::QNetwork& b) {
  auto pa = a->parameters();
  auto pb = b->parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    if (!torch::equal(pa[i], pb[i])) return false;
  }
  return true;
}

TEST_CASE("a resumed learner matches an uninterrupted one bit for bit") {
  const auto batches = Batches(20);
  torch::manual_seed(7);
  DqnUpdater uninterrupted(SmallOptions(), torch::kCPU);
  Train(uninterrupted, batches, 0, 20);

  const fs::path dir = testing::FreshTempDir("ckpt-resume");
  torch::manual_seed(7);
  DqnUpdater first(SmallOptions(), torch::kCPU);
  Train(first, batches, 0, 10);
  RunCounters counters{/*env_steps=*/1234, /*elapsed_seconds=*/5.5, /*best_eval=*/42.0};
  REQUIRE(first.SaveCheckpoint(CheckpointPath(dir.string(), first.updates()), counters).ok());

  torch::manual_seed(99);  // Different initial weights: everything must come from the file.
  DqnUpdater resumed(SmallOptions(), torch::kCPU);
  CHECK_FALSE(SameParameters(resumed.online(), first.online()));
  RunCounters restored;
  auto path = LoadNewestCheckpoint(dir.string(), &resumed, &restored);
  REQUIRE(path.ok());
  CHECK(resumed.updates() == 10);
  CHECK(restored.env_steps == 1234);
  CHECK(restored.elapsed_seconds == 5.5);
  CHECK(restored.best_eval == 42.0);
  Train(resumed, batches, 10, 20);
  CHECK(resumed.updates() == uninterrupted.updates());
  CHECK(SameParameters(resumed.online(), uninterrupted.online()));
  CHECK(SameParameters(resumed.target(), uninterrupted.target()));
  CHECK(resumed.ParameterChecksum() == uninterrupted.ParameterChecksum());
  fs::remove_all(dir);
}

TEST_CASE("a resumed learner carries on its policy's weight average") {
  const auto batches = Batches(20);
  UpdaterOptions options = SmallOptions();
  options.policy_average = 0.9;
  torch::manual_seed(7);
  DqnUpdater uninterrupted(options, torch::kCPU);
  Train(uninterrupted, batches, 0, 20);

  const fs::path dir = testing::FreshTempDir("ckpt-average");
  torch::manual_seed(7);
  DqnUpdater first(options, torch::kCPU);
  Train(first, batches, 0, 10);
  REQUIRE(first.SaveCheckpoint(CheckpointPath(dir.string(), first.updates()), {}).ok());
  torch::manual_seed(99);
  DqnUpdater resumed(options, torch::kCPU);
  RunCounters restored;
  REQUIRE(LoadNewestCheckpoint(dir.string(), &resumed, &restored).ok());
  CHECK(SameParameters(resumed.policy(), first.policy()));
  CHECK_FALSE(SameParameters(resumed.policy(), resumed.online()));
  Train(resumed, batches, 10, 20);
  CHECK(SameParameters(resumed.policy(), uninterrupted.policy()));
  fs::remove_all(dir);
}

TEST_CASE("without the optimizer state a resumed learner would diverge") {
  // Guards the test above: Adam's moments matter, so a checkpoint of weights
  // alone could not pass it.
  const auto batches = Batches(20);
  torch::manual_seed(7);
  DqnUpdater uninterrupted(SmallOptions(), torch::kCPU);
  Train(uninterrupted, batches, 0, 20);
  torch::manual_seed(7);
  DqnUpdater fresh_optimizer(SmallOptions(), torch::kCPU);
  Train(fresh_optimizer, batches, 0, 10);
  DqnUpdater copy(SmallOptions(), torch::kCPU);
  models::CopyParameters(*fresh_optimizer.online(), *copy.online());
  models::CopyParameters(*fresh_optimizer.target(), *copy.target());
  Train(copy, batches, 10, 20);
  CHECK_FALSE(SameParameters(copy.online(), uninterrupted.online()));
}

TEST_CASE("a corrupt newest checkpoint falls back to the previous one") {
  const fs::path dir = testing::FreshTempDir("ckpt-fallback");
  const auto batches = Batches(4);
  torch::manual_seed(7);
  DqnUpdater updater(SmallOptions(), torch::kCPU);
  Train(updater, batches, 0, 2);
  REQUIRE(updater.SaveCheckpoint(CheckpointPath(dir.string(), 2), {}).ok());
  Train(updater, batches, 2, 4);
  const std::string newest = CheckpointPath(dir.string(), 4);
  REQUIRE(updater.SaveCheckpoint(newest, {}).ok());
  std::ofstream(newest, std::ios::binary | std::ios::trunc) << "not a checkpoint";

  DqnUpdater resumed(SmallOptions(), torch::kCPU);
  RunCounters counters;
  auto path = LoadNewestCheckpoint(dir.string(), &resumed, &counters);
  REQUIRE(path.ok());
  CHECK(*path == CheckpointPath(dir.string(), 2));
  CHECK(resumed.updates() == 2);

  PruneCheckpoints(dir.string(), /*keep=*/1);
  CHECK_FALSE(fs::exists(CheckpointPath(dir.string(), 2)));
  fs::remove_all(dir);
}

TEST_CASE("a checkpoint of another architecture or an empty directory is refused") {
  const fs::path dir = testing::FreshTempDir("ckpt-refuse");
  DqnUpdater none(SmallOptions(), torch::kCPU);
  RunCounters counters;
  auto missing = LoadNewestCheckpoint(dir.string(), &none, &counters);
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message().find(dir.string()) != std::string::npos);

  UpdaterOptions wide = SmallOptions();
  wide.hidden = {32};
  DqnUpdater other(wide, torch::kCPU);
  const std::string path = CheckpointPath(dir.string(), 0);
  REQUIRE(other.SaveCheckpoint(path, {}).ok());
  const Status loaded = none.LoadCheckpoint(path, &counters);
  CHECK(loaded.code() == StatusCode::kDataLoss);
  CHECK(loaded.message().find(path) != std::string::npos);
  // The other way round every name the narrower model has is in the file, with other shapes.
  const std::string wider_path = CheckpointPath(dir.string(), 1);
  REQUIRE(none.SaveCheckpoint(wider_path, {}).ok());
  const Status narrower = other.LoadCheckpoint(wider_path, &counters);
  CHECK(narrower.code() == StatusCode::kDataLoss);
  CHECK(narrower.message().find("shape") != std::string::npos);
  fs::remove_all(dir);
}

// A CartPole run with a small network whose run directory is `dir`.
core::Config SmallCartPoleRun(const fs::path& dir) {
  core::Config config;
  config.env.id = "CartPole-v1";
  config.model.hidden = {16, 16};
  config.run.dir = dir.string();
  return config;
}

TEST_CASE("ferry eval's EvaluateCheckpoint plays the newest checkpoint's greedy policy") {
  const fs::path dir = testing::FreshTempDir("ckpt-eval");
  core::Config config = SmallCartPoleRun(dir);
  std::string checkpoint;
  int64_t updates = -1;
  // Nothing to evaluate yet: a clear error, not a random policy's return.
  CHECK_FALSE(EvaluateCheckpoint(config, 3, 7, &checkpoint, &updates).ok());

  auto options = UpdaterOptionsFor(config);
  REQUIRE(options.ok());
  DqnUpdater older(*options, torch::kCPU), newer(*options, torch::kCPU);
  Train(newer, Batches(5), 0, 5);  // Same shapes as CartPole: 4 observations, 2 actions.
  fs::create_directories(dir / "checkpoints");
  REQUIRE(older.SaveCheckpoint(CheckpointPath((dir / "checkpoints").string(), 0), {}).ok());
  REQUIRE(newer.SaveCheckpoint(CheckpointPath((dir / "checkpoints").string(), 5), {}).ok());

  auto evaluated = EvaluateCheckpoint(config, 3, 7, &checkpoint, &updates);
  REQUIRE_MESSAGE(evaluated.ok(), evaluated.status().message());
  CHECK(updates == 5);
  CHECK(checkpoint.find("learner-") != std::string::npos);
  auto direct = EvaluateGreedy(newer.online(), "CartPole-v1", 3, 7);
  REQUIRE(direct.ok());
  CHECK(evaluated->mean_return == direct->mean_return);
  CHECK(evaluated->episodes == 3);

  config.env.id = "Pendulum-v1";  // Continuous actions: no DQN head to load.
  CHECK_FALSE(EvaluateCheckpoint(config, 3, 7, &checkpoint, &updates).ok());
  fs::remove_all(dir);
}

TEST_CASE("ferry eval --best plays the policy the periodic evaluations kept, not the newest") {
  const fs::path dir = testing::FreshTempDir("ckpt-best");
  const core::Config config = SmallCartPoleRun(dir);
  std::string path;
  int64_t updates = -1;
  const auto missing = EvaluateBestPolicy(config, 3, 7, &path, &updates);
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message().find("best-policy.pt") != std::string::npos);

  auto options = UpdaterOptionsFor(config);
  REQUIRE(options.ok());
  DqnUpdater kept(*options, torch::kCPU), newest(*options, torch::kCPU);
  Train(kept, Batches(3), 0, 3);
  Train(newest, Batches(9), 0, 9);
  fs::create_directories(dir / "checkpoints");
  const std::string best_path = BestPolicyPath((dir / "checkpoints").string());
  REQUIRE(SavePolicy(kept.online(), {3, 1234, 42.5}, best_path).ok());
  REQUIRE(newest.SaveCheckpoint(CheckpointPath((dir / "checkpoints").string(), 9), {}).ok());

  models::QNetwork loaded(4, 2, std::vector<int>{16, 16});
  PolicyInfo info;
  REQUIRE(LoadPolicy(best_path, loaded, &info).ok());
  CHECK(info.updates == 3);
  CHECK(info.env_steps == 1234);
  CHECK(info.eval_return == 42.5);
  const torch::Tensor probe = torch::randn({8, 4});
  CHECK(torch::equal(loaded->forward(probe), kept.online()->forward(probe)));

  auto evaluated = EvaluateBestPolicy(config, 3, 7, &path, &updates);
  REQUIRE_MESSAGE(evaluated.ok(), evaluated.status().message());
  CHECK(path == best_path);
  CHECK(updates == 3);
  auto direct = EvaluateGreedy(kept.online(), "CartPole-v1", 3, 7);
  REQUIRE(direct.ok());
  CHECK(evaluated->mean_return == direct->mean_return);

  models::QNetwork wider(4, 2,
                         std::vector<int>{32});  // Another model: refused with the file named.
  const Status refused = LoadPolicy(best_path, wider, &info);
  CHECK(refused.code() == StatusCode::kDataLoss);
  CHECK(refused.message().find(best_path) != std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ferry::learner
