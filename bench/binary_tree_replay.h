// bench/replay_bench's reference points for replay::Table (see BinaryTreeReplay).
#ifndef FERRY_BENCH_BINARY_TREE_REPLAY_H_
#define FERRY_BENCH_BINARY_TREE_REPLAY_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/experience.h"
#include "replay/table.h"

namespace ferry::bench {

// The textbook prioritized replay that Table is measured against: binary sum
// and min trees in heap order (node i has children 2i and 2i + 1), one
// root-to-leaf walk per sampled item, one leaf-to-root walk per inserted or
// updated item, rows copied one at a time.
//
// The *Floor methods do only what no table can avoid: copy the rows, check or
// bump generations, count draws and read or write each item's leaves, with no
// tree walk and no pow; their rate is a ceiling, not a competitor. They leave
// inner tree nodes stale, which changes no cost. Not thread-safe.
class BinaryTreeReplay {
 public:
  BinaryTreeReplay(const core::Schema& schema, int64_t capacity, double alpha)
      : capacity_(capacity),
        alpha_(alpha),
        generations_(static_cast<size_t>(capacity), 0),
        times_sampled_(static_cast<size_t>(capacity), 0) {
    while (leaves_ < capacity) leaves_ *= 2;
    sum_.assign(2 * leaves_, 0.0);
    min_.assign(2 * leaves_, std::numeric_limits<double>::infinity());
    for (const auto& c : schema.columns) {
      row_bytes_.push_back(c.row_bytes());
      columns_.emplace_back(static_cast<size_t>(capacity) * c.row_bytes());
    }
  }

  void Insert(int count, const std::vector<const uint8_t*>& columns, const float* priorities) {
    for (int r = 0; r < count; ++r) {
      for (size_t c = 0; c < columns_.size(); ++c) {
        std::memcpy(&columns_[c][next_slot_ * row_bytes_[c]], columns[c] + r * row_bytes_[c],
                    row_bytes_[c]);
      }
      ++generations_[next_slot_];
      times_sampled_[next_slot_] = 0;
      SetMass(next_slot_, Mass(priorities[r]));
      Advance(1);
    }
  }

  void Sample(int count, std::mt19937_64& rng, replay::SampleBatch* out) {
    Resize(count, out);
    const double stratum = sum_[1] / count;
    for (int i = 0; i < count; ++i) {
      double prefix = (i + Uniform(rng)) * stratum;
      int64_t node = 1;
      while (node < leaves_) {
        node *= 2;
        if (prefix >= sum_[node]) {
          prefix -= sum_[node];
          ++node;
        }
      }
      const int64_t slot = std::min(node - leaves_, size_ - 1);
      Draw(i, slot, out);
      for (size_t c = 0; c < columns_.size(); ++c) {
        std::memcpy(&out->columns[c][i * row_bytes_[c]], &columns_[c][slot * row_bytes_[c]],
                    row_bytes_[c]);
      }
    }
  }

  int UpdatePriorities(const replay::Key* keys, const float* priorities, int count) {
    int applied = 0;
    for (int i = 0; i < count; ++i) {
      if (!Current(keys[i]) || !std::isfinite(priorities[i]) || priorities[i] < 0) continue;
      SetMass(keys[i].slot, Mass(priorities[i]));
      ++applied;
    }
    return applied;
  }

  void InsertFloor(int count, const std::vector<const uint8_t*>& columns, const float* priorities) {
    for (int done = 0; done < count;) {
      const int run = static_cast<int>(std::min<int64_t>(count - done, capacity_ - next_slot_));
      for (size_t c = 0; c < columns_.size(); ++c) {
        std::memcpy(&columns_[c][next_slot_ * row_bytes_[c]], columns[c] + done * row_bytes_[c],
                    run * row_bytes_[c]);
      }
      for (int r = 0; r < run; ++r) {
        ++generations_[next_slot_ + r];
        times_sampled_[next_slot_ + r] = 0;
        sum_[leaves_ + next_slot_ + r] = priorities[done + r];
        min_[leaves_ + next_slot_ + r] = priorities[done + r];
      }
      Advance(run);
      done += run;
    }
  }

  void SampleFloor(int count, std::mt19937_64& rng, replay::SampleBatch* out) {
    Resize(count, out);
    slots_.resize(count);
    for (int i = 0; i < count; ++i) {
      slots_[i] = static_cast<int64_t>(Uniform(rng) * static_cast<double>(size_));
      Draw(i, slots_[i], out);
    }
    for (size_t c = 0; c < columns_.size(); ++c) {
      switch (row_bytes_[c]) {
        case 4:
          Gather<4>(c, count, out);
          break;
        case 8:
          Gather<8>(c, count, out);
          break;
        case 16:
          Gather<16>(c, count, out);
          break;
        default:
          for (int i = 0; i < count; ++i) {
            std::memcpy(&out->columns[c][i * row_bytes_[c]],
                        &columns_[c][slots_[i] * row_bytes_[c]], row_bytes_[c]);
          }
      }
    }
  }

  int UpdateFloor(const replay::Key* keys, const float* priorities, int count) {
    int applied = 0;
    for (int i = 0; i < count; ++i) {
      if (!Current(keys[i])) continue;
      sum_[leaves_ + keys[i].slot] = priorities[i];
      min_[leaves_ + keys[i].slot] = priorities[i];
      ++applied;
    }
    return applied;
  }

 private:
  static double Uniform(std::mt19937_64& rng) {
    return static_cast<double>(rng() >> 11) * 0x1.0p-53;
  }
  double Mass(float priority) const {
    return std::pow(std::max(static_cast<double>(priority), 1e-8), alpha_);
  }
  bool Current(const replay::Key& key) const {
    return key.slot < size_ && generations_[key.slot] == key.generation;
  }
  void Advance(int64_t rows) {
    next_slot_ = (next_slot_ + rows) % capacity_;
    size_ = std::min(size_ + rows, capacity_);
  }
  void SetMass(int64_t slot, double mass) {
    int64_t node = leaves_ + slot;
    sum_[node] = mass;
    min_[node] = mass;
    for (node /= 2; node >= 1; node /= 2) {
      sum_[node] = sum_[2 * node] + sum_[2 * node + 1];
      min_[node] = std::min(min_[2 * node], min_[2 * node + 1]);
    }
  }
  void Resize(int count, replay::SampleBatch* out) const {
    out->keys.resize(count);
    out->masses.resize(count);
    out->times_sampled.resize(count);
    out->columns.resize(columns_.size());
    for (size_t c = 0; c < columns_.size(); ++c) out->columns[c].resize(count * row_bytes_[c]);
  }
  // Column c of the rows at slots_, one column at a time with a compile-time
  // row size, so the copies are plain loads and stores whose misses overlap.
  template <size_t kRowBytes>
  void Gather(size_t c, int count, replay::SampleBatch* out) const {
    const uint8_t* src = columns_[c].data();
    uint8_t* dst = out->columns[c].data();
    for (int i = 0; i < count; ++i) {
      std::memcpy(dst + i * kRowBytes, src + slots_[i] * kRowBytes, kRowBytes);
    }
  }
  void Draw(int i, int64_t slot, replay::SampleBatch* out) {
    out->keys[i] = replay::Key{static_cast<uint32_t>(slot), generations_[slot]};
    out->masses[i] = sum_[leaves_ + slot];
    out->times_sampled[i] = ++times_sampled_[slot];
  }

  int64_t capacity_;
  double alpha_;
  int64_t leaves_ = 1;
  int64_t size_ = 0;
  int64_t next_slot_ = 0;
  std::vector<size_t> row_bytes_;
  std::vector<std::vector<uint8_t>> columns_;
  std::vector<uint32_t> generations_;
  std::vector<uint32_t> times_sampled_;
  std::vector<double> sum_;
  std::vector<double> min_;
  std::vector<int64_t> slots_;
};

}  // namespace ferry::bench

#endif  // FERRY_BENCH_BINARY_TREE_REPLAY_H_
