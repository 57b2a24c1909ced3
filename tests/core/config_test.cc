#include "core/config.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ferry::core {
namespace {

constexpr char kSource[] = "configs/test.yaml";

// The InvalidArgument message ParseConfig gives for `yaml`; fails the test if parsing succeeds.
std::string ErrorOf(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  const Result<Config> result = ParseConfig(yaml, kSource, overrides);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == StatusCode::kInvalidArgument);
  return result.status().message();
}

Config Parse(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  Result<Config> result = ParseConfig(yaml, kSource, overrides);
  REQUIRE_MESSAGE(result.ok(), result.status().ToString());
  return std::move(result).value();
}

constexpr char kFullDocument[] = R"(
seed: 42
run: {name: pong-1, dir: /tmp/runs/pong}
network:
  host: 0.0.0.0
  replay_port: 7000
  paramserver_port: 7100
  broadcast_port: 7101
  weights_chunk_bytes: 4194304
env: {id: Acrobot-v1}
replay:
  shards: 4
  capacity: 5000000000
  alpha: 0.7
  beta: 1
  priority_epsilon: 1e-8
  min_size_to_sample: 50
  samples_per_insert: 4.5
  samples_per_insert_tolerance: 0
actors:
  count: 3
  envs_per_actor: 16
  epsilon: 0.5
  epsilon_alpha: 6
  n_step: 5
  insert_batch: 32
  max_in_flight: 4
model:
  hidden: [256, 128, 64]
learner:
  double_dqn: false
  ranks: 4
  batch_size: 256
  learning_rate: 2.5e-4
  gamma: 0.997
  huber_delta: 2
  max_grad_norm: 40
  target_update_period: 2500
  publish_period: 20
  eval_period: 1000
  eval_episodes: 10
  device: cuda
stop:
  target_return: -100.5
  min_seconds: 30
  max_env_steps: 10000000
  max_seconds: 3600
)";

TEST_CASE("an empty document gives the defaults") {
  const Config defaults;
  for (const char* empty : {"", "# nothing here\n", "{}"}) {
    const Config config = Parse(empty);
    CHECK(ConfigToYaml(config) == ConfigToYaml(defaults));
    CHECK(config.replay.shards == 2);
    CHECK(config.model.hidden == std::vector<int>{64, 64});
    CHECK(config.learner.device == "cpu");
  }
}

TEST_CASE("a section left empty or partly filled keeps its other defaults") {
  const Config config = Parse("replay:\nlearner:\n  gamma: 0.9\n");
  CHECK(config.replay.capacity == 100000);
  CHECK(config.learner.gamma == 0.9);
  CHECK(config.learner.batch_size == 128);
}

TEST_CASE("a full document sets every key") {
  const Config c = Parse(kFullDocument);
  CHECK(c.seed == 42);
  CHECK(c.run.name == "pong-1");
  CHECK(c.run.dir == "/tmp/runs/pong");
  CHECK(c.network.host == "0.0.0.0");
  CHECK(c.network.replay_port == 7000);
  CHECK(c.network.paramserver_port == 7100);
  CHECK(c.network.broadcast_port == 7101);
  CHECK(c.network.weights_chunk_bytes == 4194304);
  CHECK(c.env.id == "Acrobot-v1");
  CHECK(c.replay.shards == 4);
  CHECK(c.replay.capacity == 5000000000);
  CHECK(c.replay.alpha == 0.7);
  CHECK(c.replay.beta == 1.0);
  CHECK(c.replay.priority_epsilon == 1e-8);
  CHECK(c.replay.min_size_to_sample == 50);
  CHECK(c.replay.samples_per_insert == 4.5);
  CHECK(c.replay.samples_per_insert_tolerance == 0.0);
  CHECK(c.actors.count == 3);
  CHECK(c.actors.envs_per_actor == 16);
  CHECK(c.actors.epsilon == 0.5);
  CHECK(c.actors.epsilon_alpha == 6.0);
  CHECK(c.actors.n_step == 5);
  CHECK(c.actors.insert_batch == 32);
  CHECK(c.actors.max_in_flight == 4);
  CHECK(c.model.hidden == std::vector<int>{256, 128, 64});
  CHECK_FALSE(c.learner.double_dqn);
  CHECK(c.learner.ranks == 4);
  CHECK(c.learner.batch_size == 256);
  CHECK(c.learner.learning_rate == 2.5e-4);
  CHECK(c.learner.gamma == 0.997);
  CHECK(c.learner.huber_delta == 2.0);
  CHECK(c.learner.max_grad_norm == 40.0);
  CHECK(c.learner.target_update_period == 2500);
  CHECK(c.learner.publish_period == 20);
  CHECK(c.learner.eval_period == 1000);
  CHECK(c.learner.eval_episodes == 10);
  CHECK(c.learner.device == "cuda");
  CHECK(c.stop.target_return == -100.5);
  CHECK(c.stop.min_seconds == 30);
  CHECK(c.stop.max_env_steps == 10000000);
  CHECK(c.stop.max_seconds == 3600.0);
}

TEST_CASE("overrides replace nested scalars and lists, and create missing sections") {
  const Config c =
      Parse("replay:\n  alpha: 0.7\n", {"replay.alpha=0.25", "model.hidden=[128,128]", "seed=7",
                                        "learner.device=cuda", "replay.alpha=0.5"});
  CHECK(c.replay.alpha == 0.5);
  CHECK(c.model.hidden == std::vector<int>{128, 128});
  CHECK(c.seed == 7);
  CHECK(c.learner.device == "cuda");
  CHECK(Parse("replay:\n", {"replay.alpha=0.25"}).replay.alpha == 0.25);
  CHECK(Parse("replay:\n").replay.compression == "none");
  CHECK(Parse("replay: {compression: lz4}\n").replay.compression == "lz4");
}

TEST_CASE("overridden values are validated and the error names the override") {
  CHECK(ErrorOf("replay: {beta: 0.5}\n", {"replay.beta=1.5"}) ==
        "--set replay.beta=1.5: 'replay.beta' must be in [0, 1], got 1.5");
  CHECK(ErrorOf("", {"model.hidden=[128,x]"}) ==
        "--set model.hidden=[128,x]: 'model.hidden' must be a list of integers, got '[128, x]'");
}

TEST_CASE("an unknown key names the closest key of its section") {
  CHECK(ErrorOf("replay:\n  alhpa: 0.5\n") ==
        "configs/test.yaml:2:3: unknown key 'replay.alhpa' (did you mean 'replay.alpha'?)");
  CHECK(ErrorOf("learner:\n  batchsize: 64\n") ==
        "configs/test.yaml:2:3: unknown key 'learner.batchsize' (did you mean "
        "'learner.batch_size'?)");
}

TEST_CASE("an unknown key with no close match gets no suggestion") {
  CHECK(ErrorOf("actors:\n  xyz: 1\n") == "configs/test.yaml:2:3: unknown key 'actors.xyz'");
}

TEST_CASE("an unknown section names the closest section") {
  CHECK(ErrorOf("replya:\n  alpha: 0.5\n") ==
        "configs/test.yaml:1:1: unknown key 'replya' (did you mean 'replay'?)");
  CHECK(ErrorOf("sed: 3\n") == "configs/test.yaml:1:1: unknown key 'sed' (did you mean 'seed'?)");
  CHECK(ErrorOf("telemetry: {}\n") == "configs/test.yaml:1:1: unknown key 'telemetry'");
}

TEST_CASE("a key given twice is an error") {
  CHECK(ErrorOf("replay:\n  alpha: 0.5\n  alpha: 0.6\n") ==
        "configs/test.yaml:3:3: duplicate key 'replay.alpha'");
}

TEST_CASE("a value of the wrong type names the key and the value") {
  CHECK(ErrorOf("learner:\n  batch_size: abc\n") ==
        "configs/test.yaml:2:15: 'learner.batch_size' must be an integer, got 'abc'");
  CHECK(ErrorOf("learner: {batch_size: 12.5}") ==
        "configs/test.yaml:1:23: 'learner.batch_size' must be an integer, got '12.5'");
  CHECK(ErrorOf("learner: {batch_size: '64'}")
            .find("'learner.batch_size' must be an integer, got the quoted string '64'") !=
        std::string::npos);
  CHECK(ErrorOf("actors: {count: 99999999999}")
            .find("'actors.count' must be an integer in [-2147483648, 2147483647]") !=
        std::string::npos);
  CHECK(ErrorOf("seed: -1").find("'seed' must be an integer in [0, 18446744073709551615]") !=
        std::string::npos);
  CHECK(ErrorOf("learner: {double_dqn: maybe}")
            .find("'learner.double_dqn' must be true or false, got 'maybe'") != std::string::npos);
  CHECK(
      ErrorOf("model: {hidden: 64}").find("'model.hidden' must be a list of integers, got '64'") !=
      std::string::npos);
  CHECK(ErrorOf("replay: {alpha: fast}").find("'replay.alpha' must be a number, got 'fast'") !=
        std::string::npos);
  CHECK(ErrorOf("replay: {alpha: 1e999}").find("'replay.alpha' must be a finite number") !=
        std::string::npos);
  CHECK(ErrorOf("env: {id: [a, b]}").find("'env.id' must be a string, got '[a, b]'") !=
        std::string::npos);
  CHECK(ErrorOf("learner: {ranks: }").find("'learner.ranks' must be an integer, got null") !=
        std::string::npos);
}

TEST_CASE("a section or document that is not a mapping is an error") {
  CHECK(ErrorOf("replay: 5\n") ==
        "configs/test.yaml:1:1: 'replay' must be a mapping of replay keys, got '5'");
  CHECK(ErrorOf("replay: 5\n", {"replay.alpha=0.1"}).find("'replay' must be a mapping") !=
        std::string::npos);
  CHECK(ErrorOf("- a\n- b\n").find("the document must be a mapping of sections") !=
        std::string::npos);
}

TEST_CASE("an out-of-range value names the key, the value and the allowed range") {
  CHECK(ErrorOf("replay:\n  beta: 1.5\n") ==
        "configs/test.yaml:2:9: 'replay.beta' must be in [0, 1], got 1.5");
  CHECK(ErrorOf("replay: {shards: 0}").find("'replay.shards' must be >= 1, got 0") !=
        std::string::npos);
  CHECK(ErrorOf("learner: {gamma: 0}").find("'learner.gamma' must be in (0, 1], got 0") !=
        std::string::npos);
  CHECK(ErrorOf("learner: {policy_average: 1}")
            .find("'learner.policy_average' must be in [0, 1), got 1") != std::string::npos);
  CHECK(ErrorOf("learner: {learning_rate: -1e-3}")
            .find("'learner.learning_rate' must be > 0, got -0.001") != std::string::npos);
  CHECK(ErrorOf("learner: {device: gpu}")
            .find("'learner.device' must be one of cpu, cuda, got 'gpu'") != std::string::npos);
  CHECK(ErrorOf("replay: {compression: zstd}")
            .find("'replay.compression' must be one of none, lz4, got 'zstd'") !=
        std::string::npos);
  CHECK(ErrorOf("network: {replay_port: 70000}")
            .find("'network.replay_port' must be in [1, 65535], got 70000") != std::string::npos);
  CHECK(ErrorOf("network: {weights_chunk_bytes: 100}")
            .find("'network.weights_chunk_bytes' must be in [4096, 1073741824], got 100") !=
        std::string::npos);
  CHECK(ErrorOf("model: {hidden: []}").find("'model.hidden' must be a non-empty list") !=
        std::string::npos);
  CHECK(ErrorOf("model: {hidden: [64, 0]}").find("each >= 1, got [64, 0]") != std::string::npos);
  CHECK(ErrorOf("run: {name: ../escape}").find("'run.name' must be a file name") !=
        std::string::npos);
  CHECK(ErrorOf("run: {name: ''}").find("'run.name' must be a file name") != std::string::npos);
  CHECK(ErrorOf("stop: {max_seconds: 0}").find("'stop.max_seconds' must be > 0, got 0") !=
        std::string::npos);
  CHECK(ErrorOf("stop: {min_seconds: -1}").find("'stop.min_seconds' must be >= 0, got -1") !=
        std::string::npos);
}

TEST_CASE("keys that must agree with each other are checked together") {
  CHECK(ErrorOf("learner:\n  ranks: 4\n  batch_size: 2\n") ==
        "configs/test.yaml:3:15: 'learner.batch_size' (2) must be >= 'learner.ranks' (4) so that "
        "every rank gets part of each batch");
  CHECK(ErrorOf("learner: {ranks: 256}").find("'learner.batch_size' (128) must be >=") !=
        std::string::npos);
  CHECK(ErrorOf("network: {replay_port: 5539}\nreplay: {shards: 2}\n")
            .find("'network.paramserver_port' (5540) must not be one of the replay shard ports "
                  "5539..5540") != std::string::npos);
  CHECK(ErrorOf("network: {broadcast_port: 5551}")
            .find("'network.broadcast_port' (5551) must not be one of the replay shard ports") !=
        std::string::npos);
  CHECK(ErrorOf("network: {broadcast_port: 5540}")
            .find("'network.broadcast_port' and 'network.paramserver_port' must differ") !=
        std::string::npos);
  CHECK(ErrorOf("network: {replay_port: 65535}").find("must be <= 65535") != std::string::npos);
  CHECK(ErrorOf("learner: {batch_size: 1024, batches_per_request: 65}")
            .find("'learner.batch_size' (1024) times 'learner.batches_per_request' (65) must be "
                  "<= 65536") != std::string::npos);
  CHECK(Parse("learner: {batch_size: 1024, batches_per_request: 64}").learner.batches_per_request ==
        64);
  CHECK(ErrorOf("replay: {capacity: 10, min_size_to_sample: 11}")
            .find("'replay.min_size_to_sample' (11) must be <= 'replay.capacity' (10)") !=
        std::string::npos);
  CHECK(ErrorOf("replay: {capacity_bytes: 1000000, compression: lz4}")
            .find("'replay.capacity_bytes' (1000000) cannot size a table whose rows are "
                  "compressed") != std::string::npos);
  CHECK(Parse("replay: {capacity_bytes: 1000000, compression: none}").replay.capacity_bytes ==
        1000000);
}

TEST_CASE("a bad override path names it and the closest valid key") {
  CHECK(ErrorOf("", {"replay.alhpa=0.5"}) ==
        "--set replay.alhpa=0.5: unknown key 'replay.alhpa' (did you mean 'replay.alpha'?)");
  CHECK(ErrorOf("", {"learner.bacth_size=64"}).find("(did you mean 'learner.batch_size'?)") !=
        std::string::npos);
  CHECK(ErrorOf("", {"nonsense.entirely=1"}) ==
        "--set nonsense.entirely=1: unknown key 'nonsense.entirely'");
  CHECK(ErrorOf("", {"replay.alpha"}).find("an override must look like key.path=value") !=
        std::string::npos);
  CHECK(ErrorOf("", {"model.hidden=[1, 2"})
            .find("--set model.hidden=[1, 2: the value is not "
                  "valid YAML") != std::string::npos);
}

TEST_CASE("a YAML syntax error names the source, line and column") {
  const std::string message = ErrorOf("replay:\n  alpha: 0.5\n  beta: [0.4\n");
  CHECK(message.starts_with("configs/test.yaml:"));
  CHECK(message.find("YAML syntax error") != std::string::npos);
  CHECK(ErrorOf("replay:\n  alpha: 0.5\n beta: 1\n").starts_with("configs/test.yaml:3:"));
}

TEST_CASE("ConfigToYaml round-trips every field exactly") {
  Config c = Parse(kFullDocument);
  c.seed = 18446744073709551615ull;
  c.replay.alpha = 0.1 + 0.2;
  c.replay.priority_epsilon = 1e-300;
  c.learner.learning_rate = 1.0 / 3.0;
  c.stop.target_return = -475.125;
  c.run.dir = "runs/a dir: with #special 'chars'";
  c.network.host = "null";
  c.env.id = "true";
  const std::string yaml = ConfigToYaml(c);
  const Config back = Parse(yaml);
  CHECK(ConfigToYaml(back) == yaml);
  CHECK(back.seed == c.seed);
  CHECK(back.replay.alpha == c.replay.alpha);
  CHECK(back.replay.priority_epsilon == c.replay.priority_epsilon);
  CHECK(back.learner.learning_rate == c.learner.learning_rate);
  CHECK(back.stop.target_return == c.stop.target_return);
  CHECK(back.run.dir == c.run.dir);
  CHECK(back.network.host == "null");
  CHECK(back.env.id == "true");
  CHECK(back.model.hidden == c.model.hidden);
  CHECK(back.learner.double_dqn == c.learner.double_dqn);
}

TEST_CASE("ConfigToYaml writes every key in its section, defaults included") {
  const std::string yaml = ConfigToYaml(Config());
  CHECK(yaml.starts_with("seed: 0\nrun:\n  name: ferry\n"));
  CHECK(yaml.find("\nreplay:\n  shards: 2\n  capacity: 100000\n  capacity_bytes: 0\n"
                  "  selector: prioritized\n  alpha: 0.6\n") != std::string::npos);
  CHECK(yaml.find("  hidden: [64, 64]\n") != std::string::npos);
  CHECK(yaml.find("  priority_epsilon: 1e-06\n") != std::string::npos);
}

TEST_CASE("LoadConfig reads a file, applies overrides, and reports a missing file") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ferry_config_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "run.yaml";
  std::ofstream(file) << "replay:\n  shards: 3\n  alhpa: 1\n";

  const Result<Config> bad = LoadConfig(file.string());
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        file.string() + ":3:3: unknown key 'replay.alhpa' (did you mean 'replay.alpha'?)");

  std::ofstream(file) << "replay:\n  shards: 3\n";
  const Result<Config> good = LoadConfig(file.string(), {"actors.count=5"});
  REQUIRE(good.ok());
  CHECK(good->replay.shards == 3);
  CHECK(good->actors.count == 5);

  const std::string missing = (dir / "missing.yaml").string();
  const Result<Config> absent = LoadConfig(missing);
  REQUIRE_FALSE(absent.ok());
  CHECK(absent.status().code() == StatusCode::kNotFound);
  CHECK(absent.status().message().find(missing) != std::string::npos);

  const Result<Config> directory = LoadConfig(dir.string());
  REQUIRE_FALSE(directory.ok());
  CHECK(directory.status().code() == StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ferry::core
