// The parameter server role, shared by `ferry paramserver` and the `ferry-paramserver` binary.
//
// `ferry-paramserver` is the same server without LibTorch and MPI linked in: it only moves
// weights as bytes, and a process that loads LibTorch spends about 0.8 s of CPU before its
// first line of main. `ferry run` starts four such processes at once on a 2-core machine, so
// it starts the paramserver with `ferry-paramserver` when that sits beside `ferry`.
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
