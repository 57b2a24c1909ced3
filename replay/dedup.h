// Exactly-once ingestion: remembers which (actor, sequence) batches a shard stored.
//
// Each actor numbers its batches to this shard 0, 1, 2, ... and keeps at most a
// bounded window unacked, so per actor we keep the lowest sequence not yet seen
// plus the few seen above it. An actor process that restarts comes back with a
// new, larger epoch (its start time) and its numbering starts again; batches
// of an older epoch are refused, since that process is gone and nobody holds
// their ack. Not thread-safe.
#ifndef FERRY_REPLAY_DEDUP_H_
#define FERRY_REPLAY_DEDUP_H_

#include <cstdint>
#include <map>
#include <set>

namespace ferry::replay {

class Deduplicator {
 public:
  // True if this batch was not stored before; records it as stored.
  bool Accept(uint32_t actor, uint64_t epoch, uint64_t sequence);
  // Transitions stored per actor id (all epochs).
  const std::map<uint32_t, int64_t>& inserted_per_actor() const { return inserted_; }
  void CountInserted(uint32_t actor, int64_t transitions) { inserted_[actor] += transitions; }

 private:
  struct ActorState {
    uint64_t epoch = 0;
    uint64_t next_unseen = 0;     // Every sequence below this was stored.
    std::set<uint64_t> above;     // Stored sequences >= next_unseen.
  };
  std::map<uint32_t, ActorState> actors_;
  std::map<uint32_t, int64_t> inserted_;
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_DEDUP_H_
