// Where a run's threads may run: the update threads' CPUs and the ones left to the rest.
#include "core/cpu_affinity.h"

#include <doctest/doctest.h>

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

}  // namespace
}  // namespace ferry::core
