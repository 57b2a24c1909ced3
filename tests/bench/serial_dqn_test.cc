// The single-process DQN baseline: it keeps the config's replay ratio, evaluates as
// the learner does, writes the records learning.sh reads, and refuses what it cannot run.
#include <torch/torch.h>
// After LibTorch: the glog it includes defines CHECK too, and doctest's must win.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/serial_dqn/serial_dqn.h"
#include "learner/dqn_updater.h"

namespace ferry::bench {
namespace {

namespace fs = std::filesystem;

core::Config SmallRun(const std::string& name) {
  core::Config config;
  config.run.dir = (fs::temp_directory_path() / ("ferry-serial-" + name)).string();
  fs::remove_all(config.run.dir);
  config.env.id = "CartPole-v1";
  config.model.hidden = {32};
  config.replay.shards = 2;
  config.replay.capacity = 1000;
  config.replay.min_size_to_sample = 200;
  config.replay.samples_per_insert = 16;
  config.replay.samples_per_insert_tolerance = 100;
  config.learner.batch_size = 32;
  config.learner.publish_period = 10;
  config.learner.eval_period = 200;
  config.learner.eval_episodes = 3;
  config.learner.final_eval_episodes = 4;
  config.stop.target_return = 1e9;
  config.stop.max_env_steps = 3000;
  config.stop.max_seconds = 120;
  return config;
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

double Field(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\": ");
  REQUIRE_MESSAGE(at != std::string::npos, key, " in ", line);
  return std::stod(line.substr(at + key.size() + 4));
}

TEST_CASE(
    "the serial DQN spends the budget at the config's replay ratio and reports as ferry does") {
  const core::Config config = SmallRun("budget");
  const std::atomic<bool> stop{false};
  const auto end = RunSerialDqn(config, stop);
  REQUIRE_MESSAGE(end.ok(), end.status().message());
  CHECK(*end == learner::RunEnd::kBudgetExhausted);

  const auto lines = Lines(config.run.dir + "/metrics.jsonl");
  REQUIRE_FALSE(lines.empty());
  const std::string& last = lines.back();
  CHECK(last.find("\"end\": \"budget_exhausted\"") != std::string::npos);
  const double env_steps = Field(last, "env_steps");
  const double updates = Field(last, "updates");
  CHECK(env_steps >= 3000);
  CHECK(env_steps <= 3001);
  // The limiter's band: samples stop once inserts * 16 - samples falls below 200 * 16 - 100.
  const double samples = updates * config.learner.batch_size;
  const double due = env_steps * 16 - (200 * 16 - 100);
  CHECK(samples > due);
  CHECK(samples <= due + config.learner.batch_size);

  int evaluations = 0;
  for (const auto& line : lines) {
    if (line.find("\"eval_return\"") == std::string::npos) continue;
    ++evaluations;
    CHECK(static_cast<int64_t>(Field(line, "updates")) % 200 == 0);
    CHECK(Field(line, "eval_episodes") == 3);
  }
  CHECK(evaluations == static_cast<int>(updates) / 200);
  CHECK(Field(last, "final_eval_episodes") == 4);
  CHECK(Field(last, "selected_updates") > 0);
  CHECK(fs::exists(learner::BestPolicyPath(config.run.dir + "/checkpoints")));
  fs::remove_all(config.run.dir);
}

TEST_CASE("the serial DQN stops at once when asked, and refuses what it cannot run") {
  core::Config config = SmallRun("stop");
  const std::atomic<bool> stop{true};
  const auto end = RunSerialDqn(config, stop);
  REQUIRE(end.ok());
  CHECK(*end == learner::RunEnd::kStopped);
  const auto lines = Lines(config.run.dir + "/metrics.jsonl");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("\"end\": \"stopped\"") != std::string::npos);
  CHECK(Field(lines[0], "updates") == 0);

  const std::atomic<bool> go{false};
  config.learner.lsdqn_period = 100;
  auto refused = RunSerialDqn(config, go);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  CHECK(refused.status().message().find("learner.lsdqn_period") != std::string::npos);

  config.learner.lsdqn_period = 0;
  config.run.dir.clear();
  refused = RunSerialDqn(config, go);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("run.dir") != std::string::npos);
  fs::remove_all(fs::temp_directory_path() / "ferry-serial-stop");
}

}  // namespace
}  // namespace ferry::bench
