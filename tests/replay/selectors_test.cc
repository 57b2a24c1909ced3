#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "core/experience.h"
#include "replay/selectors/fifo.h"
#include "replay/selectors/interface.h"
#include "replay/selectors/lifo.h"
#include "replay/selectors/prioritized.h"
#include "replay/selectors/uniform.h"
#include "replay/table.h"

namespace ferry::replay {
namespace {

constexpr SelectorKind kAllKinds[] = {SelectorKind::kPrioritized, SelectorKind::kUniform,
                                      SelectorKind::kFifo, SelectorKind::kLifo};

std::unique_ptr<ItemSelector> Make(SelectorKind kind, int64_t capacity, double alpha) {
  if (kind == SelectorKind::kPrioritized) {
    return std::make_unique<PrioritizedSelector>(capacity, alpha);
  }
  if (kind == SelectorKind::kUniform) return std::make_unique<UniformSelector>(capacity);
  if (kind == SelectorKind::kFifo) return std::make_unique<FifoSelector>(capacity);
  return std::make_unique<LifoSelector>(capacity);
}

std::vector<int64_t> Range(int64_t first, int64_t count) {
  std::vector<int64_t> slots;
  for (int64_t i = 0; i < count; ++i) slots.push_back(first + i);
  return slots;
}

void InsertSlots(ItemSelector& selector, const std::vector<int64_t>& slots,
                 const std::vector<float>& priorities) {
  selector.Insert(slots.data(), priorities.data(), static_cast<int>(slots.size()));
}

std::vector<int64_t> SampleSlots(ItemSelector& selector, int count, std::mt19937_64& rng) {
  std::vector<int64_t> slots(count);
  std::vector<double> masses(count);
  selector.Sample(count, rng, slots.data(), masses.data());
  for (int i = 0; i < count; ++i) REQUIRE(masses[i] == selector.Mass(slots[i]));
  return slots;
}

// Upper 99.9% point of chi-square with `dof` degrees of freedom (Wilson-Hilferty).
double ChiSquareCritical999(int dof) {
  constexpr double kZ999 = 3.090232306167813;
  const double h = 2.0 / (9.0 * dof);
  return dof * std::pow(1.0 - h + kZ999 * std::sqrt(h), 3);
}

double ChiSquare(const std::vector<int64_t>& observed, const std::vector<double>& probabilities,
                 int64_t draws) {
  double statistic = 0.0;
  for (size_t i = 0; i < observed.size(); ++i) {
    const double expected = probabilities[i] * draws;
    statistic += (observed[i] - expected) * (observed[i] - expected) / expected;
  }
  return statistic;
}

TEST_CASE("Selector kinds parse from and print as their config names") {
  for (SelectorKind kind : kAllKinds) {
    const Result<SelectorKind> parsed = ParseSelectorKind(SelectorKindName(kind));
    REQUIRE(parsed.ok());
    CHECK(*parsed == kind);
  }
  CHECK(std::string(SelectorKindName(SelectorKind::kFifo)) == "fifo");
  const Result<SelectorKind> bad = ParseSelectorKind("Uniform");
  REQUIRE(!bad.ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message().find("replay.selector") != std::string::npos);
}

TEST_CASE("Uniform draws ignore priorities (chi-square)") {
  constexpr int kItems = 50;
  UniformSelector selector(64);
  std::vector<float> priorities;
  for (int i = 0; i < kItems; ++i) priorities.push_back(0.05f + 0.4f * static_cast<float>(i % 7));
  InsertSlots(selector, Range(0, kItems), priorities);
  std::mt19937_64 rng(2024);
  std::vector<int64_t> counts(kItems, 0);
  int64_t draws = 0;
  bool repeated_within_a_call = false;
  for (int call = 0; call < 4000; ++call) {
    const std::vector<int64_t> slots = SampleSlots(selector, kItems, rng);
    repeated_within_a_call |= std::set<int64_t>(slots.begin(), slots.end()).size() < slots.size();
    for (int64_t slot : slots) {
      REQUIRE(slot >= 0);
      REQUIRE(slot < kItems);
      ++counts[slot];
    }
    draws += kItems;
  }
  const double critical = ChiSquareCritical999(kItems - 1);
  CHECK(ChiSquare(counts, std::vector<double>(kItems, 1.0 / kItems), draws) < critical);
  // The test has power: the priorities, had they been used, are far from uniform.
  std::vector<double> proportional;
  double total = 0.0;
  for (float p : priorities) total += p;
  for (float p : priorities) proportional.push_back(p / total);
  CHECK(ChiSquare(counts, proportional, draws) > critical);
  // With replacement: unlike stratified draws, a call of size() draws may repeat an item.
  CHECK(repeated_within_a_call);
}

TEST_CASE("FIFO returns the oldest items in order, LIFO the newest") {
  FifoSelector fifo(8);
  LifoSelector lifo(8);
  const std::vector<float> ones(8, 1.0f);
  std::mt19937_64 rng(3);
  InsertSlots(fifo, Range(0, 5), ones);
  InsertSlots(lifo, Range(0, 5), ones);
  CHECK(SampleSlots(fifo, 3, rng) == std::vector<int64_t>{0, 1, 2});
  CHECK(SampleSlots(lifo, 3, rng) == std::vector<int64_t>{4, 3, 2});
  // More draws than items start over at the far end.
  CHECK(SampleSlots(fifo, 7, rng) == std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1});
  CHECK(SampleSlots(lifo, 7, rng) == std::vector<int64_t>{4, 3, 2, 1, 0, 4, 3});

  // Fill the ring and wrap: slots 0..2 are replaced and become the newest.
  InsertSlots(fifo, Range(5, 3), ones);
  InsertSlots(lifo, Range(5, 3), ones);
  InsertSlots(fifo, Range(0, 3), ones);
  InsertSlots(lifo, Range(0, 3), ones);
  CHECK(SampleSlots(fifo, 8, rng) == std::vector<int64_t>{3, 4, 5, 6, 7, 0, 1, 2});
  CHECK(SampleSlots(lifo, 8, rng) == std::vector<int64_t>{2, 1, 0, 7, 6, 5, 4, 3});
  // Replacing the oldest and a middle item, in that order.
  InsertSlots(fifo, {3, 6}, {1.0f, 1.0f});
  InsertSlots(lifo, {3, 6}, {1.0f, 1.0f});
  CHECK(SampleSlots(fifo, 8, rng) == std::vector<int64_t>{4, 5, 7, 0, 1, 2, 3, 6});
  CHECK(SampleSlots(lifo, 8, rng) == std::vector<int64_t>{6, 3, 2, 1, 0, 7, 5, 4});
  CHECK(fifo.TotalMass() == 8.0);
  CHECK(lifo.TotalMass() == 8.0);
}

TEST_CASE("Masses, totals and minima per selector kind") {
  constexpr double kAlpha = 0.5;
  const std::vector<float> priorities = {4.0f, 9.0f, 0.25f};
  for (SelectorKind kind : kAllKinds) {
    CAPTURE(SelectorKindName(kind));
    const bool prioritized = kind == SelectorKind::kPrioritized;
    std::unique_ptr<ItemSelector> selector = Make(kind, 6, kAlpha);
    CHECK(selector->TotalMass() == 0.0);
    CHECK(selector->MinMass() == 0.0);
    CHECK(selector->ResidentBytes() > 0);

    InsertSlots(*selector, Range(0, 3), priorities);
    for (int64_t slot = 0; slot < 3; ++slot) {
      CHECK(selector->Mass(slot) ==
            doctest::Approx(prioritized ? std::sqrt(priorities[slot]) : 1.0));
    }
    CHECK(selector->Mass(3) == 0.0);
    CHECK(selector->TotalMass() == doctest::Approx(prioritized ? 2.0 + 3.0 + 0.5 : 3.0));
    CHECK(selector->MinMass() == doctest::Approx(prioritized ? 0.5 : 1.0));

    const int64_t slot = 2;
    const float priority = 16.0f;
    selector->Update(&slot, &priority, 1);
    CHECK(selector->Mass(2) == doctest::Approx(prioritized ? 4.0 : 1.0));
    CHECK(selector->TotalMass() == doctest::Approx(prioritized ? 9.0 : 3.0));
    CHECK(selector->MinMass() == doctest::Approx(prioritized ? 2.0 : 1.0));
  }
}

TEST_CASE("Selector Restore replaces the whole state") {
  for (SelectorKind kind : kAllKinds) {
    CAPTURE(SelectorKindName(kind));
    std::unique_ptr<ItemSelector> selector = Make(kind, 6, 1.0);
    InsertSlots(*selector, Range(0, 6), std::vector<float>(6, 7.0f));
    const std::vector<int64_t> slots = {4, 5, 0, 1};  // Oldest first.
    const std::vector<double> masses = {2.0, 0.5, 1.0, 3.0};
    selector->Restore(slots.data(), masses.data(), 4);
    const bool prioritized = kind == SelectorKind::kPrioritized;
    for (size_t i = 0; i < slots.size(); ++i) {
      CHECK(selector->Mass(slots[i]) == (prioritized ? masses[i] : 1.0));
    }
    CHECK(selector->Mass(2) == 0.0);
    CHECK(selector->Mass(3) == 0.0);
    CHECK(selector->TotalMass() == (prioritized ? 6.5 : 4.0));
    CHECK(selector->MinMass() == (prioritized ? 0.5 : 1.0));
    std::mt19937_64 rng(5);
    if (kind == SelectorKind::kFifo) CHECK(SampleSlots(*selector, 4, rng) == slots);
    if (kind == SelectorKind::kLifo) {
      CHECK(SampleSlots(*selector, 4, rng) == std::vector<int64_t>{1, 0, 5, 4});
    }
    for (int64_t slot : SampleSlots(*selector, 64, rng)) CHECK(selector->Mass(slot) > 0.0);
  }
}

// Rows of a one-feature transition schema whose policy_version column is the row id.
struct Rows {
  std::vector<std::vector<uint8_t>> columns;

  Rows(const core::Schema& schema, int64_t first_id, int count) {
    for (const auto& column : schema.columns) columns.emplace_back(count * column.row_bytes(), 0);
    for (int i = 0; i < count; ++i) {
      const int64_t id = first_id + i;
      std::memcpy(columns[core::kPolicyVersion].data() + i * sizeof(int64_t), &id, sizeof(id));
    }
  }
  std::vector<const uint8_t*> Pointers() const {
    std::vector<const uint8_t*> pointers;
    for (const auto& column : columns) pointers.push_back(column.data());
    return pointers;
  }
};

int64_t SampledId(const SampleBatch& batch, int i) {
  int64_t id;
  std::memcpy(&id, batch.columns[core::kPolicyVersion].data() + i * sizeof(int64_t), sizeof(id));
  return id;
}

// A table of capacity 8 holding ids 5..12 after wrapping: slots 0..4 hold ids
// 8..12, slots 5..7 ids 5..7; id i had priority i + 1.
Table WrappedTable(SelectorKind kind) {
  const core::Schema schema = core::TransitionSchema(1, true, 1);
  Table table(schema, 8, 0.6, kind);
  for (int64_t first : {0, 5, 10}) {
    const int count = first == 10 ? 3 : 5;
    std::vector<float> priorities;
    for (int64_t id = first; id < first + count; ++id) priorities.push_back(id + 1.0f);
    table.Insert(count, Rows(schema, first, count).Pointers(), priorities.data());
  }
  return table;
}

TEST_CASE("A table answers Sample and UpdatePriorities with every selector") {
  for (SelectorKind kind : kAllKinds) {
    CAPTURE(SelectorKindName(kind));
    Table table = WrappedTable(kind);
    CHECK(table.selector() == kind);
    CHECK(table.size() == 8);
    CHECK(table.next_slot() == 5);
    std::mt19937_64 rng(11);
    SampleBatch batch;
    table.Sample(6, rng, &batch);
    REQUIRE(batch.keys.size() == 6);
    std::vector<int64_t> ids;
    for (int i = 0; i < 6; ++i) {
      const Key key = batch.keys[i];
      CHECK(key.generation == table.generation(key.slot));
      CHECK(batch.masses[i] == table.mass(key.slot));
      CHECK(batch.times_sampled[i] >= 1);
      const int64_t id = SampledId(batch, i);
      CHECK(id == (key.slot < 5 ? key.slot + 8 : key.slot));
      ids.push_back(id);
    }
    if (kind == SelectorKind::kFifo) CHECK(ids == std::vector<int64_t>{5, 6, 7, 8, 9, 10});
    if (kind == SelectorKind::kLifo) CHECK(ids == std::vector<int64_t>{12, 11, 10, 9, 8, 7});

    // Applied and stale updates count the same whatever the selector.
    const std::vector<Key> keys = {{0, 2}, {0, 1}, {7, 1}, {9, 1}, {6, 1}};
    const std::vector<float> priorities = {50.0f, 50.0f, -1.0f, 2.0f, 0.0f};
    const double total_before = table.total_mass();
    CHECK(table.UpdatePriorities(keys.data(), priorities.data(), 5) == 2);
    if (kind == SelectorKind::kPrioritized) {
      CHECK(table.mass(0) == doctest::Approx(std::pow(50.0, 0.6)));
      CHECK(table.total_mass() > total_before);
    } else {
      CHECK(table.mass(0) == 1.0);
      CHECK(table.total_mass() == 8.0);
      CHECK(table.min_mass() == 1.0);
    }
  }
}

TEST_CASE("Table Restore round trip with every selector") {
  for (SelectorKind kind : kAllKinds) {
    CAPTURE(SelectorKindName(kind));
    Table source = WrappedTable(kind);
    std::vector<double> masses;
    std::vector<uint32_t> generations, times_sampled;
    for (int64_t slot = 0; slot < source.capacity(); ++slot) {
      masses.push_back(source.mass(slot));
      generations.push_back(source.generation(slot));
      times_sampled.push_back(source.times_sampled(slot));
    }
    std::vector<const uint8_t*> columns;
    for (size_t c = 0; c < source.schema().columns.size(); ++c) {
      columns.push_back(source.column_data(static_cast<int>(c)));
    }
    Table restored(source.schema(), source.capacity(), source.alpha(), kind);
    REQUIRE(restored
                .Restore(source.size(), source.next_slot(), columns, generations.data(),
                         times_sampled.data(), masses.data())
                .ok());
    CHECK(restored.size() == source.size());
    CHECK(restored.next_slot() == source.next_slot());
    CHECK(restored.total_mass() == source.total_mass());
    CHECK(restored.min_mass() == source.min_mass());
    for (int64_t slot = 0; slot < source.capacity(); ++slot) {
      CHECK(restored.mass(slot) == source.mass(slot));
      CHECK(restored.generation(slot) == source.generation(slot));
    }
    // The deterministic selectors draw the same keys from equal state and seed.
    std::mt19937_64 source_rng(21), restored_rng(21);
    SampleBatch from_source, from_restored;
    source.Sample(12, source_rng, &from_source);
    restored.Sample(12, restored_rng, &from_restored);
    if (kind != SelectorKind::kUniform) CHECK(from_restored.keys == from_source.keys);
    for (int i = 0; i < 12; ++i) {
      const Key key = from_restored.keys[i];
      CHECK(SampledId(from_restored, i) == (key.slot < 5 ? key.slot + 8 : key.slot));
    }
  }
}

TEST_CASE("Restoring a prioritized snapshot into a uniform table gives mass 1") {
  Table source = WrappedTable(SelectorKind::kPrioritized);
  std::vector<double> masses;
  for (int64_t slot = 0; slot < 8; ++slot) masses.push_back(source.mass(slot));
  const std::vector<uint32_t> generations(8, 1), times_sampled(8, 0);
  std::vector<const uint8_t*> columns;
  for (size_t c = 0; c < source.schema().columns.size(); ++c) {
    columns.push_back(source.column_data(static_cast<int>(c)));
  }
  Table restored(source.schema(), 8, 0.6, SelectorKind::kUniform);
  REQUIRE(restored.Restore(8, 5, columns, generations.data(), times_sampled.data(), masses.data())
              .ok());
  CHECK(restored.total_mass() == 8.0);
  for (int64_t slot = 0; slot < 8; ++slot) CHECK(restored.mass(slot) == 1.0);
}

}  // namespace
}  // namespace ferry::replay
