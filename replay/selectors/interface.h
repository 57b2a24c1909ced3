// Item selectors: which stored items a Table's Sample returns, and each item's
// mass (its unnormalised sampling weight).
//
//   PrioritizedSelector  mass p^alpha, stratified proportional draws  (prioritized.h)
//   UniformSelector      mass 1, uniform draws with replacement       (uniform.h)
//   FifoSelector         mass 1, the oldest items, oldest first       (fifo.h)
//   LifoSelector         mass 1, the newest items, newest first       (lifo.h)
//
// The sharded client splits a global batch across shards in proportion to
// their total masses and computes probabilities and importance weights from
// the masses, so every selector reports them, constant or not.
#ifndef FERRY_REPLAY_SELECTORS_INTERFACE_H_
#define FERRY_REPLAY_SELECTORS_INTERFACE_H_

#include <cstdint>
#include <random>
#include <string>

#include "core/status.h"

namespace ferry::replay {

enum class SelectorKind { kPrioritized, kUniform, kFifo, kLifo };

// The name config key `replay.selector` uses: "prioritized", "uniform", "fifo" or "lifo".
inline const char* SelectorKindName(SelectorKind kind) {
  switch (kind) {
    case SelectorKind::kPrioritized:
      return "prioritized";
    case SelectorKind::kUniform:
      return "uniform";
    case SelectorKind::kFifo:
      return "fifo";
    case SelectorKind::kLifo:
      return "lifo";
  }
  FERRY_CHECK(false);
}

inline Result<SelectorKind> ParseSelectorKind(const std::string& name) {
  for (SelectorKind kind : {SelectorKind::kPrioritized, SelectorKind::kUniform, SelectorKind::kFifo,
                            SelectorKind::kLifo}) {
    if (name == SelectorKindName(kind)) return kind;
  }
  return InvalidArgument("replay.selector: unknown selector '" + name +
                         "'; use prioritized, uniform, fifo or lifo");
}

// Chooses the slots a sample returns from the items stored in a Table's ring.
// Member methods are not called concurrently: the Table that owns a selector
// calls it from its one thread.
//
// Slots lie in [0, capacity). A slot is stored once an Insert names it, and
// stays stored: items leave only by being replaced (an Insert of a stored slot
// evicts its old item, and the new one is the newest). Priorities are raw
// (|TD| + epsilon, as actors and learners send them); selectors that do not
// sample by priority ignore them.
class ItemSelector {
 public:
  virtual ~ItemSelector() = default;

  // slots[0..n) now hold new items, slots[0] the oldest, with raw priorities
  // (any float: a selector maps non-finite and tiny ones to a valid mass).
  virtual void Insert(const int64_t* slots, const float* raw_priorities, int n) = 0;
  // New raw priorities (finite, >= 0) for stored items; a repeated slot takes the last one.
  virtual void Update(const int64_t* slots, const float* raw_priorities, int n) = 0;
  // Replaces the whole state: exactly slots[0..n) are stored, oldest first, and
  // masses[i] is Mass(slots[i]) as saved from a selector of the same kind
  // (snapshots store masses, not priorities). Selectors with constant masses
  // ignore `masses`.
  virtual void Restore(const int64_t* slots, const double* masses, int64_t n) = 0;

  // Writes `count` stored slots and their masses. Requires a stored item.
  virtual void Sample(int count, std::mt19937_64& rng, int64_t* slots, double* masses) = 0;

  virtual double Mass(int64_t slot) const = 0;  // 0 for a slot that is not stored.
  virtual double TotalMass() const = 0;         // Sum of Mass over the stored items.
  virtual double MinMass() const = 0;           // Smallest Mass of a stored item; 0 when none.
  virtual int64_t ResidentBytes() const = 0;
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_SELECTORS_INTERFACE_H_
