#include "core/topology.h"

namespace ferry::core {
namespace {
std::string Tcp(const std::string& host, int port) {
  return "tcp://" + host + ":" + std::to_string(port);
}
}  // namespace

std::vector<std::string> ReplayEndpoints(const Config& config) {
  std::vector<std::string> endpoints;
  for (int k = 0; k < config.replay.shards; ++k) {
    endpoints.push_back(Tcp(config.network.host, config.network.replay_port + k));
  }
  return endpoints;
}

std::string ParamServerEndpoint(const Config& config) {
  return Tcp(config.network.host, config.network.paramserver_port);
}

std::string BroadcastEndpoint(const Config& config) {
  return Tcp(config.network.host, config.network.broadcast_port);
}

}  // namespace ferry::core
