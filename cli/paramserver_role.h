// The parameter server role: the `ferry-paramserver` binary, which `ferry paramserver` and
// `ferry run` start.
//
// It links neither LibTorch nor MPI: it only moves weights as bytes, and a process that loads
// LibTorch spends about 0.8 s of CPU before its first line of main.
#ifndef FERRY_CLI_PARAMSERVER_ROLE_H_
#define FERRY_CLI_PARAMSERVER_ROLE_H_

#include <atomic>
#include <string>

#include "core/config.h"
#include "core/status.h"

namespace ferry::cli {

// Serves `config`'s latest weights until `stop`; with `upstream` ("FETCH,BROADCAST", the two
// endpoints of another paramserver) relays that one's. Logs under "paramserver".
Status ServeParamServer(const core::Config& config, const std::string& upstream,
                        const std::atomic<bool>& stop);

}  // namespace ferry::cli

#endif  // FERRY_CLI_PARAMSERVER_ROLE_H_
