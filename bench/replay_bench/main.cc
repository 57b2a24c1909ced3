// Replay throughput, each figure beside baselines measured in the same run.
//
//   memcpy  copy bandwidth over buffers far larger than the caches
//   crc     the wire checksum, vs one crc32q stream and memcpy of the same buffer
//   table   Table::Sample / UpdatePriorities / Insert at 1M capacity
//             vs a textbook binary-tree replay and a no-tree memory-touch floor
//   shard   one ShardServer on loopback TCP: ReplayWriter inserts (1, 4, 16 actors) and
//           ReplaySampler samples (1, 2 learners) for 52 B, 2 KB and 56 KB rows
//             vs raw ZeroMQ moving the same frames with the same window, acked and not
//   shards  K = 1, 2, 4 shards: 4 writers spread over them, one sampler over all, also
//           asking for 4 batches per request (learner.batches_per_request)
//   compression  replay.compression lz4 vs none on Atari-like frames: bytes per
//           transition, Table and shard insert/sample rates
//
// Shards, raw servers and clients are threads of this process, each with its
// own ZeroMQ context, as separate processes would have. Table figures count
// this thread's CPU time; wire figures count wall time, and the whole
// process's CPU time per transition beside it (bench/bench.h says why).
//   usage: replay_bench [--quick] [--only=crc|table|shard|shards|compression]
//                       [--rows=cartpole|obs_1KB|atari]
// (--rows limits the shard section to one row class.)
//
// Sections: table.cc (memcpy, crc, table), wire.cc (shard, shards),
// compression.cc; common.h holds what they share.
#include <iostream>
#include <string>

#include "bench/bench.h"
#include "bench/replay_bench/common.h"
#include "core/log.h"
#include "core/malloc_tuning.h"

namespace ferry::bench::replay_bench {
namespace {

int Main(int argc, char** argv) {
  core::KeepLargeBlocksInHeap();  // As ferry's own processes run, baselines included.
  Settings s;
  std::string only, rows;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      s = QuickSettings();
    } else if (arg == "--only=crc" || arg == "--only=table" || arg == "--only=shard" ||
               arg == "--only=shards" || arg == "--only=compression") {
      only = arg.substr(7);
    } else if (arg == "--rows=cartpole" || arg == "--rows=obs_1KB" || arg == "--rows=atari") {
      rows = arg.substr(7);
    } else {
      std::cerr << "usage: replay_bench [--quick] [--only=crc|table|shard|shards|compression]"
                   " [--rows=cartpole|obs_1KB|atari]\n";
      return 2;
    }
  }
  s.rows = rows;
  const double start = core::NowSeconds();
  PrintMachineLine(s.quick);
  const double memcpy_gbps = MemcpyBench(s);
  if (only.empty() || only == "crc") CrcBench(s);
  if (only.empty() || only == "table") TableBenches(s);
  if (only.empty() || only == "shard") ShardBenches(s, memcpy_gbps);
  if (only.empty() || only == "shards") MultiShardBenches(s, memcpy_gbps);
  if (only.empty() || only == "compression") CompressionBenches(s);
  JsonLine("done").Add("seconds", core::NowSeconds() - start).Add("load1", Load1()).Print();
  return 0;
}

}  // namespace
}  // namespace ferry::bench::replay_bench

int main(int argc, char** argv) { return ferry::bench::replay_bench::Main(argc, argv); }
