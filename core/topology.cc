#include "core/topology.h"

namespace ferry::core {
namespace {

std::string Tcp(const std::string& host, int port) {
  return "tcp://" + host + ":" + std::to_string(port);
}

std::string ParamServerHost(const Config& config) {
  return config.network.paramserver_host.empty() ? config.network.host
                                                 : config.network.paramserver_host;
}

}  // namespace

std::vector<std::string> ReplayEndpoints(const Config& config) {
  const std::vector<std::string> hosts = SplitHosts(config.network.replay_hosts);
  std::vector<std::string> endpoints;
  for (int k = 0; k < config.replay.shards; ++k) {
    const std::string& host = hosts.empty()       ? config.network.host
                              : hosts.size() == 1 ? hosts[0]
                                                  : hosts[k];
    endpoints.push_back(Tcp(host, config.network.replay_port + k));
  }
  return endpoints;
}

std::string ParamServerEndpoint(const Config& config) {
  return Tcp(ParamServerHost(config), config.network.paramserver_port);
}

std::string BroadcastEndpoint(const Config& config) {
  return Tcp(ParamServerHost(config), config.network.broadcast_port);
}

std::string ReplayBindEndpoint(const Config& config, int shard) {
  return Tcp(config.network.host, config.network.replay_port + shard);
}

std::string ParamServerBindEndpoint(const Config& config) {
  return Tcp(config.network.host, config.network.paramserver_port);
}

std::string BroadcastBindEndpoint(const Config& config) {
  return Tcp(config.network.host, config.network.broadcast_port);
}

}  // namespace ferry::core
