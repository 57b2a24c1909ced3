// Where each role listens, derived from the config's network section, so every
// process of a run computes the same endpoints from the same YAML file.
#ifndef FERRY_CORE_TOPOLOGY_H_
#define FERRY_CORE_TOPOLOGY_H_

#include <string>
#include <vector>

#include "core/config.h"

namespace ferry::core {

std::vector<std::string> ReplayEndpoints(const Config& config);
std::string ParamServerEndpoint(const Config& config);
std::string BroadcastEndpoint(const Config& config);

}  // namespace ferry::core

#endif  // FERRY_CORE_TOPOLOGY_H_
