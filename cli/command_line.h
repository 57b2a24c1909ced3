// What `ferry` and `ferry-torch` share: the usage text, the arguments of run and learner
// (--config, --set, --resume, ...) and their errors, and the stop flag SIGINT/SIGTERM set.
//
//   ferry              (cli/main.cc)     run, envs, inspect, keygen, plot; without LibTorch
//                                        and MPI, so that `ferry run` starts its roles at once.
//                                        Each role it hands, arguments as they are, to the
//                                        binary beside it that runs that role:
//   ferry-torch        (cli/torch_main.cc)  learner, eval: the roles that train or load a
//                                           LibTorch Q-network
//   ferry-actor        (cli/actor_main.cc)  actor (lean: its network runs on models::FastMlp)
//   ferry-replay       (cli/replay_role.h)  replay (lean: cheap snapshot forks)
//   ferry-paramserver  (cli/paramserver_role.h)  paramserver (lean)
#ifndef FERRY_CLI_COMMAND_LINE_H_
#define FERRY_CLI_COMMAND_LINE_H_

#include <atomic>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/status.h"

namespace ferry::cli {

extern const char* const kUsage;

// Set by SIGINT and SIGTERM once StopOnSignals has run.
extern std::atomic<bool> g_stop;
void StopOnSignals();

struct Args {
  std::string command;
  std::string config;
  std::vector<std::string> overrides;
  bool dry_run = false;
  bool resume = false;
  bool exit_zero = false;  // learner --exit-zero.
};

bool ParseInt(const std::string& text, int* out);

// argv[1] is the command. Returns false (after printing why) on a usage error.
bool ParseArgs(int argc, char** argv, Args* args);

// The config args name, with its overrides; false (after printing why) if it does not load.
bool Load(const Args& args, core::Config* config);

// Logs `status` and returns the exit code for it.
int Fail(const Status& status);

// This executable's path (argv0 where /proc/self/exe cannot be read).
std::string SelfPath(const char* argv0);

}  // namespace ferry::cli

#endif  // FERRY_CLI_COMMAND_LINE_H_
