// serial_dqn CONFIG [--set key.path=value]...
//
// Runs CONFIG's experiment as a single-process DQN (serial_dqn.h) in run.dir
// (default runs/<run.name>-serial), writing the records `ferry run` writes. Exit
// status as `ferry run`'s: 0 target reached, 2 budget spent, 3 stopped by
// SIGINT/SIGTERM, 78 a configuration it cannot run, 1 other errors.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/serial_dqn/serial_dqn.h"
#include "core/blas_kernels.h"
#include "core/log.h"

namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

int Usage() {
  std::fprintf(stderr, "usage: serial_dqn CONFIG [--set key.path=value]...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return Usage();
  ferry::core::WarnIfBlasIsGeneric("serial_dqn");
  std::vector<std::string> overrides;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--set") != 0 || i + 1 == argc) return Usage();
    overrides.push_back(argv[++i]);
  }
  auto config = ferry::core::LoadConfig(argv[1], overrides);
  if (!config.ok()) {
    std::fprintf(stderr, "serial_dqn: %s\n", config.status().message().c_str());
    return ferry::kConfigErrorExit;
  }
  if (config->run.dir.empty()) config->run.dir = "runs/" + config->run.name + "-serial";
  std::error_code ec;
  std::filesystem::create_directories(config->run.dir, ec);
  std::ofstream(config->run.dir + "/config.yaml") << ferry::core::ConfigToYaml(*config);
  ferry::core::SetLogName("serial-dqn");
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  const auto end = ferry::bench::RunSerialDqn(*config, g_stop);
  if (!end.ok()) {
    std::fprintf(stderr, "serial_dqn: %s\n", end.status().message().c_str());
    return ferry::ExitCodeFor(end.status());
  }
  return static_cast<int>(*end);
}
