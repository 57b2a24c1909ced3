// The actor's side of ingestion: exactly-once, back-pressured InsertBatch.
//
//   Write(batch) -> next shard (round robin) with window room -> InsertBatch
//   Poll()       -> InsertAck frees the window slot; batches unacked for
//                   resend_after seconds are sent again (the shard drops the
//                   duplicates by (actor, sequence))
//
// Durable acks: an acked batch is retained (its frames, uncopied) until an ack
// of the same shard says a complete snapshot holds it (durable_through). When
// an ack comes from a new incarnation of the shard (it restarted, maybe from an
// older snapshot), every retained and unacked batch of that shard is sent to
// it again; its restored deduplicator stores only those it lacks. Shards
// without snapshots make nothing retained. Past retain_bytes the oldest
// retained batches are let go, counted and logged: a restart would lose them.
//
// Each shard gets its own sequence numbers. When every window is full, Write
// waits for acks (logging what it waits for) instead of dropping anything.
//
// A shard's window adapts to its rate limiter. A batch the limiter held (its
// ack says so) halves the window, down to one batch; each window's worth of
// acks that came unheld widens it by one, up to max_in_flight. While the
// learner samples slower than the actors act, a batch waiting at the shard
// only ages (its transitions come from an ever older policy), so one waiting
// batch per shard is enough; while it keeps up, the window pipelines sends.
// Used from one thread.
#ifndef FERRY_REPLAY_WRITER_H_
#define FERRY_REPLAY_WRITER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "core/experience.h"
#include "core/status.h"
#include "replay/protocol.h"

namespace ferry::replay {

struct WriterOptions {
  uint32_t actor_id = 0;
  uint64_t epoch = 0;         // Grows with every process start (e.g. its start time).
  int max_in_flight = 8;      // Unacked batches per shard, at most (the window's ceiling).
  double resend_after = 2.0;  // Seconds without an ack before re-sending.
  // Bytes of acked batches no complete snapshot holds yet, kept to re-send to a
  // restarted shard; past it the oldest are let go (0: none kept).
  int64_t retain_bytes = int64_t{256} << 20;
};

class ReplayWriter {
 public:
  ReplayWriter(zmq::context_t& context, std::vector<std::string> endpoints, core::Schema schema,
               WriterOptions options);

  // Sends `count` rows (columns[c]: count * row_bytes bytes) with raw priorities.
  // The vectors' buffers become the frames sent, uncopied.
  // Waits while all windows are full; returns early (Unavailable) once `stop`
  // is set, keeping the batch unsent.
  Status Write(int count, std::vector<std::vector<uint8_t>> columns, std::vector<float> priorities,
               const std::atomic<bool>& stop);
  // Handles acks and re-sends without blocking longer than `timeout_ms`.
  void Poll(int timeout_ms = 0);
  // Waits until every sent batch is acked; DeadlineExceeded otherwise.
  Status Flush(double timeout_seconds);

  // Counted once per transition, however often a restart makes it acked again.
  int64_t acked_transitions() const { return acked_transitions_; }
  int64_t resent_batches() const { return resent_batches_; }
  int64_t in_flight() const;
  // How many unacked batches the shards' windows allow now, summed over the shards.
  int64_t window() const;
  // Acked, not yet durable: what is kept for a shard restart right now.
  int64_t retained_transitions() const { return retained_transitions_; }
  int64_t retained_bytes() const { return retained_bytes_; }
  // Retained transitions sent again to restarted shards.
  int64_t restart_resent_transitions() const { return restart_resent_transitions_; }
  // Acked transitions let go before they were durable (retain_bytes).
  int64_t unprotected_transitions() const { return unprotected_transitions_; }
  // Batches acked (once each), and the seconds from their Write to that ack, summed. Past a
  // round trip the mean is time a shard's rate limiter held them: their data ages meanwhile.
  int64_t acked_batches() const { return acked_batches_; }
  double ack_wait_seconds() const { return ack_wait_seconds_; }

 private:
  struct Batch {
    std::vector<zmq::message_t> payload;  // Kept for re-sends.
    uint32_t count = 0;
    int64_t bytes = 0;      // Of the payload.
    uint64_t order = 0;     // Position among all batches written: lower is older.
    double written_at = 0;  // When Write took it.
    double sent_at = 0;
    bool acked = false;  // By an earlier incarnation of the shard.
  };
  struct Shard {
    zmq::socket_t socket;
    uint64_t next_sequence = 0;
    uint64_t incarnation = 0;  // Of the shard's last ack; 0 before the first.
    int window = 0;            // Unacked batches allowed; max_in_flight at first.
    int unheld_acks = 0;       // Since the window last changed.
    std::map<uint64_t, Batch> unacked;
    std::map<uint64_t, Batch> retained;  // Acked, not yet durable.
  };

  void SendBatch(Shard& shard, uint64_t sequence, Batch& batch);
  int PickShard() const;
  // Applies one InsertAck of shard k.
  void Acked(size_t k, uint64_t sequence, const InsertAckMeta& ack);
  // Queues every retained and unacked batch of shard k to be sent at once.
  void ResendAfterRestart(size_t k);
  // Lets go of the oldest retained batches while over retain_bytes.
  void EnforceRetainLimit();
  void Release(Shard& shard, std::map<uint64_t, Batch>::iterator it);
  // Narrows or widens a shard's window by whether its rate limiter held a batch.
  void AdaptWindow(Shard& shard, bool held);

  std::vector<std::string> endpoints_;
  core::Schema schema_;
  uint64_t fingerprint_;  // schema_.Fingerprint(), rendered once.
  WriterOptions options_;
  std::vector<Shard> shards_;
  int next_shard_ = 0;
  uint64_t next_order_ = 0;
  int64_t acked_transitions_ = 0;
  int64_t acked_batches_ = 0;
  double ack_wait_seconds_ = 0;
  int64_t resent_batches_ = 0;
  int64_t retained_transitions_ = 0;
  int64_t retained_bytes_ = 0;
  int64_t restart_resent_transitions_ = 0;
  int64_t unprotected_transitions_ = 0;
  int64_t unprotected_unlogged_ = 0;  // Let go since the last log line about it.
  double unprotected_logged_at_ = -1e9;
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_WRITER_H_
