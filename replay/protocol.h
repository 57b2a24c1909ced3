// Replay's messages: the metadata structs that ride in frame 1 (core/wire.h).
//
//   InsertBatch       actor -> shard   meta, one frame per column, priorities f32
//   InsertAck         shard -> actor   meta; header.sequence echoes the batch
//   SampleRequest     learner -> shard meta
//   SampleReply       shard -> learner meta, keys, masses f64, times_sampled u32, columns
//   UpdatePriorities  learner -> shard meta, keys, priorities f32 (no reply)
//   StatsRequest/Reply                 meta, per-actor insert counts (u32 id, u64 count)
//   InspectRequest/Reply               `ferry inspect`; frames listed at InspectRequestMeta
//
// Every reply carries the shard's total priority mass, min mass and size, so
// the client keeps global-proportional sampling exact without extra requests.
#ifndef FERRY_REPLAY_PROTOCOL_H_
#define FERRY_REPLAY_PROTOCOL_H_

#include <cstdint>

namespace ferry::replay {

struct InsertMeta {
  uint64_t schema_fingerprint = 0;
  uint64_t actor_epoch = 0;  // Changes when an actor process restarts.
  uint32_t count = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(schema_fingerprint, actor_epoch, count);
  }
};

// Durability (replay/writer.h keeps what a SIGKILL of the shard could still lose):
// every batch of the acked batch's (actor, epoch) numbered below durable_through
// is in a snapshot whose file is complete, so a restarted shard restores it.
struct InsertAckMeta {
  uint8_t duplicate = 0;  // 1: this (actor, sequence) was stored before; nothing added.
  int64_t size = 0;
  uint8_t snapshots = 0;         // 0: the shard never snapshots; a restart loses everything.
  uint64_t incarnation = 0;      // Drawn at shard start: a new value means it restarted.
  uint64_t durable_through = 0;  // Meaningful only with snapshots.
  // 1: the rate limiter held the batch before it was stored (inserts ran ahead of samples).
  uint8_t held = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(duplicate, size, snapshots, incarnation, durable_through, held);
  }
};

struct SampleRequestMeta {
  uint64_t schema_fingerprint = 0;
  uint32_t count = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(schema_fingerprint, count);
  }
};

enum class SampleStatus : uint8_t {
  kOk = 0,
  kTooSmall = 1,     // Fewer items than min_size_to_sample.
  kRateLimited = 2,  // Samples ran ahead of inserts (samples_per_insert).
};

// The shard-wide figures every sample reply and stats reply carry.
struct MassInfo {
  double total_mass = 0;  // Sum of p^alpha.
  double min_mass = 0;    // Min of p^alpha (0 when empty).
  int64_t size = 0;
  int64_t inserted_total = 0;  // Transitions ever stored (duplicates excluded).
  template <class Archive>
  void serialize(Archive& ar) {
    ar(total_mass, min_mass, size, inserted_total);
  }
};

struct SampleReplyMeta {
  SampleStatus status = SampleStatus::kOk;
  uint32_t count = 0;
  MassInfo mass;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(status, count, mass);
  }
};

struct UpdatePrioritiesMeta {
  uint32_t count = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(count);
  }
};

struct StatsMeta {
  MassInfo mass;
  int64_t capacity = 0;
  int64_t resident_bytes = 0;
  int64_t samples_total = 0;  // Items handed out.
  int64_t updates_applied = 0;
  int64_t updates_stale = 0;
  int64_t duplicates_dropped = 0;
  int64_t bad_messages = 0;
  int64_t inserts_waiting = 0;  // Batches held back by the rate limiter right now.
  int64_t samples_refused = 0;  // Sample requests answered kTooSmall or kRateLimited.
  uint64_t schema_fingerprint = 0;
  double alpha = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(mass, capacity, resident_bytes, samples_total, updates_applied, updates_stale,
       duplicates_dropped, bad_messages, inserts_waiting, samples_refused, schema_fingerprint,
       alpha);
  }
};

// `ferry inspect` (read-only; replay/inspect.h builds and renders the report):
//   InspectRequest  meta
//   InspectReply    meta, schema text (Schema::ToString), histogram counts u64,
//                   the listed items (top, bottom, then sampled) as five frames:
//                   slots u32, generations u32, masses f64, times_sampled u32,
//                   policy versions i64; actor ids u32, their insert counts i64;
//                   one frame per schema column with the sampled items' rows.

// Writers and samplers reconnect to a shard that went away after 100 ms, then
// back off, doubling up to 2 s (ZeroMQ's default retries every 100 ms for ever).
// What a writer sent into the gap is re-sent once it is back (replay/writer.h).
inline constexpr int kReconnectIntervalMs = 100;
inline constexpr int kReconnectIntervalMaxMs = 2000;

inline constexpr uint32_t kMaxInspectItems = 10000;  // Bound on top_k and sample_count.
// Bytes a sample reply carries per row beside the row itself (key, generation, probability).
inline constexpr int64_t kSampleReplyRowOverhead = 64;

struct InspectRequestMeta {
  uint32_t top_k = 0;         // Items listed at each end of the priority order.
  uint32_t sample_count = 0;  // Items drawn uniformly with `seed`, not the shard's RNG.
  uint64_t seed = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(top_k, sample_count, seed);
  }
};

struct RateLimiterState {
  double samples_per_insert = 0;
  int64_t min_size_to_sample = 0;
  double tolerance = 0;
  uint8_t can_insert = 0;
  uint8_t can_sample = 0;
  int64_t inserts_waiting = 0;  // Batches held back right now.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(samples_per_insert, min_size_to_sample, tolerance, can_insert, can_sample, inserts_waiting);
  }
};

// max_version - policy_version over the stored items.
struct PolicyStaleness {
  uint8_t known = 0;  // 0: empty, or the schema has no int64 policy_version column.
  int64_t max_version = 0;
  double mean = 0;
  int64_t p50 = 0;
  int64_t p90 = 0;
  int64_t p99 = 0;
  int64_t max = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(known, max_version, mean, p50, p90, p99, max);
  }
};

struct InspectReplyMeta {
  uint64_t schema_fingerprint = 0;
  uint8_t selector = 0;  // SelectorKind (selectors/interface.h).
  int64_t capacity = 0;
  int64_t size = 0;
  double alpha = 0;
  double total_mass = 0;
  int64_t inserts_total = 0;
  int64_t samples_total = 0;  // The StatsMeta counters of the same names.
  int64_t samples_refused = 0;
  int64_t updates_applied = 0;
  int64_t updates_stale = 0;
  int64_t duplicates_dropped = 0;
  int64_t bad_messages = 0;
  RateLimiterState limiter;
  double histogram_lo = 0;  // Smallest and largest stored mass; log-spaced bins between.
  double histogram_hi = 0;
  uint32_t histogram_bins = 0;
  PolicyStaleness staleness;
  uint32_t top_count = 0;
  uint32_t bottom_count = 0;
  uint32_t sample_count = 0;
  uint32_t actor_count = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(schema_fingerprint, selector, capacity, size, alpha, total_mass, inserts_total,
       samples_total, samples_refused, updates_applied, updates_stale, duplicates_dropped,
       bad_messages, limiter, histogram_lo, histogram_hi, histogram_bins, staleness, top_count,
       bottom_count, sample_count, actor_count);
  }
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_PROTOCOL_H_
