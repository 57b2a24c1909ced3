#include "core/cpu_affinity.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>

namespace ferry::core {

int OnlineCpus() { return std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN))); }

int UpdateCpu(int first, int rank) { return (first + rank) % OnlineCpus(); }

std::vector<int> CpusLeft(int first, int ranks) {
  const int online = OnlineCpus();
  std::vector<bool> taken(online, false);
  for (int r = 0; r < ranks; ++r) taken[UpdateCpu(first, r)] = true;
  std::vector<int> left, all;
  for (int cpu = 0; cpu < online; ++cpu) {
    all.push_back(cpu);
    if (!taken[cpu]) left.push_back(cpu);
  }
  return left.empty() ? all : left;
}

namespace {

Result<cpu_set_t> CpuSet(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      return InvalidArgument("CPU " + std::to_string(cpu) + " is out of range");
    }
    CPU_SET(cpu, &set);
  }
  return set;
}

}  // namespace

Status RunOn(const std::vector<int>& cpus) {
  auto set = CpuSet(cpus);
  if (!set.ok()) return set.status();
  if (sched_setaffinity(0, sizeof(*set), &*set) != 0) {
    return Unavailable("cannot run on the CPUs asked for: " + std::string(std::strerror(errno)));
  }
  return Status::Ok();
}

namespace {

Status SetPolicy(pid_t tid, int policy, const char* name) {
  const sched_param param{};  // SCHED_IDLE and SCHED_OTHER have one priority, 0.
  if (sched_setscheduler(tid, policy, &param) != 0) {
    return Unavailable(std::string("cannot run at ") + name + " priority: " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace

Status RunAtIdlePriority(pid_t tid) { return SetPolicy(tid, SCHED_IDLE, "idle"); }

Status RunAtNormalPriority(pid_t tid) { return SetPolicy(tid, SCHED_OTHER, "normal"); }

Status RunOnIdleTime(const std::vector<int>& cpus) {
  FERRY_RETURN_IF_ERROR(RunOn(cpus));
  return RunAtIdlePriority(0);
}

Status MoveProcessTo(const std::vector<int>& cpus) {
  auto set = CpuSet(cpus);
  if (!set.ok()) return set.status();
  // A thread started while the list is read inherits its starter's CPUs, which may not have
  // moved yet: read again until a pass finds no thread it has not moved.
  std::set<pid_t> moved;
  for (bool found = true; found;) {
    found = false;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec)) {
      const pid_t thread = static_cast<pid_t>(std::atoi(entry.path().filename().c_str()));
      if (thread <= 0 || !moved.insert(thread).second) continue;
      found = true;
      // A thread that has exited since the listing is no longer there to move (ESRCH).
      if (sched_setaffinity(thread, sizeof(*set), &*set) != 0 && errno != ESRCH) {
        return Unavailable("cannot move thread " + std::to_string(thread) +
                           " to the CPUs asked for: " + std::strerror(errno));
      }
    }
    if (ec) return Unavailable("cannot list this process's threads: " + ec.message());
  }
  return Status::Ok();
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::string text;
  for (int cpu : cpus) text += (text.empty() ? "" : ",") + std::to_string(cpu);
  return text;
}

Result<std::vector<int>> ParseCpuList(const std::string& text) {
  std::vector<int> cpus;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    if (item.empty() || item.size() > 6 ||
        item.find_first_not_of("0123456789") != std::string::npos) {
      return InvalidArgument("'" + text + "' is not a list of CPU numbers such as 0,2,3");
    }
    cpus.push_back(std::stoi(item));
    at = comma + 1;
  }
  return cpus;
}

Status MoveToRunCpus() {
  const char* text = std::getenv(kRunCpusEnv);
  if (text == nullptr) return Status::Ok();
  auto cpus = ParseCpuList(text);
  if (!cpus.ok()) return InvalidArgument(std::string(kRunCpusEnv) + ": " + cpus.status().message());
  return MoveProcessTo(*cpus);
}

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

}  // namespace ferry::core
