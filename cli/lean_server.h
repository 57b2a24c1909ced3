// The main of the roles' binaries that link neither LibTorch nor MPI: ferry-replay
// (cli/replay_role.h), ferry-paramserver (cli/paramserver_role.h) and ferry-actor
// (cli/actor_main.cc). A process with LibTorch loaded spends about 0.5-0.8 s of CPU starting
// and forks ten times slower.
#ifndef FERRY_CLI_LEAN_SERVER_H_
#define FERRY_CLI_LEAN_SERVER_H_

#include <atomic>
#include <functional>
#include <string>

#include "core/config.h"
#include "core/status.h"

namespace ferry::cli {

// Serves a role with the loaded config and the value of the binary's own flag ("" if absent)
// until `stop`.
using ServeFn = std::function<Status(const core::Config& config, const std::string& value,
                                     const std::atomic<bool>& stop)>;

// Parses `--config CONFIG [--set key.path=value]... [FLAG VALUE]` (`flag`: e.g. "--shard",
// shown in the usage line as `flag_usage`), loads the config, stops on SIGINT and SIGTERM, and
// serves. Returns the exit status: 1 for a usage error, ExitCodeFor the role's status otherwise
// (78: it cannot run with this config, a bad FLAG value included).
int LeanServerMain(int argc, char** argv, const std::string& binary, const std::string& flag,
                   const std::string& flag_usage, const ServeFn& serve);

// The value of an index flag (`--shard K`, `--id I`) as an integer in 0..count-1;
// InvalidArgument naming `flag` otherwise.
Result<int> ParseIndex(const std::string& flag, const std::string& value, int count);

}  // namespace ferry::cli

#endif  // FERRY_CLI_LEAN_SERVER_H_
