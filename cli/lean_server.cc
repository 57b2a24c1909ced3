#include "cli/lean_server.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/log.h"
#include "core/malloc_tuning.h"

namespace ferry::cli {
namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

}  // namespace

int LeanServerMain(int argc, char** argv, const std::string& binary, const std::string& flag,
                   const std::string& flag_usage, const ServeFn& serve) {
  core::KeepLargeBlocksInHeap();
  core::SetLogName(binary);  // The role names itself once it knows which it is.
  auto usage = [&](const std::string& why) {
    std::fprintf(stderr, "%s: %s\nusage: %s --config CONFIG %s [--set key.path=value]...\n",
                 binary.c_str(), why.c_str(), binary.c_str(), flag_usage.c_str());
    return 1;
  };
  std::string config_path, value;
  std::vector<std::string> overrides;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    std::string* into = a == "--config" ? &config_path : a == flag ? &value : nullptr;
    if (into == nullptr && a != "--set") return usage("unknown argument '" + a + "'");
    if (i + 1 >= argc) return usage(a + " needs a value");
    if (into != nullptr) {
      *into = argv[++i];
    } else {
      overrides.push_back(argv[++i]);
    }
  }
  if (config_path.empty()) return usage("--config is required");
  auto config = core::LoadConfig(config_path, overrides);
  if (!config.ok()) return usage(config.status().message());
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  const Status served = serve(*config, value, g_stop);
  if (!served.ok()) {
    core::Log("error: %s", served.message().c_str());
    return ExitCodeFor(served);
  }
  return 0;
}

Result<int> ParseIndex(const std::string& flag, const std::string& value, int count) {
  char* end = nullptr;
  const long index = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || index < 0 || index >= count) {
    return InvalidArgument(flag + " must be in 0.." + std::to_string(count - 1) + ", got '" +
                           value + "'");
  }
  return static_cast<int>(index);
}

}  // namespace ferry::cli
