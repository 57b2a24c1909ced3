// The replay shard role: the `ferry-replay` binary, which `ferry replay` and `ferry run` start.
//
// It links neither LibTorch nor MPI: a shard snapshots by fork(), and fork copies the page
// tables of every mapping, so a process carrying LibTorch's ~1,500 mappings and 160 MB of
// touched pages pauses for 7-11 ms per snapshot where this binary pauses for about 1 ms.
#ifndef FERRY_CLI_REPLAY_ROLE_H_
#define FERRY_CLI_REPLAY_ROLE_H_

#include <atomic>

#include "core/config.h"
#include "core/status.h"

namespace ferry::cli {

// Serves replay shard `shard` of `config` until `stop`; logs what it does under "replay-K".
// SIGUSR1 says the learner has ended: from then on the shard admits every insert (ShardServer::
// Serve's `learner_ended`). A starter that blocks SIGUSR1 before exec (`ferry run` does) keeps
// one sent before the handler is in place pending instead of fatal: it is unblocked here.
Status ServeReplayShard(const core::Config& config, int shard, const std::atomic<bool>& stop);

}  // namespace ferry::cli

#endif  // FERRY_CLI_REPLAY_ROLE_H_
