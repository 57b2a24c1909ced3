// The single-process DQN that bench/learning.sh measures ferry against.
//
// The algorithm of a ferry run of the same config with one actor, one env, one
// replay shard and one learner rank (n-step Double DQN, prioritized replay with
// the config's rate limiter, Ape-X's exploration rate for one slot, the same
// periodic and final evaluations), done in turn on one thread, as a
// single-process DQN such as Stable-Baselines3's does it:
//
//   loop: one env step -> complete transitions into a replay::Table
//         -> while the RateLimiter allows a sample: sample a batch, update,
//            write back |TD| priorities; every learner.publish_period updates
//            the actor takes the new weights, every learner.eval_period
//            updates a greedy evaluation runs (and is waited for)
//
// What ferry's processes do side by side (acting, storing, learning,
// evaluating), this does one after another, with no sockets and no threads.
#ifndef FERRY_BENCH_SERIAL_DQN_SERIAL_DQN_H_
#define FERRY_BENCH_SERIAL_DQN_SERIAL_DQN_H_

#include <atomic>

#include "core/config.h"
#include "core/status.h"
#include "learner/apex_dqn.h"

namespace ferry::bench {

// Runs `config` to its end (stop.*) in config.run.dir, which must be set: metrics.jsonl with
// the learner's records (periodic evaluations, progress, the end record with the final and
// selected policies' returns) and checkpoints/best-policy.pt. `stop` ends it early.
Result<learner::RunEnd> RunSerialDqn(const core::Config& config, const std::atomic<bool>& stop);

}  // namespace ferry::bench

#endif  // FERRY_BENCH_SERIAL_DQN_SERIAL_DQN_H_
