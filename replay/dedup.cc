#include "replay/dedup.h"

namespace ferry::replay {

bool Deduplicator::Accept(uint32_t actor, uint64_t epoch, uint64_t sequence) {
  ActorState& s = actors_[actor];
  if (epoch < s.epoch) return false;  // A late batch of a process that has since restarted.
  if (epoch > s.epoch) s = ActorState{epoch, 0, {}};
  if (sequence < s.next_unseen || s.above.count(sequence)) return false;
  s.above.insert(sequence);
  while (!s.above.empty() && *s.above.begin() == s.next_unseen) {
    s.above.erase(s.above.begin());
    ++s.next_unseen;
  }
  return true;
}

}  // namespace ferry::replay
