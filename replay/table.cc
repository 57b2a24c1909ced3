#include "replay/table.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "core/status.h"

namespace ferry::replay {

namespace {

// Floor for stored priorities (table.h states it), so no item becomes unsampleable.
constexpr double kMinPriority = 1e-8;
// p^alpha is kept inside [kMinMass, kMaxMass] whatever alpha is, so every
// stored item stays sampleable and a sum over 2^32 items stays finite.
constexpr double kMinMass = 1e-300;
constexpr double kMaxMass = 1e290;
// How far ahead UpdatePriorities prefetches the generations it will check.
constexpr int kPrefetchAhead = 16;

// Copies rows `slots` of a column into consecutive rows of `dst`. One column
// at a time, with the common CartPole/Atari row sizes as compile-time
// constants, the copies are plain loads and stores whose cache misses overlap.
template <size_t kRowBytes>
void GatherFixed(const uint8_t* src, const int64_t* slots, int count, uint8_t* dst) {
  for (int i = 0; i < count; ++i) {
    std::memcpy(dst + i * kRowBytes, src + slots[i] * kRowBytes, kRowBytes);
  }
}

void GatherRows(const uint8_t* src, size_t row_bytes, const int64_t* slots, int count,
                uint8_t* dst) {
  switch (row_bytes) {
    case 4:
      return GatherFixed<4>(src, slots, count, dst);
    case 8:
      return GatherFixed<8>(src, slots, count, dst);
    case 16:
      return GatherFixed<16>(src, slots, count, dst);
    default:
      for (int i = 0; i < count; ++i) {
        std::memcpy(dst + i * row_bytes, src + slots[i] * row_bytes, row_bytes);
      }
  }
}

int64_t CheckedCapacity(int64_t capacity) {
  // Slots travel as uint32 in a Key.
  FERRY_CHECK(capacity >= 1 && capacity <= int64_t{std::numeric_limits<uint32_t>::max()});
  return capacity;
}

double Mass(float priority, double alpha) {
  const double p = std::isfinite(priority) && priority > kMinPriority ? priority : kMinPriority;
  return std::clamp(std::pow(p, alpha), kMinMass, kMaxMass);
}

}  // namespace

Table::Table(core::Schema schema, int64_t capacity, double alpha)
    : schema_(std::move(schema)),
      capacity_(CheckedCapacity(capacity)),
      alpha_(alpha),
      generations_(static_cast<size_t>(capacity_), 0),
      times_sampled_(static_cast<size_t>(capacity_), 0),
      sum_tree_(capacity_),
      min_tree_(capacity_) {
  FERRY_CHECK(std::isfinite(alpha) && alpha >= 0.0);
  for (const auto& column : schema_.columns) {
    row_bytes_.push_back(column.row_bytes());
    columns_.emplace_back(static_cast<size_t>(capacity_) * column.row_bytes());
  }
}

void Table::Insert(int count, const std::vector<const uint8_t*>& columns, const float* priorities) {
  FERRY_CHECK(count >= 0 && columns.size() == columns_.size());
  int done = 0;
  while (done < count) {
    // Rows up to the end of the ring go in one copy per column.
    const int64_t run = std::min<int64_t>(count - done, capacity_ - next_slot_);
    for (size_t c = 0; c < columns_.size(); ++c) {
      const size_t row_bytes = row_bytes_[c];
      std::memcpy(columns_[c].data() + next_slot_ * row_bytes, columns[c] + done * row_bytes,
                  run * row_bytes);
    }
    slots_.resize(run);
    masses_.resize(run);
    for (int64_t r = 0; r < run; ++r) {
      const int64_t slot = next_slot_ + r;
      ++generations_[slot];
      times_sampled_[slot] = 0;
      slots_[r] = slot;
      masses_[r] = Mass(priorities[done + r], alpha_);
    }
    sum_tree_.SetBatch(slots_.data(), masses_.data(), static_cast<int>(run));
    min_tree_.SetBatch(slots_.data(), masses_.data(), static_cast<int>(run));
    next_slot_ = (next_slot_ + run) % capacity_;
    size_ = std::min(size_ + run, capacity_);
    done += static_cast<int>(run);
  }
}

void Table::Sample(int count, std::mt19937_64& rng, SampleBatch* out) {
  FERRY_CHECK(size_ > 0 && count >= 0);
  prefixes_.resize(count);
  slots_.resize(count);
  // Stratum i is [i, i + 1) * stratum; empty slots have zero mass and are never found.
  const double stratum = sum_tree_.Total() / std::max(count, 1);
  for (int i = 0; i < count; ++i) {
    const double uniform = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
    prefixes_[i] = (i + uniform) * stratum;
  }
  sum_tree_.FindBatch(prefixes_.data(), slots_.data(), count);

  out->keys.resize(count);
  out->masses.resize(count);
  out->times_sampled.resize(count);
  out->columns.resize(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    out->columns[c].resize(count * row_bytes_[c]);
  }
  for (int i = 0; i < count; ++i) {
    const int64_t slot = slots_[i];
    out->keys[i] = Key{static_cast<uint32_t>(slot), generations_[slot]};
    out->masses[i] = sum_tree_.Get(slot);
    out->times_sampled[i] = ++times_sampled_[slot];
  }
  for (size_t c = 0; c < columns_.size(); ++c) {
    GatherRows(columns_[c].data(), row_bytes_[c], slots_.data(), count, out->columns[c].data());
  }
}

int Table::UpdatePriorities(const Key* keys, const float* priorities, int count) {
  slots_.clear();
  masses_.clear();
  for (int i = 0; i < count; ++i) {
    if (i + kPrefetchAhead < count && keys[i + kPrefetchAhead].slot < size_) {
      __builtin_prefetch(&generations_[keys[i + kPrefetchAhead].slot]);
    }
    const Key key = keys[i];
    const float priority = priorities[i];
    if (key.slot >= size_ || generations_[key.slot] != key.generation) continue;
    if (!std::isfinite(priority) || priority < 0.0f) continue;
    slots_.push_back(key.slot);
    masses_.push_back(Mass(priority, alpha_));
  }
  const int applied = static_cast<int>(slots_.size());
  sum_tree_.SetBatch(slots_.data(), masses_.data(), applied);
  min_tree_.SetBatch(slots_.data(), masses_.data(), applied);
  return applied;
}

double Table::total_mass() const { return sum_tree_.Total(); }

double Table::min_mass() const { return size_ > 0 ? min_tree_.Min() : 0.0; }

double Table::mass(int64_t slot) const { return sum_tree_.Get(slot); }

int64_t Table::resident_bytes() const {
  int64_t bytes = sum_tree_.bytes() + min_tree_.bytes();
  for (const auto& column : columns_) bytes += static_cast<int64_t>(column.capacity());
  bytes += static_cast<int64_t>((generations_.capacity() + times_sampled_.capacity()) *
                                sizeof(uint32_t));
  bytes += static_cast<int64_t>((prefixes_.capacity() + masses_.capacity()) * sizeof(double) +
                                slots_.capacity() * sizeof(int64_t));
  return bytes;
}

}  // namespace ferry::replay
