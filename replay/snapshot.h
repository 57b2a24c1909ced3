// Replay snapshots: one shard's whole state in one checksummed file.
//
//   live Table + Deduplicator + RateLimiter + counters (a ShardView)
//     -> WriteSnapshot: PATH.tmp, fsync, rename to PATH, fsync the directory
//     -> ReadSnapshot:  every length, checksum and invariant checked -> ShardSnapshot
//     -> RestoreShard:  checked against the shard's schema, capacity and alpha
//                       -> Table, Deduplicator, RateLimiter, StatsMeta
//
// File layout, little-endian, format version 1:
//   header   "FRRYSNAP", u32 format version, u32 section count, u64 schema
//            fingerprint, i64 creation time (ms since the Unix epoch), u32 CRC32C
//            of the 32 bytes before it
//   section  u32 name length, name, u64 payload length, u32 CRC32C of the payload,
//            u32 CRC32C of the section header before it; then the payload
//   trailer  "FRRYEND!", u64 offset of the trailer (so the file ends 16 bytes later)
// The sections, always in this order:
//   "schema"          Schema::ToString() text
//   "table"           i64 capacity, f64 alpha, i64 size, i64 next_slot, u32 n,
//                     n bytes of selector name (SelectorKindName)
//   "column <name>"   one per schema column: capacity rows, slot order
//   "generations"     u32 per slot
//   "times_sampled"   u32 per slot
//   "masses"          f64 p^alpha per slot (0 for empty slots)
//   "dedup"           u32 actors; per actor u32 id, u64 epoch, u64 next_unseen,
//                     i64 inserted, u64 n, n x u64 sequences stored above next_unseen
//   "rate_limiter"    i64 inserts, i64 samples
//   "counters"        the six i64 of ShardCounters, in declaration order
//
// A snapshot directory holds shard-<K>-<seq>.snap files, <seq> counting up; a
// "<file>.tmp" is a write that never finished. replay/snapshotter.h decides when
// they are written, restored and deleted. Every function here is thread-safe and
// WriteSnapshot may run in a forked child (it reads memory and does file I/O only).
#ifndef FERRY_REPLAY_SNAPSHOT_H_
#define FERRY_REPLAY_SNAPSHOT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/experience.h"
#include "core/status.h"
#include "replay/dedup.h"
#include "replay/protocol.h"
#include "replay/rate_limiter.h"
#include "replay/selectors/interface.h"
#include "replay/table.h"

namespace ferry::replay {

inline constexpr uint32_t kSnapshotFormatVersion = 1;

// The running totals of a shard that a snapshot keeps (the StatsMeta fields of
// the same names; the rest of StatsMeta follows from the table or is momentary).
struct ShardCounters {
  int64_t samples_total = 0;
  int64_t samples_refused = 0;
  int64_t updates_applied = 0;
  int64_t updates_stale = 0;
  int64_t duplicates_dropped = 0;
  int64_t bad_messages = 0;
  bool operator==(const ShardCounters&) const = default;
};

ShardCounters CountersOf(const StatsMeta& stats);

// A shard's live state, read in place by WriteSnapshot: nothing is copied, so
// nothing may change it while the write runs (a forked child's view never does).
struct ShardView {
  const Table* table = nullptr;
  const Deduplicator* dedup = nullptr;
  const RateLimiter* limiter = nullptr;
  ShardCounters counters;
};

// Where a section lies in its file (for `ferry inspect`).
struct SnapshotSection {
  std::string name;     // "schema", "column obs", "masses", ...
  uint64_t offset = 0;  // Of the payload, from the start of the file.
  uint64_t length = 0;  // Payload bytes.
  uint32_t crc32c = 0;  // Of the payload, as stored and verified.
};

// Everything one snapshot file holds, validated: ReadSnapshot returns it only
// when every checksum matches and the state is one a Table could have been in.
struct ShardSnapshot {
  std::string path;  // The file it was read from; every error message starts with it.
  uint32_t format_version = 0;
  uint64_t schema_fingerprint = 0;        // core::Schema::Fingerprint() of `schema`.
  int64_t created_unix_ms = 0;            // When the writer started, wall clock.
  std::vector<SnapshotSection> sections;  // In file order.

  core::Schema schema;
  // The table. Slots [0, size) hold items; the ring's next write goes to next_slot
  // (== size until the table is full), so the oldest item is at next_slot once full.
  int64_t capacity = 0;
  double alpha = 0;
  SelectorKind selector = SelectorKind::kPrioritized;  // Masses are the selector's.
  int64_t size = 0;
  int64_t next_slot = 0;
  std::vector<std::vector<uint8_t>> columns;  // Per schema column: capacity * row_bytes.
  std::vector<uint32_t> generations;          // Per slot; bumped on every overwrite.
  std::vector<uint32_t> times_sampled;        // Per slot; since the item was inserted.
  std::vector<double> masses;                 // Per slot: p^alpha, > 0 exactly below size.

  std::vector<Deduplicator::ActorRecord> dedup;  // By ascending actor id.
  int64_t limiter_inserts = 0;                   // RateLimiter::inserts(): transitions ever stored.
  int64_t limiter_samples = 0;                   // RateLimiter::samples(): items ever handed out.
  ShardCounters counters;
};

// Writes `view` to path + ".tmp", fsyncs it, renames it to `path` and fsyncs
// the directory, so `path` is either absent, the previous file, or complete.
// On failure the ".tmp" file is removed and the error names it.
Status WriteSnapshot(const std::string& path, const ShardView& view);

// Reads and validates a whole snapshot. Errors (DataLoss, or NotFound) name
// the file and the part that is wrong: "PATH: section 'masses' checksum
// mismatch", "PATH: truncated in section 'column obs'", "PATH: not a ferry
// snapshot", "PATH: format version 7, this build reads 1".
Result<ShardSnapshot> ReadSnapshot(const std::string& path);

// Replaces the state of a shard's objects with the snapshot's. Refuses
// (InvalidArgument, nothing changed) a snapshot whose schema, capacity, alpha or
// selector differs from the table's. Sets the ShardCounters fields of `stats` only.
Status RestoreShard(const ShardSnapshot& snapshot, Table* table, Deduplicator* dedup,
                    RateLimiter* limiter, StatsMeta* stats);

// "shard-<shard>-<sequence>.snap", the sequence zero-padded to 6 digits.
std::string SnapshotFileName(uint32_t shard, uint64_t sequence);

struct SnapshotFile {
  uint64_t sequence = 0;
  std::string path;
};

struct SnapshotListing {
  std::vector<SnapshotFile> snapshots;  // Complete files of the shard, oldest first.
  std::vector<std::string> leftovers;   // Its ".tmp" files: writes that never finished.
  uint64_t next_sequence = 1;           // Above every sequence in use, .tmp included.
};

// The snapshot files of `shard` in `dir`; a missing directory lists nothing.
Result<SnapshotListing> ListSnapshots(const std::string& dir, uint32_t shard);

struct NewestSnapshot {
  SnapshotFile file;
  ShardSnapshot snapshot;
};

// The newest snapshot of the listing that reads back valid. Each newer one
// that does not is logged with ReadSnapshot's reason and passed over; nullopt
// when none is valid.
std::optional<NewestSnapshot> ReadNewestSnapshot(const SnapshotListing& listing);

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_SNAPSHOT_H_
