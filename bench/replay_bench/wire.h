// The pieces of replay_bench's wire sections that the compression section
// also uses: a shard serving on its own thread, and timed client threads.
#ifndef FERRY_BENCH_REPLAY_BENCH_WIRE_H_
#define FERRY_BENCH_REPLAY_BENCH_WIRE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "bench/replay_bench/common.h"
#include "core/status.h"
#include "replay/shard.h"

namespace ferry::bench::replay_bench {

// A shard on a fresh loopback port with the rate limiter wide open, so inserts
// and samples never wait for each other.
replay::ShardOptions BenchShardOptions(const RowClass& rows, uint32_t shard_id, int64_t capacity);

// A ShardServer bound and serving on its own thread and ZeroMQ context, as a
// `ferry replay` process runs it; stopped and joined on destruction.
class ShardThread {
 public:
  explicit ShardThread(replay::ShardOptions options)
      : endpoint_(options.endpoint), server_(context_, std::move(options)) {
    const Status bound = server_.Bind();
    if (!bound.ok()) Die(bound.ToString());
    thread_ = std::jthread([this] { server_.Serve(stop_); });
  }
  ~ShardThread() { stop_ = true; }  // thread_, declared last, joins first.

  const std::string& endpoint() const { return endpoint_; }
  int64_t size() const { return server_.Stats().mass.size; }

 private:
  zmq::context_t context_{1};
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  replay::ShardServer server_;
  std::jthread thread_;
};

// A client thread's work: loop until `stop`, adding finished transitions to `done`.
using ClientBody = std::function<void(const std::atomic<bool>& stop, std::atomic<int64_t>& done)>;

// A candidate that starts `clients` threads of `body`, lets them warm up, and
// times one window: transitions (counted in `done`) per wall second and per
// CPU second of the whole process (clients, servers and ZeroMQ I/O threads).
std::function<Window()> Clients(const Settings& s, int clients, ClientBody body,
                                std::atomic<int64_t>& done);

// An actor: ReplayWriter batches round robin over the shards.
ClientBody FerryInserter(std::vector<std::string> endpoints, const core::Schema& schema,
                         const Rows& rows);

// A learner: ReplaySampler batches of `batch` rows, global over the shards; with
// batches_per_request G, one sample of G * batch rows dealt into G batches (replay::Deal), as
// the learner's prefetcher asks with learner.batches_per_request.
ClientBody FerrySampler(std::vector<std::string> endpoints, const core::Schema& schema, int batch,
                        int batches_per_request = 1);

}  // namespace ferry::bench::replay_bench

#endif  // FERRY_BENCH_REPLAY_BENCH_WIRE_H_
