// A replay table: columnar ring storage plus an item selector (selectors/).
//
//   Insert(rows, priorities) -> ring slot (FIFO eviction, generation bumped)
//                            -> selector Insert (prioritized: tree leaves = priority^alpha)
//   Sample(n)                -> selector Sample (prioritized: stratified proportional draw)
//                            -> keys (slot, generation), masses, gathered columns
//   UpdatePriorities(keys)   -> applied only where the generation still matches
//
// With the prioritized selector, alpha = 0 makes sampling uniform. With
// Compression::kLz4, uint8 columns (image observations) keep each row
// LZ4-compressed (compressed_column.h); the rest stay preallocated arrays. A
// Table is not thread-safe: the shard server owns it and calls it from one thread.
#ifndef FERRY_REPLAY_TABLE_H_
#define FERRY_REPLAY_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "core/experience.h"
#include "core/status.h"
#include "replay/compressed_column.h"
#include "replay/selectors/interface.h"

namespace ferry::replay {

// Identifies one stored item. A priority update carrying an older generation
// than the slot's current one is stale (the slot was overwritten) and ignored.
struct Key {
  uint32_t slot = 0;
  uint32_t generation = 0;
  bool operator==(const Key&) const = default;
};

struct SampleBatch {
  std::vector<Key> keys;
  std::vector<double> masses;                 // Selector mass: p^alpha when prioritized, else 1.
  std::vector<std::vector<uint8_t>> columns;  // One buffer per schema column, count * row_bytes.
  std::vector<uint32_t> times_sampled;        // Including this draw.
};

class Table {
 public:
  // `alpha` is the prioritized selector's exponent; the other selectors ignore it.
  Table(core::Schema schema, int64_t capacity, double alpha,
        SelectorKind selector = SelectorKind::kPrioritized,
        Compression compression = Compression::kNone);

  // Stores `count` rows. columns[c] holds count * schema.columns[c].row_bytes()
  // bytes; priorities are raw (|TD| + epsilon). The prioritized selector raises
  // them to alpha and stores priorities below 1e-8, zero, negative and
  // non-finite ones included, as 1e-8, so every item stays sampleable.
  void Insert(int count, const std::vector<const uint8_t*>& columns, const float* priorities);

  // Draws `count` items as the selector chooses (prioritized: stratified over
  // [0, total_mass)). Requires size() > 0.
  void Sample(int count, std::mt19937_64& rng, SampleBatch* out);
  // The same draw, gathering column c's rows into columns[c] (count * row_bytes
  // bytes, e.g. the frame a reply will send) instead of out->columns, which is
  // left as it was.
  void Sample(int count, std::mt19937_64& rng, SampleBatch* out,
              const std::vector<uint8_t*>& columns);

  // Applies raw priorities to the keys whose generation matches; returns how
  // many were applied (the rest were stale, out of range, negative or
  // non-finite). Zero is applied as 1e-8, as in Insert. With repeated keys the
  // last priority wins. Selectors that ignore priorities count the same way.
  int UpdatePriorities(const Key* keys, const float* priorities, int count);

  int64_t size() const { return size_; }
  int64_t capacity() const { return capacity_; }
  double alpha() const { return alpha_; }
  SelectorKind selector() const { return selector_kind_; }
  Compression compression() const { return compression_; }
  double total_mass() const { return selector_->TotalMass(); }  // Sum of masses of stored items.
  double min_mass() const { return selector_->MinMass(); }  // Smallest stored mass, 0 when empty.
  const core::Schema& schema() const { return schema_; }
  // Heap bytes held: columns (compressed ones as their rows compressed),
  // trees, per-slot counters and scratch.
  int64_t resident_bytes() const;

  // Read access for snapshots and inspection. ReadRows copies rows
  // [first, first + count) of column c into dst, decompressing as needed.
  void ReadRows(int c, int64_t first, int64_t count, uint8_t* dst) const;
  // The rows of an uncompressed column in place (capacity() rows).
  const uint8_t* column_data(int c) const;
  uint32_t generation(int64_t slot) const { return generations_[slot]; }
  uint32_t times_sampled(int64_t slot) const { return times_sampled_[slot]; }
  double mass(int64_t slot) const { return selector_->Mass(slot); }
  int64_t next_slot() const { return next_slot_; }

  // Replaces the whole state with a snapshot's. columns[c] holds capacity()
  // rows; generations, times_sampled and masses (as mass() reported them) hold
  // capacity() entries. Slots below `size` must have a positive mass, the rest
  // mass 0. Selectors other than prioritized give every stored item mass 1.
  Status Restore(int64_t size, int64_t next_slot, const std::vector<const uint8_t*>& columns,
                 const uint32_t* generations, const uint32_t* times_sampled, const double* masses);

 private:
  core::Schema schema_;
  int64_t capacity_;
  double alpha_;
  SelectorKind selector_kind_;
  std::unique_ptr<ItemSelector> selector_;
  int64_t size_ = 0;
  int64_t next_slot_ = 0;
  std::vector<size_t> row_bytes_;  // Per column, from schema_.
  Compression compression_;
  // Per column, one of the two is used: the preallocated rows, or (compressed
  // columns) a CompressedColumn with columns_[c] left empty.
  std::vector<std::vector<uint8_t>> columns_;
  std::vector<std::unique_ptr<CompressedColumn>> compressed_;
  std::vector<uint32_t> generations_;
  std::vector<uint32_t> times_sampled_;
  // Scratch of Insert, Sample and UpdatePriorities, kept to avoid allocations.
  std::vector<int64_t> slots_;
  std::vector<float> priorities_;
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_TABLE_H_
