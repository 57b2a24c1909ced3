// Exactly-once ingestion: remembers which (actor, sequence) batches a shard stored.
//
// Each actor numbers its batches to this shard 0, 1, 2, ... and keeps at most a
// bounded window unacked, so per actor we keep the lowest sequence not yet seen
// plus the few seen above it. An actor process that restarts comes back with a
// new, larger epoch (its start time) and its numbering starts again; batches
// of an older epoch are refused, since that process is gone and nobody holds
// their ack. Not thread-safe.
//
// A shard restored from a snapshot has forgotten the batches it acked after
// that snapshot; writers send again those they retain (replay/writer.h), but
// ones they let go past their retain limit never come again and stay a gap
// below the sequences seen above it. Once more than kMaxSeenAhead sequences
// wait above a gap, the gap is given up: no actor window is that wide.
#ifndef FERRY_REPLAY_DEDUP_H_
#define FERRY_REPLAY_DEDUP_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "core/status.h"

namespace ferry::replay {

class Deduplicator {
 public:
  static constexpr size_t kMaxSeenAhead = 4096;

  // One actor's state as a snapshot stores it.
  struct ActorRecord {
    uint32_t actor = 0;
    uint64_t epoch = 0;
    uint64_t next_unseen = 0;     // Every sequence below this was stored.
    std::vector<uint64_t> above;  // Stored sequences above next_unseen, ascending.
    int64_t inserted = 0;         // Transitions stored for this actor id (all epochs).
    bool operator==(const ActorRecord&) const = default;
  };

  // True if this batch was not stored before; records it as stored.
  bool Accept(uint32_t actor, uint64_t epoch, uint64_t sequence);
  // Transitions stored per actor id (all epochs).
  const std::map<uint32_t, int64_t>& inserted_per_actor() const { return inserted_; }
  void CountInserted(uint32_t actor, int64_t transitions) { inserted_[actor] += transitions; }

  // Per actor: its newest epoch and the sequence below which every batch was stored.
  struct Watermark {
    uint64_t epoch = 0;
    uint64_t next_unseen = 0;
  };
  // Cheap (one entry per actor): what a shard captures when a snapshot starts.
  std::map<uint32_t, Watermark> Watermarks() const;

  // Every actor's state, by ascending actor id.
  std::vector<ActorRecord> Export() const;
  // Replaces the whole state; InvalidArgument (nothing changed) when a record
  // breaks the invariants above or an actor appears twice.
  Status Import(const std::vector<ActorRecord>& records);

 private:
  struct ActorState {
    uint64_t epoch = 0;
    uint64_t next_unseen = 0;  // Every sequence below this was stored.
    std::set<uint64_t> above;  // Stored sequences >= next_unseen.
  };
  std::map<uint32_t, ActorState> actors_;
  std::map<uint32_t, int64_t> inserted_;
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_DEDUP_H_
