#include "replay/writer.h"

#include <memory>

#include "core/curve.h"
#include "core/log.h"
#include "core/wire.h"
#include "replay/protocol.h"

namespace ferry::replay {

using core::MessageType;

namespace {

// While a shard is down its queue on our side fills up; a send into a full
// queue would block this actor for good, so sends wait for room instead.
bool HasRoom(zmq::socket_t& socket) {
  return (socket.get(zmq::sockopt::events) & ZMQ_POLLOUT) != 0;
}

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
    Shard shard{zmq::socket_t(context, zmq::socket_type::dealer), 0, {}};
    shard.socket.set(zmq::sockopt::linger, 0);
    shard.socket.set(zmq::sockopt::maxmsgsize, int64_t{64} << 10);  // Acks are small.
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

int ReplayWriter::PickShard() const {
  const int k = static_cast<int>(shards_.size());
  for (int i = 0; i < k; ++i) {
    const int candidate = (next_shard_ + i) % k;
    if (static_cast<int>(shards_[candidate].unacked.size()) < options_.max_in_flight) {
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
  batch.payload.push_back(core::EncodeMeta(meta));
  for (auto& column : columns) batch.payload.push_back(Adopt(std::move(column)));
  batch.payload.push_back(Adopt(std::move(priorities)));

  Shard& shard = shards_[k];
  const uint64_t sequence = shard.next_sequence++;
  // Without room it stays unsent (sent_at 0) and Poll sends it once there is.
  if (HasRoom(shard.socket)) SendBatch(shard, sequence, batch);
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
      auto it = shard.unacked.find(m->header.sequence);
      if (it == shard.unacked.end()) continue;  // Ack of a re-send already acked.
      acked_transitions_ += it->second.count;
      shard.unacked.erase(it);
    }
    const double now = core::NowSeconds();
    for (auto& [sequence, batch] : shard.unacked) {
      if (now - batch.sent_at < options_.resend_after) continue;
      if (!HasRoom(shard.socket)) break;
      SendBatch(shard, sequence, batch);
      ++resent_batches_;
    }
  }
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
