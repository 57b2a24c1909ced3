#include "replay/writer.h"

#include <algorithm>
#include <memory>

#include "core/curve.h"
#include "core/log.h"
#include "core/wire.h"
#include "replay/protocol.h"

namespace ferry::replay {

using core::MessageType;

namespace {

// A frame that takes over `bytes` instead of copying them. ZeroMQ frees the
// buffer when the last message sharing it is gone (a re-send shares it too),
// possibly on one of its I/O threads.
template <typename T>
zmq::message_t Adopt(std::vector<T> bytes) {
  if (bytes.empty()) return zmq::message_t();
  auto owned = std::make_unique<std::vector<T>>(std::move(bytes));
  void* data = owned->data();
  const size_t size = owned->size() * sizeof(T);
  zmq::message_t frame(
      data, size, [](void*, void* hint) { delete static_cast<std::vector<T>*>(hint); },
      owned.get());
  owned.release();
  return frame;
}

}  // namespace

ReplayWriter::ReplayWriter(zmq::context_t& context, std::vector<std::string> endpoints,
                           core::Schema schema, WriterOptions options)
    : endpoints_(std::move(endpoints)),
      schema_(std::move(schema)),
      fingerprint_(schema_.Fingerprint()),
      options_(options) {
  for (const auto& endpoint : endpoints_) {
    Shard shard{
        zmq::socket_t(context, zmq::socket_type::dealer), 0, 0, options_.max_in_flight, 0, {}, {}};
    shard.socket.set(zmq::sockopt::linger, core::kLingerMs);
    shard.socket.set(zmq::sockopt::maxmsgsize, int64_t{64} << 10);  // Acks are small.
    shard.socket.set(zmq::sockopt::reconnect_ivl, kReconnectIntervalMs);
    shard.socket.set(zmq::sockopt::reconnect_ivl_max, kReconnectIntervalMaxMs);
    core::SecureClientSocket(shard.socket);
    shard.socket.connect(endpoint);
    shards_.push_back(std::move(shard));
  }
}

int64_t ReplayWriter::in_flight() const {
  int64_t n = 0;
  for (const auto& s : shards_) n += static_cast<int64_t>(s.unacked.size());
  return n;
}

int64_t ReplayWriter::window() const {
  int64_t n = 0;
  for (const auto& s : shards_) n += s.window;
  return n;
}

int ReplayWriter::PickShard() const {
  const int k = static_cast<int>(shards_.size());
  for (int i = 0; i < k; ++i) {
    const int candidate = (next_shard_ + i) % k;
    if (static_cast<int>(shards_[candidate].unacked.size()) < shards_[candidate].window) {
      return candidate;
    }
  }
  return -1;
}

void ReplayWriter::SendBatch(Shard& shard, uint64_t sequence, Batch& batch) {
  std::vector<zmq::message_t> copies;
  for (auto& frame : batch.payload) {
    copies.emplace_back();
    copies.back().copy(frame);  // Shares the buffer; nothing is duplicated.
  }
  core::Send(shard.socket, MessageType::kInsertBatch, options_.actor_id, sequence,
             std::move(copies));
  batch.sent_at = core::NowSeconds();
}

Status ReplayWriter::Write(int count, std::vector<std::vector<uint8_t>> columns,
                           std::vector<float> priorities, const std::atomic<bool>& stop) {
  FERRY_CHECK(columns.size() == schema_.columns.size());
  FERRY_CHECK(priorities.size() == static_cast<size_t>(count));
  int k = PickShard();
  double waiting_since = core::NowSeconds();
  double last_report = waiting_since;
  while (k < 0) {
    if (stop.load()) return Unavailable("stopping with every replay window full");
    Poll(/*timeout_ms=*/50);
    k = PickShard();
    const double now = core::NowSeconds();
    if (k < 0 && now - last_report > 10) {
      core::Log(
          "waiting %.0f s for replay acks (%lld batches in flight); shards may be down or "
          "rate-limiting",
          now - waiting_since, static_cast<long long>(in_flight()));
      last_report = now;
    }
  }
  next_shard_ = (k + 1) % static_cast<int>(shards_.size());

  InsertMeta meta;
  meta.schema_fingerprint = fingerprint_;
  meta.actor_epoch = options_.epoch;
  meta.count = static_cast<uint32_t>(count);
  Batch batch;
  batch.count = meta.count;
  batch.order = next_order_++;
  batch.written_at = core::NowSeconds();
  batch.payload.push_back(core::EncodeMeta(meta));
  for (auto& column : columns) batch.payload.push_back(Adopt(std::move(column)));
  batch.payload.push_back(Adopt(std::move(priorities)));
  for (const auto& frame : batch.payload) batch.bytes += static_cast<int64_t>(frame.size());

  Shard& shard = shards_[k];
  const uint64_t sequence = shard.next_sequence++;
  // While a shard is down its queue on our side fills up, and a send into a full queue would
  // block this actor for good: without room the batch stays unsent (sent_at 0) and Poll sends it
  // once there is.
  if (core::CanSend(shard.socket)) SendBatch(shard, sequence, batch);
  shard.unacked.emplace(sequence, std::move(batch));
  Poll(0);
  return Status::Ok();
}

void ReplayWriter::Poll(int timeout_ms) {
  std::vector<zmq::pollitem_t> items;
  for (auto& s : shards_) items.push_back({s.socket.handle(), 0, ZMQ_POLLIN, 0});
  core::Poll(items.data(), items.size(), timeout_ms);
  for (size_t k = 0; k < shards_.size(); ++k) {
    Shard& shard = shards_[k];
    while (true) {
      auto frames = core::ReceiveFrames(shard.socket);
      if (frames.empty()) break;
      auto m = core::Decode(std::move(frames));
      if (!m.ok()) {
        core::Log("malformed reply from %s: %s", endpoints_[k].c_str(),
                  m.status().message().c_str());
        continue;
      }
      if (m->header.type == MessageType::kError) {
        core::Log("replay shard %s refused batch %llu: %s", endpoints_[k].c_str(),
                  static_cast<unsigned long long>(m->header.sequence), core::ErrorText(*m).c_str());
        continue;
      }
      if (m->header.type != MessageType::kInsertAck) continue;
      InsertAckMeta ack;
      if (Status decoded = core::DecodeMeta(*m, &ack); !decoded.ok()) {
        core::Log("malformed ack from %s: %s", endpoints_[k].c_str(), decoded.message().c_str());
        continue;
      }
      Acked(k, m->header.sequence, ack);
    }
    const double now = core::NowSeconds();
    for (auto& [sequence, batch] : shard.unacked) {
      if (now - batch.sent_at < options_.resend_after) continue;
      if (!core::CanSend(shard.socket)) break;
      SendBatch(shard, sequence, batch);
      ++resent_batches_;
    }
  }
}

void ReplayWriter::Acked(size_t k, uint64_t sequence, const InsertAckMeta& ack) {
  Shard& shard = shards_[k];
  // First what this incarnation holds durably, so a restarted shard is sent
  // only what its snapshot lacks.
  const uint64_t durable_through = ack.snapshots ? ack.durable_through : UINT64_MAX;
  while (!shard.retained.empty() && shard.retained.begin()->first < durable_through) {
    Release(shard, shard.retained.begin());
  }
  if (ack.incarnation != shard.incarnation) {
    if (shard.incarnation != 0) ResendAfterRestart(k);
    shard.incarnation = ack.incarnation;
  }
  auto it = shard.unacked.find(sequence);
  if (it == shard.unacked.end()) return;  // Ack of a re-send already acked.
  Batch batch = std::move(it->second);
  shard.unacked.erase(it);
  AdaptWindow(shard, ack.held != 0);
  if (!batch.acked) {
    acked_transitions_ += batch.count;
    ++acked_batches_;
    ack_wait_seconds_ += core::NowSeconds() - batch.written_at;
  }
  if (sequence < durable_through) return;
  batch.acked = true;
  retained_transitions_ += batch.count;
  retained_bytes_ += batch.bytes;
  shard.retained.emplace(sequence, std::move(batch));
  EnforceRetainLimit();
}

void ReplayWriter::AdaptWindow(Shard& shard, bool held) {
  if (held) {
    shard.window = std::max(1, shard.window / 2);
    shard.unheld_acks = 0;
  } else if (shard.window < options_.max_in_flight && ++shard.unheld_acks >= shard.window) {
    ++shard.window;
    shard.unheld_acks = 0;
  }
}

void ReplayWriter::Release(Shard& shard, std::map<uint64_t, Batch>::iterator it) {
  retained_transitions_ -= it->second.count;
  retained_bytes_ -= it->second.bytes;
  shard.retained.erase(it);
}

void ReplayWriter::ResendAfterRestart(size_t k) {
  Shard& shard = shards_[k];
  const size_t batches = shard.retained.size();
  int64_t transitions = 0;
  for (auto& [sequence, batch] : shard.retained) {
    transitions += batch.count;
    retained_bytes_ -= batch.bytes;
    shard.unacked.emplace(sequence, std::move(batch));
  }
  shard.retained.clear();
  retained_transitions_ -= transitions;
  restart_resent_transitions_ += transitions;
  for (auto& [sequence, batch] : shard.unacked) batch.sent_at = 0;  // Due at once.
  core::Log(
      "replay shard %s restarted: sending it again %lld acked transitions (%zu batches) not yet "
      "in a snapshot, and %zu unacked batches in all",
      endpoints_[k].c_str(), static_cast<long long>(transitions), batches, shard.unacked.size());
}

void ReplayWriter::EnforceRetainLimit() {
  while (retained_bytes_ > options_.retain_bytes) {
    Shard* oldest = nullptr;
    for (Shard& s : shards_) {
      if (s.retained.empty()) continue;
      if (oldest == nullptr ||
          s.retained.begin()->second.order < oldest->retained.begin()->second.order) {
        oldest = &s;
      }
    }
    FERRY_CHECK(oldest != nullptr);  // retained_bytes_ > 0 means something is retained.
    const int64_t count = oldest->retained.begin()->second.count;
    Release(*oldest, oldest->retained.begin());
    unprotected_transitions_ += count;
    unprotected_unlogged_ += count;
  }
  const double now = core::NowSeconds();
  if (unprotected_unlogged_ == 0 || now - unprotected_logged_at_ < 10) return;
  core::Log(
      "actors.retain_bytes (%lld bytes) reached: %lld more acked transitions let go before a "
      "shard snapshot held them (%lld in all); a shard killed now loses them. Raise "
      "actors.retain_bytes or lower replay.snapshot_period_seconds",
      static_cast<long long>(options_.retain_bytes), static_cast<long long>(unprotected_unlogged_),
      static_cast<long long>(unprotected_transitions_));
  unprotected_unlogged_ = 0;
  unprotected_logged_at_ = now;
}

Status ReplayWriter::Flush(double timeout_seconds) {
  const double deadline = core::NowSeconds() + timeout_seconds;
  while (in_flight() > 0) {
    if (core::NowSeconds() >= deadline) {
      return DeadlineExceeded(std::to_string(in_flight()) + " batches still unacked");
    }
    Poll(20);
  }
  return Status::Ok();
}

}  // namespace ferry::replay
