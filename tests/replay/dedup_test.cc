#include "replay/dedup.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace ferry::replay {
namespace {

TEST_CASE("Deduplicator stores each (actor, sequence) once") {
  Deduplicator dedup;
  CHECK(dedup.Accept(/*actor=*/1, /*epoch=*/0, /*sequence=*/0));
  CHECK_FALSE(dedup.Accept(1, 0, 0));
  CHECK(dedup.Accept(1, 0, 1));
  CHECK_FALSE(dedup.Accept(1, 0, 1));
  CHECK_FALSE(dedup.Accept(1, 0, 0));
  // Actors number their batches independently.
  CHECK(dedup.Accept(2, 0, 0));
  CHECK(dedup.Accept(2, 0, 1));
  CHECK_FALSE(dedup.Accept(2, 0, 1));
}

TEST_CASE("Deduplicator accepts out-of-order batches within the window exactly once") {
  Deduplicator dedup;
  CHECK(dedup.Accept(7, 0, 2));
  CHECK(dedup.Accept(7, 0, 0));
  CHECK_FALSE(dedup.Accept(7, 0, 2));
  CHECK(dedup.Accept(7, 0, 1));
  for (uint64_t s = 0; s < 3; ++s) CHECK_FALSE(dedup.Accept(7, 0, s));
  CHECK(dedup.Accept(7, 0, 3));

  // A long stream, shuffled inside windows of 8 and then re-sent whole: each
  // sequence goes in once, every re-send is dropped.
  std::mt19937_64 rng(21);
  std::vector<uint64_t> order(2000);
  std::iota(order.begin(), order.end(), 0);
  for (size_t w = 0; w < order.size(); w += 8) {
    std::shuffle(order.begin() + w, order.begin() + w + 8, rng);
  }
  int accepted = 0;
  for (uint64_t s : order) accepted += dedup.Accept(8, 0, s);
  CHECK(accepted == 2000);
  for (uint64_t s : order) CHECK_FALSE(dedup.Accept(8, 0, s));
}

TEST_CASE("Deduplicator starts afresh when an actor comes back with a new epoch") {
  Deduplicator dedup;
  for (uint64_t s = 0; s < 5; ++s) CHECK(dedup.Accept(3, /*epoch=*/100, s));
  // The restarted process numbers its batches from 0 again.
  CHECK(dedup.Accept(3, /*epoch=*/101, 0));
  CHECK_FALSE(dedup.Accept(3, 101, 0));
  CHECK(dedup.Accept(3, 101, 1));
  CHECK(dedup.Accept(3, 101, 4));
  CHECK_FALSE(dedup.Accept(3, 101, 4));
}

TEST_CASE("Deduplicator refuses a late batch from an actor's earlier process") {
  Deduplicator dedup;
  CHECK(dedup.Accept(3, /*epoch=*/100, 0));
  CHECK(dedup.Accept(3, /*epoch=*/101, 0));
  // The old process's re-send arrives late: it must not reset the new numbering.
  CHECK_FALSE(dedup.Accept(3, /*epoch=*/100, 7));
  CHECK_FALSE(dedup.Accept(3, 101, 0));
  CHECK(dedup.Accept(3, 101, 1));
}

TEST_CASE("Deduplicator counts stored transitions per actor across epochs") {
  Deduplicator dedup;
  dedup.CountInserted(1, 10);
  dedup.CountInserted(2, 5);
  dedup.CountInserted(1, 7);
  REQUIRE(dedup.inserted_per_actor().size() == 2);
  CHECK(dedup.inserted_per_actor().at(1) == 17);
  CHECK(dedup.inserted_per_actor().at(2) == 5);
}

}  // namespace
}  // namespace ferry::replay
