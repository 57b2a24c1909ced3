// ferry-replay: the replay shard, `ferry replay`, without LibTorch and MPI (cli/replay_role.h).
//   usage: ferry-replay --config CONFIG --shard K [--set key.path=value]...
#include <cstdlib>
#include <string>

#include "cli/lean_server.h"
#include "cli/replay_role.h"

int main(int argc, char** argv) {
  using ferry::Status;
  return ferry::cli::LeanServerMain(
      argc, argv, "ferry-replay", "--shard", "--shard K",
      [](const ferry::core::Config& config, const std::string& value,
         const std::atomic<bool>& stop) -> Status {
        char* end = nullptr;
        const long shard = std::strtol(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || shard < 0 || shard >= config.replay.shards) {
          return ferry::InvalidArgument("--shard must be in 0.." +
                                        std::to_string(config.replay.shards - 1) + ", got '" +
                                        value + "'");
        }
        return ferry::cli::ServeReplayShard(config, static_cast<int>(shard), stop);
      });
}
