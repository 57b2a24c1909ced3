// ferry-replay: `ferry replay` in a binary without LibTorch and MPI (cli/replay_role.h says why).
//   usage: ferry-replay --config CONFIG --shard K [--set key.path=value]...
#include <signal.h>

#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/replay_role.h"
#include "core/log.h"
#include "core/malloc_tuning.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "ferry-replay: %s\nusage: ferry-replay --config CONFIG --shard K "
               "[--set key.path=value]...\n",
               why.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  ferry::core::KeepLargeBlocksInHeap();
  std::string config_path;
  std::vector<std::string> overrides;
  long shard = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--config" && has_value) {
      config_path = argv[++i];
    } else if (a == "--set" && has_value) {
      overrides.push_back(argv[++i]);
    } else if (a == "--shard" && has_value) {
      char* end = nullptr;
      shard = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || shard < 0 || shard > INT_MAX) return Usage("--shard needs an index");
    } else {
      return Usage("unknown argument '" + a + "'");
    }
  }
  if (config_path.empty()) return Usage("--config is required");
  auto config = ferry::core::LoadConfig(config_path, overrides);
  if (!config.ok()) return Usage(config.status().message());
  if (shard < 0 || shard >= config->replay.shards) {
    return Usage("--shard must be in 0.." + std::to_string(config->replay.shards - 1));
  }
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  const ferry::Status served =
      ferry::cli::ServeReplayShard(*config, static_cast<int>(shard), g_stop);
  if (!served.ok()) {
    ferry::core::Log("error: %s", served.message().c_str());
    return ferry::ExitCodeFor(served);
  }
  return 0;
}
