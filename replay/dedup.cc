#include "replay/dedup.h"

#include <string>

namespace ferry::replay {

namespace {

// Moves next_unseen past the stored sequences that follow it.
void Advance(std::set<uint64_t>& above, uint64_t& next_unseen) {
  while (!above.empty() && *above.begin() == next_unseen) {
    above.erase(above.begin());
    ++next_unseen;
  }
}

}  // namespace

bool Deduplicator::Accept(uint32_t actor, uint64_t epoch, uint64_t sequence) {
  ActorState& s = actors_[actor];
  if (epoch < s.epoch) return false;  // A late batch of a process that has since restarted.
  if (epoch > s.epoch) s = ActorState{epoch, 0, {}};
  if (sequence < s.next_unseen || s.above.count(sequence)) return false;
  s.above.insert(sequence);
  Advance(s.above, s.next_unseen);
  if (s.above.size() > kMaxSeenAhead) {
    s.next_unseen = *s.above.begin();
    Advance(s.above, s.next_unseen);
  }
  return true;
}

std::map<uint32_t, Deduplicator::Watermark> Deduplicator::Watermarks() const {
  std::map<uint32_t, Watermark> out;
  for (const auto& [actor, state] : actors_) out[actor] = Watermark{state.epoch, state.next_unseen};
  return out;
}

std::vector<Deduplicator::ActorRecord> Deduplicator::Export() const {
  std::map<uint32_t, ActorRecord> records;
  for (const auto& [actor, state] : actors_) {
    ActorRecord& r = records[actor];
    r.actor = actor;
    r.epoch = state.epoch;
    r.next_unseen = state.next_unseen;
    r.above.assign(state.above.begin(), state.above.end());
  }
  for (const auto& [actor, count] : inserted_) {
    records[actor].actor = actor;
    records[actor].inserted = count;
  }
  std::vector<ActorRecord> out;
  for (auto& [actor, record] : records) out.push_back(std::move(record));
  return out;
}

Status Deduplicator::Import(const std::vector<ActorRecord>& records) {
  std::map<uint32_t, ActorState> actors;
  std::map<uint32_t, int64_t> inserted;
  for (const ActorRecord& r : records) {
    const std::string where = "actor " + std::to_string(r.actor);
    if (actors.count(r.actor)) return InvalidArgument(where + " appears twice");
    if (r.inserted < 0) return InvalidArgument(where + ": negative inserted count");
    ActorState& s = actors[r.actor];
    s.epoch = r.epoch;
    s.next_unseen = r.next_unseen;
    uint64_t previous = r.next_unseen;
    for (uint64_t sequence : r.above) {
      if (sequence <= previous) {
        return InvalidArgument(where + ": sequences above " + std::to_string(r.next_unseen) +
                               " are not ascending and above it");
      }
      previous = sequence;
    }
    s.above.insert(r.above.begin(), r.above.end());
    if (r.inserted > 0) inserted[r.actor] = r.inserted;
  }
  actors_ = std::move(actors);
  inserted_ = std::move(inserted);
  return Status::Ok();
}

}  // namespace ferry::replay
