// `ferry run`: the whole topology on this machine, supervised.
//
//   resolve config -> run dir (config.yaml, logs/) -> start replay shards and
//   the paramserver -> the learner under mpirun -> the actors -> watch:
//     progress line from metrics.jsonl; crashed actors, shards and the
//     paramserver restarted with back-off (shards restore their snapshots), a
//     crashed learner (any rank) restarted whole from its newest checkpoint;
//     the learner's own end (target, budget) ends the run
//   -> SIGTERM to every child (its whole process group), SIGKILL after a grace
//      period -> one-line summary; exit code 0 = target reached, 2 = budget.
//
// Every child is placed in its own process group and asked to die with the
// supervisor (PR_SET_PDEATHSIG), so no process outlives a run.
#ifndef FERRY_LAUNCH_SUPERVISOR_H_
#define FERRY_LAUNCH_SUPERVISOR_H_

#include <string>
#include <vector>

#include "core/config.h"

namespace ferry::launch {

struct RunRequest {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string ferry_binary;  // Absolute path of this executable, for the children.
  bool dry_run = false;      // Print the topology and exit.
  bool resume = false;       // config_path is RUN_DIR/config.yaml: continue that run.
};

// Runs to the end; returns the process exit code.
int RunTopology(const RunRequest& request);

}  // namespace ferry::launch

#endif  // FERRY_LAUNCH_SUPERVISOR_H_
