#include "cli/lean_server.h"

#include <cstdio>
#include <vector>

#include "cli/command_line.h"
#include "core/log.h"
#include "core/malloc_tuning.h"

namespace ferry::cli {

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
  StopOnSignals();
  const Status served = serve(*config, value, g_stop);
  if (!served.ok()) {
    core::Log("error: %s", served.message().c_str());
    return ExitCodeFor(served);
  }
  return 0;
}

Result<int> ParseIndex(const std::string& flag, const std::string& value, int count) {
  int index = 0;
  if (!ParseInt(value, &index) || index >= count) {
    return InvalidArgument(flag + " must be in 0.." + std::to_string(count - 1) + ", got '" +
                           value + "'");
  }
  return index;
}

}  // namespace ferry::cli
