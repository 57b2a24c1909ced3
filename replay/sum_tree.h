// Fixed-capacity sum and min trees over per-item priorities (p^alpha).
//
// Both are 8-ary: the 8 children of a node are contiguous and cache-line
// aligned, so a root-to-leaf walk touches one cache line per level (7 levels
// for 1M items instead of 20 for a binary tree). Every Set recomputes the
// parents from their children instead of adding a delta, so sums carry no
// error accumulated over millions of updates. Neither class is thread-safe;
// the owner (a Table) calls them from one thread.
#ifndef FERRY_REPLAY_SUM_TREE_H_
#define FERRY_REPLAY_SUM_TREE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/cache_aligned.h"

namespace ferry::replay {

namespace internal {

inline constexpr int kTreeArity = 8;

using AlignedDoubles = core::CacheAlignedVector<double>;

// Where each level of an 8-ary tree over `capacity` leaves lives in one flat
// array. Level 0 holds the leaves; level l + 1 holds one node per 8 nodes of
// level l; every level is padded to a multiple of 8 entries so each sibling
// group starts on a cache line. The last level is the root (one node).
class TreeLayout {
 public:
  explicit TreeLayout(int64_t capacity);

  int64_t capacity() const { return capacity_; }
  int root_level() const { return static_cast<int>(offsets_.size()) - 1; }
  int64_t offset(int level) const { return offsets_[level]; }
  int64_t total_nodes() const { return total_nodes_; }

 private:
  int64_t capacity_;
  std::vector<int64_t> offsets_;
  int64_t total_nodes_ = 0;
};

}  // namespace internal

// Sums of non-negative values, with prefix-sum search for proportional sampling.
class SumTree {
 public:
  // All `capacity` (>= 1) values start at 0.
  explicit SumTree(int64_t capacity);

  // `value` must be finite and >= 0.
  void Set(int64_t index, double value);
  // Set for n items at once (as if in order), several times faster than n
  // calls on a large tree.
  void SetBatch(const int64_t* indices, const double* values, int n);
  double Get(int64_t index) const { return nodes_[index]; }
  double Total() const { return nodes_[layout_.offset(layout_.root_level())]; }

  // The index i with sum[0..i) <= prefix < sum[0..i]. Prefixes below 0 are
  // treated as 0 and prefixes at or past Total() select the last index with a
  // non-zero value, so when Total() > 0 the result always has a non-zero
  // value, rounding included. Returns 0 when Total() == 0.
  int64_t Find(double prefix) const;

  // Find for n prefixes at once, interleaved level by level so the cache
  // misses of different searches overlap.
  void FindBatch(const double* prefixes, int64_t* out, int n) const;

  int64_t capacity() const { return layout_.capacity(); }
  int64_t bytes() const { return static_cast<int64_t>(nodes_.capacity() * sizeof(double)); }

 private:
  internal::TreeLayout layout_;
  internal::AlignedDoubles nodes_;
};

// Minimum over the values set so far. A leaf holding +infinity does not count,
// so Set(index, +infinity) clears a slot.
class MinTree {
 public:
  // All `capacity` (>= 1) leaves start cleared (+infinity).
  explicit MinTree(int64_t capacity);

  // `value` must not be NaN.
  void Set(int64_t index, double value);
  // Set for n items at once (as if in order).
  void SetBatch(const int64_t* indices, const double* values, int n);
  double Get(int64_t index) const { return nodes_[index]; }
  // +infinity when every leaf is cleared.
  double Min() const { return nodes_[layout_.offset(layout_.root_level())]; }

  int64_t capacity() const { return layout_.capacity(); }
  int64_t bytes() const { return static_cast<int64_t>(nodes_.capacity() * sizeof(double)); }

 private:
  internal::TreeLayout layout_;
  internal::AlignedDoubles nodes_;
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_SUM_TREE_H_
