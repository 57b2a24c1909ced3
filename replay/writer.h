// The actor's side of ingestion: exactly-once, back-pressured InsertBatch.
//
//   Write(batch) -> next shard (round robin) with window room -> InsertBatch
//   Poll()       -> InsertAck frees the window slot; batches unacked for
//                   resend_after seconds are sent again (the shard drops the
//                   duplicates by (actor, sequence))
//
// Each shard gets its own sequence numbers. When every window is full, Write
// waits for acks (logging what it waits for) instead of dropping anything.
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

namespace ferry::replay {

struct WriterOptions {
  uint32_t actor_id = 0;
  uint64_t epoch = 0;            // Grows with every process start (e.g. its start time).
  int max_in_flight = 8;         // Unacked batches per shard.
  double resend_after = 2.0;     // Seconds without an ack before re-sending.
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

  int64_t acked_transitions() const { return acked_transitions_; }
  int64_t resent_batches() const { return resent_batches_; }
  int64_t in_flight() const;

 private:
  struct Batch {
    std::vector<zmq::message_t> payload;  // Kept for re-sends.
    uint32_t count = 0;
    double sent_at = 0;
  };
  struct Shard {
    zmq::socket_t socket;
    uint64_t next_sequence = 0;
    std::map<uint64_t, Batch> unacked;
  };

  void SendBatch(Shard& shard, uint64_t sequence, Batch& batch);
  int PickShard() const;

  std::vector<std::string> endpoints_;
  core::Schema schema_;
  uint64_t fingerprint_;  // schema_.Fingerprint(), rendered once.
  WriterOptions options_;
  std::vector<Shard> shards_;
  int next_shard_ = 0;
  int64_t acked_transitions_ = 0;
  int64_t resent_batches_ = 0;
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_WRITER_H_
