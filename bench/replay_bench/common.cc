#include "bench/replay_bench/common.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace ferry::bench::replay_bench {
namespace {

core::Schema ByteObsSchema(std::vector<int> obs_shape) {
  core::Schema s = core::TransitionSchema(/*obs_dim=*/1, /*discrete_actions=*/true,
                                          /*action_dim=*/1);
  for (int c : {core::kObs, core::kNextObs}) {
    s.columns[c].dtype = core::DType::kUint8;
    s.columns[c].shape = obs_shape;
  }
  return s;
}

}  // namespace

Settings QuickSettings() {
  Settings s;
  s.quick = true;
  s.rounds = 3;
  s.window_s = 0.04;
  s.warmup_s = 0.04;
  s.table_window_s = 0.03;
  s.capacity_shift = 4;  // Page faults on gigabytes of fresh tables would take most of the run.
  return s;
}

core::Schema CartPoleSchema() {
  return core::TransitionSchema(/*obs_dim=*/4, /*discrete_actions=*/true, /*action_dim=*/1);
}

[[noreturn]] void Die(const std::string& what) {
  std::cerr << "replay_bench: " << what << std::endl;
  std::exit(1);
}

std::vector<float> RandomPriorities(int64_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> priority(0.01f, 2.0f);
  std::vector<float> out(static_cast<size_t>(count));
  for (float& p : out) p = priority(rng);
  return out;
}

std::vector<uint8_t> RandomBytes(size_t count, std::mt19937_64& rng) {
  std::vector<uint8_t> out(count);
  for (size_t i = 0; i < count; i += 8) {
    const uint64_t word = rng();
    std::memcpy(out.data() + i, &word, std::min<size_t>(8, count - i));
  }
  return out;
}

Rows RandomRows(const core::Schema& schema, int count, std::mt19937_64& rng) {
  Rows rows;
  rows.count = count;
  for (const auto& c : schema.columns) {
    rows.columns.push_back(RandomBytes(count * c.row_bytes(), rng));
  }
  rows.priorities = RandomPriorities(count, rng);
  return rows;
}

std::vector<RowClass> RowClasses(const Settings& s) {
  return {
      {"cartpole", CartPoleSchema(), 16, s.capacity(kFullCapacity), 256, kSampleBatch},
      {"obs_1KB", ByteObsSchema({1024}), 1024, s.capacity(1 << 16), 64, kSampleBatch},
      {"atari", ByteObsSchema({84, 84, 4}), 84 * 84 * 4, s.capacity(4096), 8, 32},
  };
}

}  // namespace ferry::bench::replay_bench
