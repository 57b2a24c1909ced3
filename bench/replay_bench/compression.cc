// The compression section: replay.compression lz4 against none on Atari-like
// frames, in bytes per transition and in Table and shard rates.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bench/replay_bench/common.h"
#include "bench/replay_bench/wire.h"
#include "replay/table.h"

namespace ferry::bench::replay_bench {
namespace {

// Synthetic Atari observations: 4 stacked 84x84 frames, interleaved per pixel
// (shape {84, 84, 4}), of a banded background with eight 8x8 sprites that move
// one pixel per frame; next_obs is the same scene a step later. Random bytes
// would not compress, real frames (not available here) compress better or worse.
Rows AtariLikeRows(const core::Schema& schema, int count, std::mt19937_64& rng) {
  Rows rows = RandomRows(schema, count, rng);
  constexpr int kSide = 84, kStack = 4, kSprites = 8, kSpriteSide = 8;
  for (int r = 0; r < count; ++r) {
    int x[kSprites], y[kSprites];
    uint8_t shade[kSprites];
    for (int i = 0; i < kSprites; ++i) {
      x[i] = static_cast<int>(rng() % (kSide - kSpriteSide - 8));
      y[i] = static_cast<int>(rng() % (kSide - kSpriteSide));
      shade[i] = static_cast<uint8_t>(64 + rng() % 192);
    }
    for (int c : {core::kObs, core::kNextObs}) {
      uint8_t* obs = rows.columns[c].data() + static_cast<size_t>(r) * kSide * kSide * kStack;
      for (int py = 0; py < kSide; ++py) {
        for (int px = 0; px < kSide * kStack; ++px) obs[py * kSide * kStack + px] = (py / 12) * 8;
      }
      const int step = c == core::kNextObs ? 1 : 0;
      for (int f = 0; f < kStack; ++f) {
        for (int i = 0; i < kSprites; ++i) {
          for (int sy = 0; sy < kSpriteSide; ++sy) {
            for (int sx = 0; sx < kSpriteSide; ++sx) {
              const int px = x[i] + f + step + sx, py = y[i] + sy;
              obs[(py * kSide + px) * kStack + f] = shade[i];
            }
          }
        }
      }
    }
  }
  return rows;
}

}  // namespace

// replay.compression: a Table and a shard storing Atari-like observations
// LZ4-compressed against the same uncompressed, in memory and throughput.
void CompressionBenches(const Settings& s) {
  const RowClass rc = RowClasses(s)[2];
  std::mt19937_64 rng(7);
  const Rows rows = AtariLikeRows(rc.schema, rc.insert_batch, rng);
  const std::vector<const uint8_t*> columns = rows.pointers();
  replay::Table plain(rc.schema, rc.capacity, kAlpha, replay::SelectorKind::kPrioritized,
                      replay::Compression::kNone);
  replay::Table lz4(rc.schema, rc.capacity, kAlpha, replay::SelectorKind::kPrioritized,
                    replay::Compression::kLz4);
  for (int64_t done = 0; done < rc.capacity; done += rc.insert_batch) {
    const Rows fresh = AtariLikeRows(rc.schema, rc.insert_batch, rng);
    plain.Insert(rc.insert_batch, fresh.pointers(), fresh.priorities.data());
    lz4.Insert(rc.insert_batch, fresh.pointers(), fresh.priorities.data());
  }
  const double row_bytes = static_cast<double>(rc.schema.row_bytes());
  for (auto* table : {&plain, &lz4}) {
    JsonLine("compression_memory")
        .Add("rows", rc.name)
        .Add("compression", replay::CompressionName(table->compression()))
        .Add("capacity", table->capacity())
        .Add("value", static_cast<double>(table->resident_bytes()) / table->capacity())
        .Add("unit", "resident bytes per transition (Table::resident_bytes / capacity)")
        .Add("row_bytes", rc.schema.row_bytes())
        .Add("ratio", static_cast<double>(table->resident_bytes()) / table->capacity() / row_bytes)
        .Print();
  }
  std::mt19937_64 rng_plain(8), rng_lz4(8);
  replay::SampleBatch out_plain, out_lz4;
  const double w = s.table_window_s;
  auto table_line = [&](const std::string& bench, const Figure& a, const Figure& b) {
    JsonLine line(bench);
    line.Add("rows", rc.name)
        .Add("value", a.cpu.median)
        .Add("unit", "transitions/s, per CPU second")
        .Add("clock", "thread CPU time")
        .Add("baseline", "the same Table uncompressed")
        .Add("baseline_value", b.cpu.median)
        .Add("ratio", PairedRatio(a, b, &Window::cpu_rate).median);
    AddWindowSummary(line, a.cpu, s.rounds, w);
    line.Print();
  };
  const auto inserts =
      Alternate(s.rounds, {[&] {
                             return TimeOnThisThread(w, [&] {
                               lz4.Insert(rows.count, columns, rows.priorities.data());
                               return rows.count;
                             });
                           },
                           [&] {
                             return TimeOnThisThread(w, [&] {
                               plain.Insert(rows.count, columns, rows.priorities.data());
                               return rows.count;
                             });
                           }});
  table_line("compression_table_insert", inserts[0], inserts[1]);
  const auto samples =
      Alternate(s.rounds, {[&] {
                             return TimeOnThisThread(w, [&] {
                               lz4.Sample(rc.sample_batch, rng_lz4, &out_lz4);
                               return rc.sample_batch;
                             });
                           },
                           [&] {
                             return TimeOnThisThread(w, [&] {
                               plain.Sample(rc.sample_batch, rng_plain, &out_plain);
                               return rc.sample_batch;
                             });
                           }});
  table_line("compression_table_sample", samples[0], samples[1]);

  // Over the wire: 4 actors inserting, then 1 learner sampling, into a shard of each kind.
  replay::ShardOptions plain_options = BenchShardOptions(rc, /*shard_id=*/0, rc.capacity);
  replay::ShardOptions lz4_options = BenchShardOptions(rc, /*shard_id=*/1, rc.capacity);
  lz4_options.compression = replay::Compression::kLz4;
  const ShardThread plain_shard(plain_options), lz4_shard(lz4_options);
  std::atomic<int64_t> done{0};
  auto wire_line = [&](const std::string& bench, int clients, const Figure& a, const Figure& b) {
    const Spread ratio = PairedRatio(a, b, &Window::wall_rate);
    JsonLine line(bench);
    line.Add("rows", rc.name)
        .Add("clients", clients)
        .Add("value", a.wall.median)
        .Add("unit", "transitions/s")
        .Add("baseline", "the same shard uncompressed")
        .Add("baseline_value", b.wall.median)
        .Add("ratio", ratio.median)
        .Add("ratio_min", ratio.min)
        .Add("ratio_max", ratio.max)
        .Add("cpu_ns_per_transition", 1e9 / a.cpu.median)
        .Add("baseline_cpu_ns_per_transition", 1e9 / b.cpu.median);
    AddWindowSummary(line, a.wall, s.rounds, s.window_s);
    line.Print();
  };
  const auto wire_inserts = Alternate(
      s.rounds, {Clients(s, 4, FerryInserter({lz4_shard.endpoint()}, rc.schema, rows), done),
                 Clients(s, 4, FerryInserter({plain_shard.endpoint()}, rc.schema, rows), done)});
  wire_line("compression_shard_insert", 4, wire_inserts[0], wire_inserts[1]);
  const auto wire_samples = Alternate(
      s.rounds,
      {Clients(s, 1, FerrySampler({lz4_shard.endpoint()}, rc.schema, rc.sample_batch), done),
       Clients(s, 1, FerrySampler({plain_shard.endpoint()}, rc.schema, rc.sample_batch), done)});
  wire_line("compression_shard_sample", 1, wire_samples[0], wire_samples[1]);
}

}  // namespace ferry::bench::replay_bench
