// Where each role listens, derived from the config's network section, so every
// process of a run computes the same endpoints from the same YAML file. Servers bind
// network.host; clients connect to network.replay_hosts / network.paramserver_host where the
// config names them (roles on other machines), else to network.host too.
#ifndef FERRY_CORE_TOPOLOGY_H_
#define FERRY_CORE_TOPOLOGY_H_

#include <string>
#include <vector>

#include "core/config.h"

namespace ferry::core {

// Where clients connect.
std::vector<std::string> ReplayEndpoints(const Config& config);
std::string ParamServerEndpoint(const Config& config);
std::string BroadcastEndpoint(const Config& config);

// Where the servers bind.
std::string ReplayBindEndpoint(const Config& config, int shard);
std::string ParamServerBindEndpoint(const Config& config);
std::string BroadcastBindEndpoint(const Config& config);

}  // namespace ferry::core

#endif  // FERRY_CORE_TOPOLOGY_H_
