// CPU affinity for runs on one machine. The learner's update thread is the busiest
// thread of a run and sets its pace; with `learner.update_cpu` set it gets a CPU of
// its own, and every other process and thread of the run (actors, shards, the
// paramserver, the learner's sampling and network threads) the CPUs left; the
// learner's evaluation thread runs on every CPU at idle priority (RunOnIdleTime).
// Without it the kernel moves the update thread between CPUs and shares them
// with the rest: on 2 cores that cost CartPole's learner a fifth of its updates.
//
// `ferry run` starts its roles on every CPU, so that loading LibTorch in four
// processes at once is spread over all of them, and names the CPUs left in
// FERRY_RUN_CPUS; each role moves there once it has started (MoveToRunCpus).
//
//   CPUs 0 .. n-1:  [update thread of rank 0 at update_cpu] [rank 1 at update_cpu + 1] ...
//                   [everything else: the rest, or all n when the ranks take every CPU]
#ifndef FERRY_CORE_CPU_AFFINITY_H_
#define FERRY_CORE_CPU_AFFINITY_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/status.h"

namespace ferry::core {

// CPUs this machine has online.
int OnlineCpus();

// The CPU of rank `rank`'s update thread when the update threads start at `first`:
// (first + rank) mod OnlineCpus().
int UpdateCpu(int first, int rank);

// The CPUs left to the rest of a run whose `ranks` update threads start at `first`; every
// online CPU when the update threads take them all.
std::vector<int> CpusLeft(int first, int ranks);

// Restricts the calling thread, and the threads and processes it starts from now on, to `cpus`.
Status RunOn(const std::vector<int>& cpus);

// RunOn(cpus), and the calling thread at the kernel's idle priority (SCHED_IDLE): it runs on a
// CPU of `cpus` only while that CPU has nothing else to run.
Status RunOnIdleTime(const std::vector<int>& cpus);

// Puts thread `tid` of this process (a thread id, as gettid returns; 0: the calling thread) at
// the kernel's idle priority (SCHED_IDLE), or back at the normal one (SCHED_OTHER). Leaving
// SCHED_IDLE needs CAP_SYS_NICE (root has it) or an RLIMIT_NICE of 20; Unavailable otherwise.
Status RunAtIdlePriority(pid_t tid);
Status RunAtNormalPriority(pid_t tid);

// The CPUs the calling thread may run on, ascending.
std::vector<int> AllowedCpus();

// Restricts every thread of this process (and what they start from now on) to `cpus`.
Status MoveProcessTo(const std::vector<int>& cpus);

// The environment variable through which `ferry run` tells its roles the CPUs left.
inline constexpr const char* kRunCpusEnv = "FERRY_RUN_CPUS";

// "0,2,3" for {0, 2, 3}, and back; ParseCpuList refuses anything but CPU numbers and commas.
std::string FormatCpuList(const std::vector<int>& cpus);
Result<std::vector<int>> ParseCpuList(const std::string& text);

// Moves this process to the CPUs FERRY_RUN_CPUS names; nothing when it is unset (a role
// started by hand or by Slurm keeps the placement it was given).
Status MoveToRunCpus();

}  // namespace ferry::core

#endif  // FERRY_CORE_CPU_AFFINITY_H_
