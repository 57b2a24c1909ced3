#include "replay/sum_tree.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/status.h"

namespace ferry::replay {

namespace internal {

TreeLayout::TreeLayout(int64_t capacity) : capacity_(capacity) {
  FERRY_CHECK(capacity >= 1);
  auto round_up = [](int64_t n) { return (n + kTreeArity - 1) / kTreeArity * kTreeArity; };
  int64_t level_size = round_up(capacity);
  offsets_.push_back(0);
  total_nodes_ = level_size;
  while (level_size > kTreeArity) {
    level_size = round_up(level_size / kTreeArity);
    offsets_.push_back(total_nodes_);
    total_nodes_ += level_size;
  }
  // The level below the root is now a single sibling group.
  offsets_.push_back(total_nodes_);
  total_nodes_ += 1;
}

}  // namespace internal

namespace {

using internal::kTreeArity;
static_assert(kTreeArity == 8, "Sum8 and Min8 assume 8 children");

constexpr int kFindChunk = 32;  // Searches in flight at once in FindBatch.
constexpr int kSetChunk = 64;   // Updates propagated together in SetBatch.

// Pairwise order: shorter dependency chains than a left fold, and the same
// rounding on every recomputation.
inline double Sum8(const double* v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

inline double Min8(const double* v) {
  return std::min(std::min(std::min(v[0], v[1]), std::min(v[2], v[3])),
                  std::min(std::min(v[4], v[5]), std::min(v[6], v[7])));
}

// Picks the child whose prefix-sum interval holds *remaining and subtracts the
// mass of the children before it. A chosen child always has a non-zero value
// unless every child is zero. When *remaining lies at or past the children's
// sum (a prefix >= Total(), or parent and children rounded differently) the
// last non-zero child is chosen and *remaining set to its whole value, which
// sends the rest of the search to that subtree's last non-zero leaf.
inline int PickChild(const double* group, double* remaining) {
  double cumulative = 0.0;
  double before = 0.0;
  int child = 0;
  for (int k = 0; k < kTreeArity; ++k) {
    cumulative += group[k];
    const bool past = cumulative <= *remaining;
    child += past;
    before = past ? cumulative : before;
  }
  if (child < kTreeArity) {
    *remaining -= before;
    return child;
  }
  child = kTreeArity - 1;
  while (child > 0 && group[child] == 0.0) --child;
  *remaining = group[child];
  return child;
}

// Writes one leaf and recomputes its ancestors from their children.
template <typename Combine>
void SetLeaf(const internal::TreeLayout& layout, double* nodes, int64_t index, double value,
             Combine combine) {
  nodes[index] = value;
  int64_t node = index;
  for (int level = 0; level < layout.root_level(); ++level) {
    node /= kTreeArity;
    nodes[layout.offset(level + 1) + node] =
        combine(nodes + layout.offset(level) + node * kTreeArity);
  }
}

// Writes the leaves, then recomputes their ancestors one level at a time.
// Within a level the recomputations only read the level below, which the
// previous pass finished, so they are independent and their cache misses
// overlap; a leaf-to-root walk per item would chain every update behind the
// previous one through the shared upper levels. Duplicate indices are fine:
// the last value wins and the parents are recomputed from it.
template <typename Combine>
void SetLeaves(const internal::TreeLayout& layout, double* nodes, const int64_t* indices,
               const double* values, int n, Combine combine) {
  int64_t node[kSetChunk];
  for (int start = 0; start < n; start += kSetChunk) {
    const int m = std::min(kSetChunk, n - start);
    for (int j = 0; j < m; ++j) {
      node[j] = indices[start + j];
      nodes[node[j]] = values[start + j];
    }
    for (int level = 0; level < layout.root_level(); ++level) {
      const double* children = nodes + layout.offset(level);
      double* parents = nodes + layout.offset(level + 1);
      for (int j = 0; j < m; ++j) {
        const int64_t parent = node[j] / kTreeArity;
        parents[parent] = combine(children + parent * kTreeArity);
        node[j] = parent;
      }
    }
  }
}

}  // namespace

SumTree::SumTree(int64_t capacity)
    : layout_(capacity), nodes_(static_cast<size_t>(layout_.total_nodes()), 0.0) {}

void SumTree::Set(int64_t index, double value) {
  FERRY_CHECK(index >= 0 && index < layout_.capacity());
  FERRY_CHECK(std::isfinite(value) && value >= 0.0);
  SetLeaf(layout_, nodes_.data(), index, value, [](const double* v) { return Sum8(v); });
}

void SumTree::SetBatch(const int64_t* indices, const double* values, int n) {
  for (int j = 0; j < n; ++j) {
    FERRY_CHECK(indices[j] >= 0 && indices[j] < layout_.capacity());
    FERRY_CHECK(std::isfinite(values[j]) && values[j] >= 0.0);
  }
  SetLeaves(layout_, nodes_.data(), indices, values, n, [](const double* v) { return Sum8(v); });
}

int64_t SumTree::Find(double prefix) const {
  int64_t index;
  FindBatch(&prefix, &index, 1);
  return index;
}

void SumTree::FindBatch(const double* prefixes, int64_t* out, int n) const {
  const double* nodes = nodes_.data();
  int64_t node[kFindChunk];
  double remaining[kFindChunk];
  for (int start = 0; start < n; start += kFindChunk) {
    const int m = std::min(kFindChunk, n - start);
    for (int j = 0; j < m; ++j) {
      const double prefix = prefixes[start + j];
      remaining[j] = prefix >= 0.0 ? prefix : 0.0;  // NaN becomes 0 too.
      node[j] = 0;
    }
    // node[j] is a node of level + 1; its children are level's group node[j].
    for (int level = layout_.root_level() - 1; level >= 0; --level) {
      const double* level_nodes = nodes + layout_.offset(level);
      for (int j = 0; j < m; ++j) {
        const double* group = level_nodes + node[j] * kTreeArity;
        node[j] = node[j] * kTreeArity + PickChild(group, &remaining[j]);
        if (level > 0) {
          __builtin_prefetch(nodes + layout_.offset(level - 1) + node[j] * kTreeArity);
        }
      }
    }
    std::copy(node, node + m, out + start);
  }
}

MinTree::MinTree(int64_t capacity)
    : layout_(capacity),
      nodes_(static_cast<size_t>(layout_.total_nodes()), std::numeric_limits<double>::infinity()) {}

void MinTree::Set(int64_t index, double value) {
  FERRY_CHECK(index >= 0 && index < layout_.capacity());
  FERRY_CHECK(!std::isnan(value));
  SetLeaf(layout_, nodes_.data(), index, value, [](const double* v) { return Min8(v); });
}

void MinTree::SetBatch(const int64_t* indices, const double* values, int n) {
  for (int j = 0; j < n; ++j) {
    FERRY_CHECK(indices[j] >= 0 && indices[j] < layout_.capacity());
    FERRY_CHECK(!std::isnan(values[j]));
  }
  SetLeaves(layout_, nodes_.data(), indices, values, n, [](const double* v) { return Min8(v); });
}

}  // namespace ferry::replay
