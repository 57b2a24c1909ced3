// A prioritized replay table: columnar ring storage plus sum/min trees.
//
//   Insert(rows, priorities) -> ring slot (FIFO eviction, generation bumped)
//                            -> sum-tree and min-tree leaves = priority^alpha
//   Sample(n)                -> stratified proportional draw over the sum tree
//                            -> keys (slot, generation), p^alpha, gathered columns
//   UpdatePriorities(keys)   -> applied only where the generation still matches
//
// alpha = 0 makes sampling uniform. A Table is not thread-safe: the shard
// server owns it and calls it from one thread.
#ifndef FERRY_REPLAY_TABLE_H_
#define FERRY_REPLAY_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "core/experience.h"
#include "replay/sum_tree.h"

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
  std::vector<double> masses;                 // p^alpha of each sampled item.
  std::vector<std::vector<uint8_t>> columns;  // One buffer per schema column, count * row_bytes.
  std::vector<uint32_t> times_sampled;        // Including this draw.
};

class Table {
 public:
  Table(core::Schema schema, int64_t capacity, double alpha);

  // Stores `count` rows. columns[c] holds count * schema.columns[c].row_bytes()
  // bytes; priorities are raw (|TD| + epsilon), the table raises them to alpha.
  // Priorities below 1e-8, zero, negative and non-finite ones included, are
  // stored as 1e-8 so every item stays sampleable.
  void Insert(int count, const std::vector<const uint8_t*>& columns, const float* priorities);

  // Draws `count` items, stratified over [0, total_mass). Requires size() > 0.
  void Sample(int count, std::mt19937_64& rng, SampleBatch* out);

  // Applies raw priorities to the keys whose generation matches; returns how
  // many were applied (the rest were stale, out of range, negative or
  // non-finite). Zero is applied as 1e-8, as in Insert. With repeated keys the
  // last priority wins.
  int UpdatePriorities(const Key* keys, const float* priorities, int count);

  int64_t size() const { return size_; }
  int64_t capacity() const { return capacity_; }
  double alpha() const { return alpha_; }
  double total_mass() const;  // Sum of p^alpha over stored items.
  double min_mass() const;    // Smallest p^alpha over stored items (0 when empty).
  const core::Schema& schema() const { return schema_; }
  int64_t resident_bytes() const;

  // Read access for snapshots and inspection.
  const uint8_t* column_data(int c) const { return columns_[c].data(); }
  uint32_t generation(int64_t slot) const { return generations_[slot]; }
  double mass(int64_t slot) const;
  int64_t next_slot() const { return next_slot_; }

 private:
  core::Schema schema_;
  int64_t capacity_;
  double alpha_;
  int64_t size_ = 0;
  int64_t next_slot_ = 0;
  std::vector<size_t> row_bytes_;  // Per column, from schema_.
  std::vector<std::vector<uint8_t>> columns_;
  std::vector<uint32_t> generations_;
  std::vector<uint32_t> times_sampled_;
  SumTree sum_tree_;
  MinTree min_tree_;
  // Scratch of Insert, Sample and UpdatePriorities, kept to avoid allocations.
  std::vector<double> prefixes_;
  std::vector<int64_t> slots_;
  std::vector<double> masses_;
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_TABLE_H_
