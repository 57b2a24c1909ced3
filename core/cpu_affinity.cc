#include "core/cpu_affinity.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
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

Status RunOn(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      return InvalidArgument("CPU " + std::to_string(cpu) + " is out of range");
    }
    CPU_SET(cpu, &set);
  }
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    return Unavailable("cannot run on the CPUs asked for: " + std::string(std::strerror(errno)));
  }
  return Status::Ok();
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
