// When a shard's snapshots are written, restored and deleted (the format is replay/snapshot.h).
//
//   Restore()  newest valid DIR/shard-<K>-<seq>.snap -> table, dedup, limiter, counters
//              (corrupt files are logged and passed over; stray .tmp files removed)
//   Tick()     every period, if the shard changed: fork(); the child writes the
//              snapshot from its copy-on-write view of memory and _exits, while
//              the parent goes on serving and reaps it on a later Tick
//   Finish()   abandons a running child (the last snapshot supersedes it, and
//              waiting would delay shutdown), then writes a last one in-process
// After each snapshot written, files older than the previous valid one are
// deleted, so the newest two valid files stay.
//
// Durability: Start() captures the deduplicator's watermarks as of the fork;
// once that snapshot's file is complete they become what DurableThrough()
// answers, so acks tell writers which batches a restart would restore
// (InsertAckMeta). After Restore() the restored state is durable.
//
// One thread, the shard's, calls every method; at most one child runs at a
// time. The child reads memory and does file I/O only (no ZeroMQ, no lock but
// malloc's, which glibc's fork() leaves usable). It ignores SIGINT and SIGTERM,
// which a supervisor sends to the whole process group, holds none of the
// shard's sockets, and dies with the shard (PR_SET_PDEATHSIG), so no orphan
// writes behind a restarted shard.
#ifndef FERRY_REPLAY_SNAPSHOTTER_H_
#define FERRY_REPLAY_SNAPSHOTTER_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "core/status.h"
#include "replay/dedup.h"
#include "replay/protocol.h"
#include "replay/rate_limiter.h"
#include "replay/snapshot.h"
#include "replay/table.h"

namespace ferry::replay {

class Snapshotter {
 public:
  // An empty `dir` disables snapshots; a period of 0 writes one in Finish() only.
  Snapshotter(std::string dir, uint32_t shard_id, double period_seconds);
  // Kills and reaps a child still running (its .tmp file stays behind).
  ~Snapshotter();
  Snapshotter(const Snapshotter&) = delete;
  Snapshotter& operator=(const Snapshotter&) = delete;

  // Must run before the first Tick when snapshots are enabled. Creates the
  // directory; fails only when it cannot be used or when the newest valid
  // snapshot belongs to another configuration (schema, capacity, selector, alpha).
  Status Restore(Table* table, Deduplicator* dedup, RateLimiter* limiter, StatsMeta* stats);
  // Reaps a finished child; when a snapshot is due, asks `view` for the shard's
  // state and forks a child to write it. `view` is called only when needed.
  void Tick(const std::function<ShardView()>& view);
  // At shutdown: kills a running child, then writes `view` unless nothing
  // changed since the last snapshot written.
  void Finish(const ShardView& view);

  bool enabled() const { return !dir_.empty(); }
  // Every batch of (actor, epoch) numbered below this is in a complete snapshot file.
  uint64_t DurableThrough(uint32_t actor, uint64_t epoch) const;

 private:
  // Monotonic totals: equal marks mean nothing in the shard changed.
  struct Mark {
    int64_t inserts = 0;
    int64_t samples = 0;
    ShardCounters counters;
    bool operator==(const Mark&) const = default;
  };
  using Watermarks = std::map<uint32_t, Deduplicator::Watermark>;
  struct Child {
    pid_t pid = -1;
    int result_fd = -1;
    std::string path;
    uint64_t sequence = 0;
    Mark mark;
    Watermarks durable;  // The deduplicator's as of the fork.
    int64_t items = 0;
    double fork_ms = 0;
  };

  static Mark MarkOf(const ShardView& view);
  void Start(const ShardView& view);
  enum class ReapMode {
    kPoll,     // Collect the child's outcome if it has finished.
    kAbandon,  // Kill it unless it has finished, and remove what it left.
  };
  void Reap(ReapMode mode);
  // Records a snapshot written and deletes what is older than the previous one.
  void Written(uint64_t sequence, const Mark& mark, Watermarks durable);

  std::string dir_;
  uint32_t shard_id_;
  double period_seconds_;
  bool restored_ = false;
  uint64_t next_sequence_ = 1;
  uint64_t last_valid_sequence_ = 0;  // 0: none yet.
  Mark written_;                      // State in the last valid snapshot.
  Watermarks durable_;                // Deduplicator watermarks in the last valid snapshot.
  double next_due_ = 0;
  Child child_;
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_SNAPSHOTTER_H_
