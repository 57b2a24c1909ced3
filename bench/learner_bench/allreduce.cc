#include <cstring>
#include <functional>
#include <vector>

#include "bench/learner_bench/common.h"
#include "learner/linalg/allreducer.h"

namespace ferry::bench::learner_bench {
namespace {

using learner::linalg::Allreducer;
using Algorithm = Allreducer::Algorithm;

double BusFactor(int ranks) { return 2.0 * (ranks - 1) / ranks; }

}  // namespace

void AllreduceBench(const Settings& s) {
  const int ranks = Ranks();
  if (ranks < 2) {
    JsonLine line("allreduce");
    line.Add("skipped", "needs 2 or more ranks: run under mpirun -np 2");
    Emit(line);
    return;
  }
  // Zeros stay zeros however often they are summed; every buffer is touched before timing.
  std::vector<float> data(s.max_allreduce_bytes / sizeof(float));
  Allreducer mpi(MPI_COMM_WORLD, Algorithm::kMpi);
  Allreducer shared_memory(MPI_COMM_WORLD, Algorithm::kSharedMemory, Allreducer::kDefaultChunkBytes,
                           data.size());
  std::fill_n(shared_memory.buffer(), data.size(), 0.f);
  // The learner's path is the zero-copy one: it packs gradients straight into the buffer.
  struct Variant {
    const char* name;
    std::function<void(size_t count)> sum;
  };
  const std::vector<Variant> variants = {
      {"mpi", [&](size_t count) { mpi.Sum(data.data(), count); }},
      {"shared_memory", [&](size_t count) { shared_memory.Sum(data.data(), count); }},
      {"shared_memory_zero_copy", [&](size_t count) { shared_memory.SumBuffer(0, count); }},
  };
  std::vector<char> source(Rank() == 0 ? s.max_allreduce_bytes : 0, 1);
  std::vector<char> target(source.size(), 0);

  for (size_t bytes = 4096; bytes <= s.max_allreduce_bytes; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    std::vector<std::function<Window()>> candidates;
    candidates.push_back([&] {
      const double seconds = OnRankZero([&] {
        return TimeCollective(MPI_COMM_SELF, s.window_s,
                              [&] {
                                std::memcpy(target.data(), source.data(), bytes);
                                KeepAlive(target.data());
                              })
            .wall;
      });
      return Window{static_cast<double>(bytes) / seconds, 0};
    });
    for (const Variant& variant : variants) {
      candidates.push_back([&] {
        const double seconds =
            TimeCollective(MPI_COMM_WORLD, s.window_s, [&] { variant.sum(count); }).wall;
        return Window{static_cast<double>(bytes) / seconds, 0};
      });
    }
    const std::vector<Figure> figures = Alternate(s.rounds, candidates);
    const double memcpy_rate = figures[0].wall.median;
    const double mpi_busbw = figures[1].wall.median * BusFactor(ranks);
    for (size_t v = 0; v < variants.size(); ++v) {
      const Spread& algbw = figures[v + 1].wall;
      const double busbw = algbw.median * BusFactor(ranks);
      JsonLine line("allreduce");
      line.Add("ranks", ranks)
          .Add("bytes", static_cast<int64_t>(bytes))
          .Add("algorithm", variants[v].name)
          .Add("time_us", static_cast<double>(bytes) / algbw.median * 1e6)
          .Add("algbw_gbs", algbw.median / 1e9);
      AddSpread(line, "busbw_gbs", algbw, BusFactor(ranks) / 1e9);
      line.Add("mpi_busbw_gbs", mpi_busbw / 1e9)
          .Add("vs_mpi", busbw / mpi_busbw)
          .Add("memcpy_gbs", memcpy_rate / 1e9)
          .Add("vs_memcpy", busbw / memcpy_rate);
      Emit(line);
    }
  }
}

// The shared-memory algorithm's pipeline chunk, at 16 MB.
void AllreduceChunkBench(const Settings& s) {
  const int ranks = Ranks();
  const size_t bytes = size_t{16} << 20;
  if (ranks < 2 || s.quick) return;
  std::vector<float> data(bytes / sizeof(float));
  const size_t count = data.size();
  Allreducer mpi(MPI_COMM_WORLD, Algorithm::kMpi);
  for (size_t chunk : {size_t{64} << 10, size_t{256} << 10, size_t{1} << 20, size_t{4} << 20}) {
    Allreducer shared_memory(MPI_COMM_WORLD, Algorithm::kSharedMemory, chunk);
    std::vector<std::function<Window()>> candidates;
    for (Allreducer* a : {&mpi, &shared_memory}) {
      candidates.push_back([&, a] {
        const double seconds =
            TimeCollective(MPI_COMM_WORLD, s.window_s, [&] { a->Sum(data.data(), count); }).wall;
        return Window{static_cast<double>(bytes) / seconds * BusFactor(ranks), 0};
      });
    }
    const std::vector<Figure> figures = Alternate(s.rounds, candidates);
    JsonLine line("allreduce_chunk");
    line.Add("ranks", ranks)
        .Add("bytes", static_cast<int64_t>(bytes))
        .Add("algorithm", std::string(AlgorithmName(shared_memory.algorithm())))
        .Add("chunk_bytes", static_cast<int64_t>(chunk));
    AddSpread(line, "busbw_gbs", figures[1].wall, 1e-9);
    line.Add("mpi_busbw_gbs", figures[0].wall.median / 1e9)
        .Add("vs_mpi", figures[1].wall.median / figures[0].wall.median);
    Emit(line);
  }
}

}  // namespace ferry::bench::learner_bench
