#include "replay/table.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/experience.h"

namespace ferry::replay {
namespace {

// CartPole-like rows whose every column is derived from a row id, so a row read
// back anywhere can be checked against the id in its policy_version column.
struct Rows {
  std::vector<float> obs, reward, discount, next_obs;
  std::vector<int32_t> action;
  std::vector<int64_t> policy_version;

  std::vector<const uint8_t*> Columns() const {
    return {reinterpret_cast<const uint8_t*>(obs.data()),
            reinterpret_cast<const uint8_t*>(action.data()),
            reinterpret_cast<const uint8_t*>(reward.data()),
            reinterpret_cast<const uint8_t*>(discount.data()),
            reinterpret_cast<const uint8_t*>(next_obs.data()),
            reinterpret_cast<const uint8_t*>(policy_version.data())};
  }
};

Rows MakeRows(int64_t first_id, int count) {
  Rows rows;
  for (int64_t id = first_id; id < first_id + count; ++id) {
    for (int k = 0; k < 4; ++k) {
      rows.obs.push_back(static_cast<float>(id * 10 + k));
      rows.next_obs.push_back(static_cast<float>(id * 10 + k + 5));
    }
    rows.action.push_back(static_cast<int32_t>(id % 2));
    rows.reward.push_back(static_cast<float>(id) * 0.5f);
    rows.discount.push_back(0.99f);
    rows.policy_version.push_back(id);
  }
  return rows;
}

template <typename T>
T Read(const uint8_t* column, int64_t row, int element = 0, int elements_per_row = 1) {
  T value;
  std::memcpy(&value, column + (row * elements_per_row + element) * sizeof(T), sizeof(T));
  return value;
}

// Checks row `row` of a set of columns (table storage or a sample) holds row id `id`.
void CheckRow(const std::vector<const uint8_t*>& columns, int64_t row, int64_t id) {
  using core::TransitionColumn;
  REQUIRE(Read<int64_t>(columns[TransitionColumn::kPolicyVersion], row) == id);
  for (int k = 0; k < 4; ++k) {
    REQUIRE(Read<float>(columns[TransitionColumn::kObs], row, k, 4) == id * 10 + k);
    REQUIRE(Read<float>(columns[TransitionColumn::kNextObs], row, k, 4) == id * 10 + k + 5);
  }
  REQUIRE(Read<int32_t>(columns[TransitionColumn::kAction], row) == id % 2);
  REQUIRE(Read<float>(columns[TransitionColumn::kReward], row) == static_cast<float>(id) * 0.5f);
  REQUIRE(Read<float>(columns[TransitionColumn::kDiscount], row) == 0.99f);
}

std::vector<const uint8_t*> StoredColumns(const Table& table) {
  std::vector<const uint8_t*> columns;
  for (size_t c = 0; c < table.schema().columns.size(); ++c) {
    columns.push_back(table.column_data(static_cast<int>(c)));
  }
  return columns;
}

std::vector<const uint8_t*> SampledColumns(const SampleBatch& batch) {
  std::vector<const uint8_t*> columns;
  for (const auto& column : batch.columns) columns.push_back(column.data());
  return columns;
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

struct Histogram {
  std::vector<int64_t> counts;
  int64_t draws = 0;
};

// Inserts items 0..n-1 with the given priorities and counts 200k sampled draws.
Histogram SampleHistogram(const std::vector<float>& priorities, double alpha) {
  const int n = static_cast<int>(priorities.size());
  Table table(core::TransitionSchema(4, true, 1), n, alpha);
  const Rows rows = MakeRows(0, n);
  table.Insert(n, rows.Columns(), priorities.data());
  std::mt19937_64 rng(2024);
  SampleBatch batch;
  Histogram histogram{std::vector<int64_t>(n, 0), 0};
  for (int call = 0; call < 3125; ++call) {
    table.Sample(64, rng, &batch);
    for (size_t i = 0; i < batch.keys.size(); ++i) {
      const uint32_t slot = batch.keys[i].slot;
      REQUIRE(slot < static_cast<uint32_t>(n));
      REQUIRE(batch.masses[i] == table.mass(slot));
      ++histogram.counts[slot];
    }
    histogram.draws += static_cast<int64_t>(batch.keys.size());
  }
  return histogram;
}

std::vector<float> VariedPriorities(int n) {
  std::vector<float> priorities;
  for (int i = 0; i < n; ++i) {
    priorities.push_back(0.05f + 0.3f * static_cast<float>(i % 7) + 0.02f * static_cast<float>(i));
  }
  return priorities;
}

TEST_CASE("Sampling follows p^alpha / sum (chi-square)") {
  const std::vector<float> priorities = VariedPriorities(50);
  const double critical = ChiSquareCritical999(49);
  const std::vector<double> uniform(50, 1.0 / 50);

  SUBCASE("alpha = 0.6") {
    std::vector<double> expected;
    double total = 0.0;
    for (float p : priorities) total += std::pow(p, 0.6);
    for (float p : priorities) expected.push_back(std::pow(p, 0.6) / total);
    const Histogram histogram = SampleHistogram(priorities, 0.6);
    CHECK(histogram.draws == 200000);
    CHECK(ChiSquare(histogram.counts, expected, histogram.draws) < critical);
    // The test has power: these priorities are far from uniform.
    CHECK(ChiSquare(histogram.counts, uniform, histogram.draws) > critical);
  }
  SUBCASE("alpha = 0 is uniform") {
    const Histogram histogram = SampleHistogram(priorities, 0.0);
    CHECK(ChiSquare(histogram.counts, uniform, histogram.draws) < critical);
  }
}

TEST_CASE("Sample draws one item per stratum") {
  // Equal masses and count == size: stratum i is exactly item i's interval, so
  // every call returns each item once, in order; independent draws would not.
  Table table(core::TransitionSchema(4, true, 1), 32, 0.6);
  const std::vector<float> priorities(32, 2.0f);
  table.Insert(32, MakeRows(0, 32).Columns(), priorities.data());
  std::mt19937_64 rng(8);
  SampleBatch batch;
  for (int call = 0; call < 20; ++call) {
    table.Sample(32, rng, &batch);
    for (uint32_t i = 0; i < 32; ++i) REQUIRE(batch.keys[i].slot == i);
  }
}

TEST_CASE("Sample fills keys, masses, times_sampled and columns") {
  Table table(core::TransitionSchema(4, true, 1), 16, 0.6);
  const Rows rows = MakeRows(100, 10);
  const std::vector<float> priorities(10, 1.0f);
  table.Insert(10, rows.Columns(), priorities.data());
  std::mt19937_64 rng(1);
  SampleBatch batch;
  std::vector<uint32_t> seen(16, 0);
  for (int call = 0; call < 50; ++call) {
    table.Sample(7, rng, &batch);
    REQUIRE(batch.keys.size() == 7);
    REQUIRE(batch.masses.size() == 7);
    REQUIRE(batch.times_sampled.size() == 7);
    REQUIRE(batch.columns.size() == table.schema().columns.size());
    for (int i = 0; i < 7; ++i) {
      const Key key = batch.keys[i];
      REQUIRE(key.generation == table.generation(key.slot));
      REQUIRE(batch.times_sampled[i] == ++seen[key.slot]);
      CheckRow(SampledColumns(batch), i, 100 + key.slot);
    }
  }
}

TEST_CASE("Sample gathers into caller buffers what it would put in the batch's columns") {
  Table table(core::TransitionSchema(4, true, 1), 64, 0.6);
  const Rows rows = MakeRows(300, 64);
  table.Insert(64, rows.Columns(), VariedPriorities(64).data());
  std::mt19937_64 rng_batch(5), rng_buffers(5);
  SampleBatch into_batch, into_buffers;
  // Each buffer is one byte longer than the rows: a write past them would show.
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<uint8_t*> destinations;
  for (const auto& column : table.schema().columns) {
    buffers.emplace_back(20 * column.row_bytes() + 1, 0xAB);
  }
  for (auto& buffer : buffers) destinations.push_back(buffer.data());
  into_buffers.columns.assign(1, std::vector<uint8_t>(3, 7));
  for (int call = 0; call < 10; ++call) {
    table.Sample(20, rng_batch, &into_batch);
    table.Sample(20, rng_buffers, &into_buffers, destinations);
    REQUIRE(into_buffers.keys == into_batch.keys);
    REQUIRE(into_buffers.masses == into_batch.masses);
    REQUIRE(into_buffers.times_sampled.size() == 20);
    REQUIRE(into_buffers.columns == std::vector<std::vector<uint8_t>>(1, {7, 7, 7}));
    for (size_t c = 0; c < buffers.size(); ++c) {
      REQUIRE(std::memcmp(buffers[c].data(), into_batch.columns[c].data(),
                          into_batch.columns[c].size()) == 0);
      REQUIRE(buffers[c].back() == 0xAB);
    }
    for (int i = 0; i < 20; ++i) {
      CheckRow({buffers[0].data(), buffers[1].data(), buffers[2].data(), buffers[3].data(),
                buffers[4].data(), buffers[5].data()},
               i, 300 + into_batch.keys[i].slot);
    }
  }
}

// Transitions with 84x84 uint8 frames for obs and next_obs, as an Atari run has.
core::Schema ImageSchema() {
  core::Schema schema = core::TransitionSchema(1, true, 1);
  for (int c : {core::kObs, core::kNextObs}) {
    schema.columns[c].dtype = core::DType::kUint8;
    schema.columns[c].shape = {84, 84};
  }
  return schema;
}

// Rows of ImageSchema: frames with a flat background and a bright box that
// moves with the row id, every other column random.
std::vector<std::vector<uint8_t>> ImageRows(const core::Schema& schema, int count,
                                            std::mt19937_64& rng) {
  std::vector<std::vector<uint8_t>> columns;
  for (size_t c = 0; c < schema.columns.size(); ++c) {
    std::vector<uint8_t> bytes(count * schema.columns[c].row_bytes());
    if (schema.columns[c].dtype == core::DType::kUint8) {
      for (int r = 0; r < count; ++r) {
        uint8_t* frame = bytes.data() + r * 84 * 84;
        std::fill(frame, frame + 84 * 84, static_cast<uint8_t>(20 + c));
        const int corner = static_cast<int>(rng() % 70);
        for (int y = corner; y < corner + 14; ++y) {
          for (int x = corner; x < corner + 14; ++x) {
            frame[y * 84 + x] = static_cast<uint8_t>(rng());
          }
        }
      }
    } else {
      for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    }
    columns.push_back(std::move(bytes));
  }
  return columns;
}

TEST_CASE("an LZ4 table stores and samples exactly what an uncompressed one does, in less memory") {
  const core::Schema schema = ImageSchema();
  Table plain(schema, 96, 0.6, SelectorKind::kPrioritized, Compression::kNone);
  Table lz4(schema, 96, 0.6, SelectorKind::kPrioritized, Compression::kLz4);
  CHECK(lz4.compression() == Compression::kLz4);
  std::mt19937_64 rng(12);
  // 160 rows in batches of 32 wrap the ring, so compressed slots are overwritten too.
  for (int batch = 0; batch < 5; ++batch) {
    const auto columns = ImageRows(schema, 32, rng);
    std::vector<const uint8_t*> pointers;
    for (const auto& c : columns) pointers.push_back(c.data());
    const std::vector<float> priorities = VariedPriorities(32);
    plain.Insert(32, pointers, priorities.data());
    lz4.Insert(32, pointers, priorities.data());
  }
  std::mt19937_64 rng_plain(3), rng_lz4(3);
  SampleBatch from_plain, from_lz4;
  for (int call = 0; call < 10; ++call) {
    plain.Sample(40, rng_plain, &from_plain);
    lz4.Sample(40, rng_lz4, &from_lz4);
    REQUIRE(from_lz4.keys == from_plain.keys);
    REQUIRE(from_lz4.columns == from_plain.columns);
  }
  for (size_t c = 0; c < schema.columns.size(); ++c) {
    std::vector<uint8_t> a(96 * schema.columns[c].row_bytes()), b(a.size());
    plain.ReadRows(static_cast<int>(c), 0, 96, a.data());
    lz4.ReadRows(static_cast<int>(c), 0, 96, b.data());
    CHECK(a == b);
  }
  // Two 7 KB frames per row shrink to a few hundred bytes.
  const int64_t frame_bytes = 2 * 96 * 84 * 84;
  CHECK(lz4.resident_bytes() < plain.resident_bytes() - frame_bytes / 2);
}

TEST_CASE("FIFO eviction replaces the oldest rows and bumps generations") {
  constexpr double kAlpha = 0.5;
  Table table(core::TransitionSchema(4, true, 1), 8, kAlpha);
  CHECK(table.size() == 0);
  CHECK(table.total_mass() == 0.0);
  CHECK(table.min_mass() == 0.0);

  // Row id i has priority i + 1.
  auto priorities_for = [](int64_t first_id, int count) {
    std::vector<float> priorities;
    for (int64_t id = first_id; id < first_id + count; ++id) priorities.push_back(id + 1.0f);
    return priorities;
  };
  table.Insert(5, MakeRows(0, 5).Columns(), priorities_for(0, 5).data());
  CHECK(table.size() == 5);
  CHECK(table.next_slot() == 5);
  table.Insert(6, MakeRows(5, 6).Columns(), priorities_for(5, 6).data());
  CHECK(table.size() == 8);
  CHECK(table.next_slot() == 3);

  // Slots 0..2 now hold ids 8..10 (second write), slots 3..7 hold ids 3..7.
  const std::vector<int64_t> id_of_slot = {8, 9, 10, 3, 4, 5, 6, 7};
  double total = 0.0;
  for (int64_t slot = 0; slot < 8; ++slot) {
    CAPTURE(slot);
    CHECK(table.generation(slot) == (slot < 3 ? 2u : 1u));
    CheckRow(StoredColumns(table), slot, id_of_slot[slot]);
    const double mass = std::pow(id_of_slot[slot] + 1.0, kAlpha);
    CHECK(table.mass(slot) == doctest::Approx(mass).epsilon(1e-12));
    total += mass;
  }
  CHECK(table.total_mass() == doctest::Approx(total).epsilon(1e-12));
  CHECK(table.min_mass() == doctest::Approx(std::pow(4.0, kAlpha)).epsilon(1e-12));

  std::mt19937_64 rng(9);
  SampleBatch batch;
  table.Sample(64, rng, &batch);
  for (int i = 0; i < 64; ++i) CheckRow(SampledColumns(batch), i, id_of_slot[batch.keys[i].slot]);

  // A batch larger than the table keeps only its newest rows.
  table.Insert(20, MakeRows(100, 20).Columns(), priorities_for(100, 20).data());
  CHECK(table.size() == 8);
  CHECK(table.next_slot() == (3 + 20) % 8);
  for (int64_t slot = 0; slot < 8; ++slot) {
    const int64_t id = 100 + (slot >= 7 ? slot - 7 : slot + 1) + 12;
    CheckRow(StoredColumns(table), slot, id);
  }
}

TEST_CASE("Stale priority updates are ignored, valid ones applied") {
  constexpr double kAlpha = 0.6;
  Table table(core::TransitionSchema(4, true, 1), 4, kAlpha);
  const std::vector<float> ones(4, 1.0f);
  table.Insert(3, MakeRows(0, 3).Columns(), ones.data());
  const Key old_key{0, table.generation(0)};
  CHECK(old_key.generation == 1);

  SUBCASE("keys past size or from an older generation") {
    const Key unfilled{3, 0};  // Slot 3 was never written: its generation is still 0.
    const float priority = 50.0f;
    CHECK(table.UpdatePriorities(&unfilled, &priority, 1) == 0);
    CHECK(table.mass(3) == 0.0);

    table.Insert(2, MakeRows(3, 2).Columns(), ones.data());  // Slot 3, then slot 0 again.
    CHECK(table.generation(0) == 2);
    const double mass_before = table.mass(0);
    CHECK(table.UpdatePriorities(&old_key, &priority, 1) == 0);
    CHECK(table.mass(0) == mass_before);
    CHECK(table.total_mass() == doctest::Approx(4.0));

    const Key current{0, 2};
    CHECK(table.UpdatePriorities(&current, &priority, 1) == 1);
    CHECK(table.mass(0) == doctest::Approx(std::pow(50.0, kAlpha)));
    CHECK(table.total_mass() == doctest::Approx(3.0 + std::pow(50.0, kAlpha)));
    CHECK(table.min_mass() == doctest::Approx(1.0));
  }

  SUBCASE("a mixed batch counts only the applied updates") {
    const std::vector<Key> keys = {{0, 1}, {1, 1}, {2, 1}, {1, 1}, {2, 7}, {9, 1}, {0, 1}};
    const std::vector<float> priorities = {
        4.0f, 0.25f, std::nanf(""), -1.0f, 3.0f, 3.0f, std::numeric_limits<float>::infinity()};
    CHECK(table.UpdatePriorities(keys.data(), priorities.data(), 7) == 2);
    CHECK(table.mass(0) == doctest::Approx(std::pow(4.0, kAlpha)));
    CHECK(table.mass(1) == doctest::Approx(std::pow(0.25, kAlpha)));
    CHECK(table.mass(2) == doctest::Approx(1.0));
    const double total = std::pow(4.0, kAlpha) + std::pow(0.25, kAlpha) + 1.0;
    CHECK(table.total_mass() == doctest::Approx(total));
    CHECK(table.min_mass() == doctest::Approx(std::pow(0.25, kAlpha)));
  }

  SUBCASE("zero priorities keep the item sampleable") {
    const Key key{1, 1};
    const float zero = 0.0f;
    CHECK(table.UpdatePriorities(&key, &zero, 1) == 1);
    CHECK(table.mass(1) > 0.0);
    CHECK(table.min_mass() == table.mass(1));
  }
}

TEST_CASE("Non-positive and non-finite insert priorities stay sampleable") {
  Table table(core::TransitionSchema(4, true, 1), 4, 0.6);
  const std::vector<float> priorities = {0.0f, -3.0f, std::nanf(""),
                                         std::numeric_limits<float>::infinity()};
  table.Insert(4, MakeRows(0, 4).Columns(), priorities.data());
  for (int64_t slot = 0; slot < 4; ++slot) CHECK(table.mass(slot) > 0.0);
  CHECK(std::isfinite(table.total_mass()));
  std::mt19937_64 rng(4);
  SampleBatch batch;
  std::vector<bool> seen(4, false);
  for (int call = 0; call < 10; ++call) {
    table.Sample(4, rng, &batch);  // Equal masses: one draw per stratum covers every item.
    for (const Key& key : batch.keys) seen[key.slot] = true;
  }
  CHECK(seen == std::vector<bool>(4, true));
}

TEST_CASE("resident_bytes covers the preallocated storage") {
  const core::Schema schema = core::TransitionSchema(4, true, 1);
  Table table(schema, 1000, 0.6);
  const int64_t column_bytes = 1000 * static_cast<int64_t>(schema.row_bytes());
  const int64_t tree_bytes = 2 * 1000 * static_cast<int64_t>(sizeof(double));
  CHECK(table.resident_bytes() >= column_bytes + tree_bytes);
  CHECK(table.resident_bytes() < 2 * (column_bytes + tree_bytes));
}

}  // namespace
}  // namespace ferry::replay
