// What the sections of replay_bench share: settings, constants, random rows
// and the row classes the wire sections measure; and each section's entry
// point (table.cc, wire.cc, compression.cc), which main.cc calls.
#ifndef FERRY_BENCH_REPLAY_BENCH_COMMON_H_
#define FERRY_BENCH_REPLAY_BENCH_COMMON_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "core/experience.h"

namespace ferry::bench::replay_bench {

inline constexpr double kAlpha = 0.6;
inline constexpr int64_t kFullCapacity = int64_t{1}
                                         << 20;  // Of the table benches and CartPole shards.
inline constexpr int kSampleBatch = 512;

struct Settings {
  bool quick = false;
  int rounds = 7;                // Each figure is the median of this many timed windows.
  double window_s = 0.2;         // One timed window of a wire benchmark.
  double warmup_s = 0.08;        // Untimed run before it: connections, queues, caches.
  double table_window_s = 0.15;  // One timed window of a table or memcpy benchmark.
  int capacity_shift = 0;        // Every table and shard holds 2^-shift of its full capacity.
  std::string rows;              // Run the shard section for this row class only (--rows=).

  int64_t capacity(int64_t full) const { return full >> capacity_shift; }
};

// A smoke run: every code path, figures too noisy to quote.
Settings QuickSettings();

core::Schema CartPoleSchema();
[[noreturn]] void Die(const std::string& what);
std::vector<float> RandomPriorities(int64_t count, std::mt19937_64& rng);
std::vector<uint8_t> RandomBytes(size_t count, std::mt19937_64& rng);

// `count` rows of random bytes per column of a schema, with random raw priorities.
struct Rows {
  int count = 0;
  std::vector<std::vector<uint8_t>> columns;
  std::vector<float> priorities;

  std::vector<const uint8_t*> pointers() const {
    std::vector<const uint8_t*> p;
    for (const auto& c : columns) p.push_back(c.data());
    return p;
  }
};

Rows RandomRows(const core::Schema& schema, int count, std::mt19937_64& rng);

// One size of experience in the wire benchmarks.
struct RowClass {
  std::string name;
  core::Schema schema;
  int64_t obs_bytes;
  int64_t capacity;  // Rows per shard, allocated up front.
  int insert_batch;  // Rows per InsertBatch.
  int sample_batch;  // Rows per learner batch.
};

// CartPole-size, 1 KB and Atari-size (84x84x4 uint8) observations.
std::vector<RowClass> RowClasses(const Settings& s);

// The sections. MemcpyBench returns the machine's copy bandwidth in GB per CPU
// second, which the wire sections divide by.
double MemcpyBench(const Settings& s);
void CrcBench(const Settings& s);
void TableBenches(const Settings& s);
void ShardBenches(const Settings& s, double memcpy_gbps);
void MultiShardBenches(const Settings& s, double memcpy_gbps);
void CompressionBenches(const Settings& s);

}  // namespace ferry::bench::replay_bench

#endif  // FERRY_BENCH_REPLAY_BENCH_COMMON_H_
