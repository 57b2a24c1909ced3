// Where a run's threads may run: the update threads' CPUs and the ones left to the rest.
#include "core/cpu_affinity.h"

#include <doctest/doctest.h>
#include <sched.h>
#include <stdlib.h>

#include <atomic>
#include <thread>
#include <vector>

namespace ferry::core {
namespace {

TEST_CASE("update threads take CPUs from update_cpu on, wrapping; the rest get the others") {
  const int online = OnlineCpus();
  REQUIRE(online >= 1);
  CHECK(UpdateCpu(0, 0) == 0);
  CHECK(UpdateCpu(online, 0) == 0);
  CHECK(UpdateCpu(online - 1, 1) == 0);

  std::vector<int> all;
  for (int cpu = 0; cpu < online; ++cpu) all.push_back(cpu);
  CHECK(CpusLeft(0, online) == all);  // Nothing would be left: the rest share every CPU.
  if (online > 1) {
    const std::vector<int> left = CpusLeft(online - 1, 1);
    CHECK(left.size() == static_cast<size_t>(online - 1));
    CHECK(left.back() == online - 2);
    const std::vector<int> left_of_two = CpusLeft(online - 1, 2);  // Ranks on n-1 and 0.
    CHECK(left_of_two.size() == static_cast<size_t>(online > 2 ? online - 2 : online));
  }
}

TEST_CASE("RunOn restricts the calling thread and what it starts, not the other threads") {
  const std::vector<int> before = AllowedCpus();
  REQUIRE_FALSE(before.empty());
  const int cpu = before.back();
  std::vector<int> pinned, inherited;
  std::thread worker([&] {
    REQUIRE(RunOn({cpu}).ok());
    pinned = AllowedCpus();
    std::thread child([&] { inherited = AllowedCpus(); });
    child.join();
  });
  worker.join();
  CHECK(pinned == std::vector<int>{cpu});
  CHECK(inherited == std::vector<int>{cpu});
  CHECK(AllowedCpus() == before);

  const Status refused = RunOn({-1});
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK(AllowedCpus() == before);
}

TEST_CASE("RunOnIdleTime puts the calling thread alone at idle priority on the CPUs given") {
  const std::vector<int> before = AllowedCpus();
  REQUIRE_FALSE(before.empty());
  const int cpu = before.front();
  int policy = -1;
  std::vector<int> placed;
  std::thread worker([&] {
    REQUIRE(RunOnIdleTime({cpu}).ok());
    policy = sched_getscheduler(0);
    placed = AllowedCpus();
  });
  worker.join();
  CHECK(policy == SCHED_IDLE);
  CHECK(placed == std::vector<int>{cpu});
  CHECK(sched_getscheduler(0) == SCHED_OTHER);
  CHECK(AllowedCpus() == before);

  std::thread refused([&] { policy = RunOnIdleTime({-1}).ok() ? -1 : sched_getscheduler(0); });
  refused.join();
  CHECK(policy == SCHED_OTHER);  // Not placed: the priority is left as it was.
}

TEST_CASE("MoveProcessTo moves threads already running, and MoveToRunCpus reads FERRY_RUN_CPUS") {
  const std::vector<int> before = AllowedCpus();
  REQUIRE_FALSE(before.empty());
  const int cpu = before.front();
  std::atomic<bool> moved{false}, done{false};
  std::vector<int> seen_by_helper;
  std::thread helper([&] {  // Started before the move, on every CPU this process had.
    while (!moved.load()) std::this_thread::yield();
    seen_by_helper = AllowedCpus();
    done.store(true);
  });

  setenv(kRunCpusEnv, std::to_string(cpu).c_str(), 1);
  REQUIRE(MoveToRunCpus().ok());
  moved.store(true);
  helper.join();
  CHECK(done.load());
  CHECK(seen_by_helper == std::vector<int>{cpu});
  CHECK(AllowedCpus() == std::vector<int>{cpu});

  setenv(kRunCpusEnv, "0,,1", 1);
  const Status malformed = MoveToRunCpus();
  CHECK(malformed.code() == StatusCode::kInvalidArgument);
  CHECK(malformed.message().find("FERRY_RUN_CPUS") != std::string::npos);
  unsetenv(kRunCpusEnv);
  CHECK(MoveToRunCpus().ok());  // Unset: left where it is.
  CHECK(AllowedCpus() == std::vector<int>{cpu});
  REQUIRE(MoveProcessTo(before).ok());
  CHECK(AllowedCpus() == before);
}

TEST_CASE("CPU lists: written as 0,2,3 and read back; anything else refused") {
  CHECK(FormatCpuList({0, 2, 3}) == "0,2,3");
  CHECK(FormatCpuList({}).empty());
  const auto read = ParseCpuList("0,2,3");
  REQUIRE(read.ok());
  CHECK(*read == std::vector<int>{0, 2, 3});
  for (const char* bad : {"", "1,", ",1", "a", "-1", "1 2", "1234567"}) {
    CAPTURE(bad);
    CHECK(ParseCpuList(bad).status().code() == StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace ferry::core
