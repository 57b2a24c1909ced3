// ferry-replay: the replay shard, `ferry replay`, without LibTorch and MPI (cli/replay_role.h).
//   usage: ferry-replay --config CONFIG --shard K [--set key.path=value]...
#include <string>

#include "cli/lean_server.h"
#include "cli/replay_role.h"

int main(int argc, char** argv) {
  using ferry::Status;
  return ferry::cli::LeanServerMain(argc, argv, "ferry-replay", "--shard", "--shard K",
                                    [](const ferry::core::Config& config, const std::string& value,
                                       const std::atomic<bool>& stop) -> Status {
                                      const ferry::Result<int> shard = ferry::cli::ParseIndex(
                                          "--shard", value, config.replay.shards);
                                      if (!shard.ok()) return shard.status();
                                      return ferry::cli::ServeReplayShard(config, *shard, stop);
                                    });
}
