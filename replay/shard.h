// One replay shard: a prioritized Table served over a ZeroMQ ROUTER socket.
//
//   InsertBatch -> validate -> dedup (actor, sequence) -> rate limiter
//               -> Table::Insert -> InsertAck   (held back while rate-limited)
//   SampleRequest -> rate limiter -> Table::Sample -> SampleReply + mass info
//   UpdatePriorities -> Table::UpdatePriorities (stale generations ignored)
//   StatsRequest -> StatsReply
//   InspectRequest -> InspectReply (read-only views for `ferry inspect`)
//   every snapshot period and at stop -> snapshot file (replay/snapshotter.h)
//
// Every InsertAck says how far that actor's batches are durable (in a complete
// snapshot) and which incarnation of the shard acked it (InsertAckMeta), so
// writers keep what a SIGKILL would lose and re-send it to the restarted shard.
//
// Everything runs on the thread that calls Serve(); the socket and table are
// owned by it. Stats() may be called from another thread. A malformed message
// gets an Error reply and a counter, and the shard keeps serving.
#ifndef FERRY_REPLAY_SHARD_H_
#define FERRY_REPLAY_SHARD_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <zmq.hpp>

#include "core/experience.h"
#include "core/status.h"
#include "core/wire.h"
#include "replay/dedup.h"
#include "replay/protocol.h"
#include "replay/rate_limiter.h"
#include "replay/selectors/interface.h"
#include "replay/snapshotter.h"
#include "replay/table.h"

namespace ferry::replay {

struct ShardOptions {
  uint32_t shard_id = 0;
  std::string endpoint;  // e.g. tcp://127.0.0.1:5550
  core::Schema schema;
  int64_t capacity = 100000;
  double alpha = 0.6;
  SelectorKind selector = SelectorKind::kPrioritized;
  int64_t min_size_to_sample = 1;
  double samples_per_insert = 1.0;
  double samples_per_insert_tolerance = 1e18;  // Effectively unlimited by default.
  uint64_t seed = 0;
  int max_batch = core::kMaxBatchRows;  // Largest insert or sample count accepted.
  // Snapshots (replay/snapshotter.h): none when snapshot_dir is empty; with a
  // period of 0, one when Serve stops.
  std::string snapshot_dir;
  double snapshot_period_seconds = 0;
  Compression compression = Compression::kNone;  // Of the table's uint8 columns.
};

class ShardServer {
 public:
  ShardServer(zmq::context_t& context, ShardOptions options);

  // Binds the endpoint; an address in use is reported, not thrown.
  Status Bind();
  // Loads the newest valid snapshot, if any; call after Bind (which proves no
  // other process serves this shard) and before Serve when snapshot_dir is set.
  Status Restore();
  // Serves until `stop` becomes true (checked at least every 50 ms), then
  // writes a last snapshot. Once `learner_ended` is true (nothing will sample
  // again) every insert is admitted, those the rate limiter holds too, so the
  // actors, stopped next, have their last batches acked and in that snapshot.
  void Serve(const std::atomic<bool>& stop, const std::atomic<bool>& learner_ended);
  void Serve(const std::atomic<bool>& stop);  // Inserts always wait for the rate limiter.
  StatsMeta Stats() const;

 private:
  struct Pending {
    zmq::message_t routing_id;
    core::Message message;
  };

  void Handle(zmq::message_t routing_id, core::Message message);
  // `held`: the message waited in pending_ for the rate limiter (its ack says so).
  Status HandleInsert(const zmq::message_t& routing_id, const core::Message& m, bool held,
                      bool* deferred);
  Status ValidateInsert(const core::Message& m, InsertMeta* meta) const;
  Status HandleSample(const zmq::message_t& routing_id, const core::Message& m);
  Status HandleUpdate(const core::Message& m);
  void HandleStats(const zmq::message_t& routing_id, const core::Message& m);
  // `ferry inspect` on a live shard (replay/shard_inspect.cc): reads the table
  // without sampling it, so the rate limiter and times_sampled are untouched.
  Status HandleInspect(const zmq::message_t& routing_id, const core::Message& m);
  // Whether an insert may go in now: the rate limiter allows it or the learner has ended.
  bool CanInsert() const;
  void DrainPending();
  void Reply(const zmq::message_t& routing_id, core::MessageType type, uint64_t sequence,
             std::vector<zmq::message_t> payload);
  MassInfo Mass() const;
  ShardView View() const;  // What a snapshot of the shard holds, as of now.

  ShardOptions options_;
  uint64_t fingerprint_;  // options_.schema.Fingerprint(), rendered once.
  uint64_t incarnation_;  // Drawn at construction; never 0.
  zmq::socket_t socket_;
  Table table_;
  RateLimiter limiter_;
  Deduplicator dedup_;
  std::mt19937_64 rng_;
  std::deque<Pending> pending_;
  bool learner_ended_ = false;  // Serve's `learner_ended`, once seen true.
  SampleBatch scratch_;         // Keys, masses, times_sampled of a draw; columns go to frames.

  mutable std::mutex stats_mu_;
  StatsMeta stats_;  // Guarded by stats_mu_; a copy refreshed after each message.

  Snapshotter snapshots_;
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_SHARD_H_
