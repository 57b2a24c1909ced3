// The in-process sections: memcpy bandwidth, the wire checksum, and Table
// operations at 1M capacity against a textbook binary-tree replay.
#include "replay/table.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/binary_tree_replay.h"
#include "bench/replay_bench/common.h"
#include "core/crc32c.h"
#include "core/status.h"

namespace ferry::bench::replay_bench {
namespace {

// Times Table against the naive replay and the floor, and prints one line.
void TableLine(const Settings& s, const std::string& bench, int batch, const char* unit,
               const std::function<int64_t()>& table, const std::function<int64_t()>& naive,
               const std::function<int64_t()>& floor) {
  const double w = s.table_window_s;
  const auto f = Alternate(s.rounds, {[&] { return TimeOnThisThread(w, table); },
                                      [&] { return TimeOnThisThread(w, naive); },
                                      [&] { return TimeOnThisThread(w, floor); }});
  JsonLine line(bench);
  line.Add("capacity", s.capacity(kFullCapacity))
      .Add("row_bytes", CartPoleSchema().row_bytes())
      .Add("batch", batch)
      .Add("value", f[0].cpu.median)
      .Add("unit", unit)
      .Add("clock", "thread CPU time")
      .Add("wall_value", f[0].wall.median)
      .Add("baseline", "naive: binary sum+min trees, one tree walk per item")
      .Add("baseline_value", f[1].cpu.median)
      .Add("ratio", PairedRatio(f[0], f[1], &Window::cpu_rate).median)
      .Add("ceiling", "memory-touch floor: rows, generations, leaves, no tree, no pow")
      .Add("ceiling_value", f[2].cpu.median)
      .Add("ceiling_ratio", PairedRatio(f[0], f[2], &Window::cpu_rate).median);
  AddWindowSummary(line, f[0].cpu, s.rounds, w);
  line.Print();
}

}  // namespace

// Returns the machine's copy bandwidth in GB per CPU second.
double MemcpyBench(const Settings& s) {
  constexpr size_t kBytes = size_t{64} << 20;
  std::vector<uint8_t> src(kBytes, 1);
  std::vector<uint8_t> dst(kBytes, 2);
  const Figure f = Alternate(s.rounds, {[&] {
                               return TimeOnThisThread(s.table_window_s, [&] {
                                 std::memcpy(dst.data(), src.data(), kBytes);
                                 KeepAlive(dst.data());
                                 return kBytes;
                               });
                             }})[0];
  JsonLine line("memcpy");
  line.Add("bytes", kBytes)
      .Add("value", f.cpu.median / 1e9)
      .Add("unit", "GB/s copied, per CPU second")
      .Add("wall_value", f.wall.median / 1e9)
      .Add("baseline", "none: the reference the wire benchmarks divide by");
  AddWindowSummary(line, {f.cpu.median / 1e9, f.cpu.min / 1e9, f.cpu.max / 1e9}, s.rounds,
                   s.table_window_s);
  line.Print();
  return f.cpu.median / 1e9;
}

// The wire checksum over one buffer, cache-resident (a 28 KB-observation
// insert batch is 450 KB) and not (64 MB), against one crc32q stream (the
// first checksum) and memcpy of the same bytes; the three streams it ran
// before the folding path are timed beside them.
void CrcBench(const Settings& s) {
  std::mt19937_64 rng(6);
  for (size_t bytes : {size_t{256} << 10, size_t{64} << 20}) {
    const std::vector<uint8_t> src = RandomBytes(bytes, rng);
    std::vector<uint8_t> dst(bytes);
    uint32_t sink = 0;
    const double w = s.table_window_s;
    const auto f =
        Alternate(s.rounds, {[&] {
                               return TimeOnThisThread(w, [&] {
                                 sink ^= core::Crc32c(0, src.data(), bytes);
                                 return static_cast<int64_t>(bytes);
                               });
                             },
                             [&] {
                               return TimeOnThisThread(w, [&] {
                                 sink ^= core::internal::Crc32cOneStream(0, src.data(), bytes);
                                 return static_cast<int64_t>(bytes);
                               });
                             },
                             [&] {
                               return TimeOnThisThread(w, [&] {
                                 sink ^= core::internal::Crc32cThreeStreams(0, src.data(), bytes);
                                 return static_cast<int64_t>(bytes);
                               });
                             },
                             [&] {
                               return TimeOnThisThread(w, [&] {
                                 std::memcpy(dst.data(), src.data(), bytes);
                                 KeepAlive(dst.data());
                                 return static_cast<int64_t>(bytes);
                               });
                             }});
    KeepAlive(&sink);
    JsonLine line("crc32c");
    line.Add("bytes", bytes)
        .Add("value", f[0].cpu.median / 1e9)
        .Add("unit", "GB/s checksummed, per CPU second")
        .Add("baseline", "one crc32q stream")
        .Add("baseline_value", f[1].cpu.median / 1e9)
        .Add("ratio", PairedRatio(f[0], f[1], &Window::cpu_rate).median)
        .Add("three_streams_value", f[2].cpu.median / 1e9)
        .Add("three_streams_ratio", PairedRatio(f[0], f[2], &Window::cpu_rate).median)
        .Add("ceiling", "memcpy of the same buffer")
        .Add("ceiling_value", f[3].cpu.median / 1e9)
        .Add("ceiling_ratio", PairedRatio(f[0], f[3], &Window::cpu_rate).median);
    AddWindowSummary(line, {f[0].cpu.median / 1e9, f[0].cpu.min / 1e9, f[0].cpu.max / 1e9},
                     s.rounds, w);
    line.Print();
  }
}

void TableBenches(const Settings& s) {
  const core::Schema schema = CartPoleSchema();
  std::mt19937_64 rng(1);
  const Rows rows = RandomRows(schema, /*count=*/1024, rng);
  const std::vector<const uint8_t*> columns = rows.pointers();
  const int64_t capacity = s.capacity(kFullCapacity);
  const std::vector<float> priorities = RandomPriorities(capacity, rng);
  replay::Table table(schema, capacity, kAlpha);
  BinaryTreeReplay naive(schema, capacity, kAlpha);
  for (int64_t done = 0; done < capacity; done += rows.count) {
    table.Insert(rows.count, columns, priorities.data() + done);
    naive.Insert(rows.count, columns, priorities.data() + done);
  }

  std::mt19937_64 rng_table(2), rng_naive(2), rng_floor(2);
  replay::SampleBatch out_table, out_naive, out_floor;
  TableLine(
      s, "table_sample", kSampleBatch, "keys/s",
      [&] {
        table.Sample(kSampleBatch, rng_table, &out_table);
        return kSampleBatch;
      },
      [&] {
        naive.Sample(kSampleBatch, rng_naive, &out_naive);
        return kSampleBatch;
      },
      [&] {
        naive.SampleFloor(kSampleBatch, rng_floor, &out_floor);
        return kSampleBatch;
      });

  // Keys as a learner sends them back: from earlier samples, still current in
  // both replays (they were filled alike), as many as the table holds, so the
  // updates do not find their slots in cache from the previous pass.
  const int64_t key_batches = capacity / kSampleBatch;
  std::vector<std::vector<replay::Key>> keys;
  std::vector<std::vector<float>> updates;
  for (int64_t i = 0; i < key_batches; ++i) {
    table.Sample(kSampleBatch, rng, &out_table);
    keys.push_back(out_table.keys);
    updates.push_back(RandomPriorities(kSampleBatch, rng));
  }
  FERRY_CHECK(table.UpdatePriorities(keys[0].data(), updates[0].data(), kSampleBatch) ==
              kSampleBatch);
  // Each candidate walks the key batches in turn, applying them with `apply`.
  auto updater = [&](auto apply) {
    return [&keys, &updates, key_batches, apply, next = int64_t{0}]() mutable {
      next = (next + 1) % key_batches;
      return apply(keys[next].data(), updates[next].data());
    };
  };
  TableLine(s, "table_update", kSampleBatch, "updates/s",
            updater([&](const replay::Key* k, const float* p) {
              return table.UpdatePriorities(k, p, kSampleBatch);
            }),
            updater([&](const replay::Key* k, const float* p) {
              return naive.UpdatePriorities(k, p, kSampleBatch);
            }),
            updater([&](const replay::Key* k, const float* p) {
              return naive.UpdateFloor(k, p, kSampleBatch);
            }));

  for (int batch : {64, 256, 1024}) {
    const float* p = rows.priorities.data();
    TableLine(
        s, "table_insert", batch, "rows/s",
        [&] {
          table.Insert(batch, columns, p);
          return batch;
        },
        [&] {
          naive.Insert(batch, columns, p);
          return batch;
        },
        [&] {
          naive.InsertFloor(batch, columns, p);
          return batch;
        });
  }
}

}  // namespace ferry::bench::replay_bench
