// The learner's periodic evaluations run on a thread of their own: each plays the
// copy of the network taken when it was due, and every result comes back once, in order.
#include <torch/torch.h>
// After LibTorch: the glog it includes defines CHECK too, and doctest's must win.
#include <doctest/doctest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/cpu_affinity.h"
#include "learner/background_evaluator.h"

namespace ferry::learner {
namespace {

UpdaterOptions SmallOptions() {
  UpdaterOptions o;
  o.obs_dim = 4;
  o.num_actions = 2;
  o.hidden = {16};
  return o;
}

models::QNetwork SeededNet(uint64_t seed) {
  torch::manual_seed(seed);
  return models::QNetwork(4, 2, std::vector<int>{16});
}

std::vector<torch::Tensor> Parameters(models::QNetwork& net) {
  std::vector<torch::Tensor> copies;
  for (const auto& p : net->parameters()) copies.push_back(p.detach().clone());
  return copies;
}

bool SameParameters(models::QNetwork& net, const std::vector<torch::Tensor>& expected) {
  const auto params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    if (!torch::equal(params[i], expected[i])) return false;
  }
  return true;
}

TEST_CASE("a background evaluation plays the copy taken when it was due") {
  models::QNetwork online = SeededNet(3);
  const std::vector<torch::Tensor> at_start = Parameters(online);
  const auto expected = EvaluateGreedy(online, "CartPole-v1", 5, 11);
  REQUIRE(expected.ok());

  BackgroundEvaluator evaluator(SmallOptions(), "CartPole-v1", 5, 11);
  CHECK_FALSE(evaluator.Start(online, /*updates=*/7, /*env_steps=*/700, /*time=*/1.5));
  {
    // The learner goes on updating while the episodes play.
    torch::NoGradGuard no_grad;
    for (auto& p : online->parameters()) p.add_(1.0);
  }
  const auto done = evaluator.Wait();
  REQUIRE(done);
  REQUIRE(done->result.ok());
  CHECK(done->updates == 7);
  CHECK(done->env_steps == 700);
  CHECK(done->time == 1.5);
  CHECK(done->result->mean_return == expected->mean_return);
  CHECK(done->result->episodes == 5);
  REQUIRE(done->policy != nullptr);
  CHECK(SameParameters(*done->policy, at_start));
  CHECK_FALSE(SameParameters(online, at_start));
}

TEST_CASE("every background evaluation comes back once, in the order they were started") {
  models::QNetwork first = SeededNet(1);
  models::QNetwork second = SeededNet(2);
  const std::vector<torch::Tensor> first_params = Parameters(first);
  const std::vector<torch::Tensor> second_params = Parameters(second);
  BackgroundEvaluator evaluator(SmallOptions(), "CartPole-v1", 3, 5);
  CHECK_FALSE(evaluator.Wait());
  CHECK_FALSE(evaluator.Poll());

  CHECK_FALSE(evaluator.Start(first, 1, 10, 0.1));
  // Starting the next one hands back the one before, finished, with the copy it scored: the
  // learner keeps that copy as its best policy while the next evaluation plays.
  const auto one = evaluator.Start(second, 2, 20, 0.2);
  REQUIRE(one);
  CHECK(one->updates == 1);
  CHECK(one->result.ok());
  CHECK(SameParameters(*one->policy, first_params));

  // Poll never waits: bounded here by a deadline while the evaluation finishes.
  std::optional<FinishedEval> two;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!two && std::chrono::steady_clock::now() < deadline) {
    two = evaluator.Poll();
    if (!two) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(two);
  CHECK(two->updates == 2);
  CHECK(two->env_steps == 20);
  CHECK(SameParameters(*two->policy, second_params));
  CHECK_FALSE(evaluator.Poll());
  CHECK_FALSE(evaluator.Wait());
  CHECK(evaluator.waited_seconds() >= 0.0);
}

// Polls `evaluator` until its evaluation has finished (at most 30 s), without waiting on it.
std::optional<FinishedEval> PollFor(BackgroundEvaluator& evaluator) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto done = evaluator.Poll()) return done;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::nullopt;
}

// The scheduling policy of each thread of this process (sched_getscheduler takes a thread id).
std::vector<int> ThreadPolicies() {
  std::vector<int> policies;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    policies.push_back(sched_getscheduler(std::stoi(task.path().filename().string())));
  }
  return policies;
}

// How many threads of this process run at idle priority.
std::ptrdiff_t IdleThreads() {
  const std::vector<int> policies = ThreadPolicies();
  return std::count(policies.begin(), policies.end(), SCHED_IDLE);
}

TEST_CASE("an evaluator given idle CPUs plays at idle priority there, with the same result") {
  models::QNetwork online = SeededNet(9);
  const auto expected = EvaluateGreedy(online, "CartPole-v1", 5, 13);
  REQUIRE(expected.ok());
  REQUIRE(IdleThreads() == 0);

  BackgroundEvaluator evaluator(SmallOptions(), "CartPole-v1", 5, 13, core::AllowedCpus());
  CHECK_FALSE(evaluator.Start(online, 1, 10, 0.1));
  // Polled, not waited for: an evaluation waited for runs at normal priority.
  const auto done = PollFor(evaluator);
  REQUIRE(done);
  REQUIRE(done->result.ok());
  CHECK(done->result->mean_return == expected->mean_return);
  CHECK(IdleThreads() == 1);  // The evaluator's thread; this one keeps its priority.
  CHECK(sched_getscheduler(0) == SCHED_OTHER);
}

TEST_CASE("an idle-priority evaluation that the learner waits for runs at normal priority") {
  models::QNetwork online = SeededNet(9);
  // Enough episodes that the evaluation is still playing when Wait is called at once.
  BackgroundEvaluator evaluator(SmallOptions(), "CartPole-v1", 3000, 13, core::AllowedCpus());
  evaluator.Start(online, 1, 10, 0.1);
  REQUIRE(evaluator.Wait());
  // Raising a thread out of SCHED_IDLE needs CAP_SYS_NICE; CI runs as root, which has it.
  if (geteuid() != 0) return;
  CHECK(IdleThreads() == 0);  // Raised while Wait waited, and until its next evaluation.
  evaluator.Start(online, 2, 20, 0.2);
  REQUIRE(PollFor(evaluator));
  CHECK(IdleThreads() == 1);  // That one played at idle priority again.
}

TEST_CASE("a background evaluation that cannot run returns its error") {
  models::QNetwork online = SeededNet(4);
  BackgroundEvaluator evaluator(SmallOptions(), "NoSuchEnv-v0", 3, 5);
  evaluator.Start(online, 1, 10, 0.1);
  const auto done = evaluator.Wait();
  REQUIRE(done);
  CHECK_FALSE(done->result.ok());
  CHECK(done->result.status().message().find("NoSuchEnv-v0") != std::string::npos);
}

FinishedEval Finished(models::QNetwork& policy, int64_t updates, double mean_return) {
  FinishedEval done;
  done.updates = updates;
  done.env_steps = updates * 10;
  EvalResult result;
  result.mean_return = mean_return;
  result.episodes = 5;
  done.result = result;
  done.policy = &policy;
  return done;
}

TEST_CASE("the best policy is the latest at the highest return: a tie goes to the later one") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ferry-best-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  models::QNetwork early = SeededNet(5), worse = SeededNet(6), later = SeededNet(7);
  core::MetricsWriter metrics;  // Not opened: records go nowhere.
  double best = -INFINITY;
  REQUIRE(RecordEvaluation(Finished(early, 100, 500.0), dir.string(), &best, metrics).ok());
  REQUIRE(RecordEvaluation(Finished(worse, 200, 120.0), dir.string(), &best, metrics).ok());
  CHECK(best == 500.0);
  REQUIRE(RecordEvaluation(Finished(later, 300, 500.0), dir.string(), &best, metrics).ok());
  CHECK(best == 500.0);

  models::QNetwork loaded = SeededNet(8);
  PolicyInfo info;
  REQUIRE(LoadPolicy(BestPolicyPath(dir.string()), loaded, &info).ok());
  CHECK(info.updates == 300);
  CHECK(info.eval_return == 500.0);
  CHECK(SameParameters(loaded, Parameters(later)));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ferry::learner
