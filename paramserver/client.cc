#include "paramserver/client.h"

#include <algorithm>
#include <cstring>

#include "core/crc32c.h"
#include "core/curve.h"
#include "core/log.h"
#include "core/wire.h"
#include "paramserver/protocol.h"

namespace ferry::paramserver {

using core::Message;
using core::MessageType;

namespace {

// The longest Publish waits for room in its send queue.
constexpr int kPublishWaitMs = 50;
// How long Poll waits without a new version before it repeats a RequestLatest.
constexpr double kRequestRepeatS = 1.0;
// How long a chunked fetch waits for an answer before it asks again.
constexpr double kChunkRetryS = 1.0;

}  // namespace

WeightsPublisher::WeightsPublisher(zmq::context_t& context, const std::string& endpoint)
    : endpoint_(endpoint), socket_(context, zmq::socket_type::dealer) {
  socket_.set(zmq::sockopt::linger, core::kLingerMs);
  socket_.set(zmq::sockopt::sndhwm, 4);
  core::SecureClientSocket(socket_);
  socket_.connect(endpoint);
}

void WeightsPublisher::Publish(int64_t version, const void* data, size_t bytes) {
  DrainReplies();
  // A DEALER's send blocks for as long as its queue is full (server down or
  // stalled). Give a burst a moment to drain, then skip this version: the
  // learner must not hang, and the next version supersedes this one anyway.
  zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLOUT, 0};
  core::Poll(&item, 1, kPublishWaitMs);
  if (!(item.revents & ZMQ_POLLOUT)) {
    core::Log("paramserver %s is not taking weights; version %lld skipped", endpoint_.c_str(),
              static_cast<long long>(version));
    return;
  }
  WeightsMeta meta;
  meta.version = version;
  meta.bytes = bytes;
  meta.checksum = core::Crc32c(0, data, bytes);
  std::vector<zmq::message_t> payload;
  payload.push_back(core::EncodeMeta(meta));
  payload.emplace_back(data, bytes);
  const uint32_t payload_crc = PayloadChecksum(payload[0], meta.checksum, meta.bytes);
  core::Send(socket_, MessageType::kPublishWeights, 0, static_cast<uint64_t>(version),
             std::move(payload), nullptr, payload_crc);
}

void WeightsPublisher::DrainReplies() {
  while (true) {
    auto frames = core::ReceiveFrames(socket_);
    if (frames.empty()) return;
    auto m = core::Decode(std::move(frames));
    if (!m.ok()) continue;
    if (m->header.type == MessageType::kError) {
      core::Log("paramserver %s refused weights: %s", endpoint_.c_str(),
                core::ErrorText(*m).c_str());
    } else if (m->header.type == MessageType::kPublishAck) {
      acked_version_ = static_cast<int64_t>(m->header.sequence);
    }
  }
}

WeightsSubscriber::WeightsSubscriber(zmq::context_t& context, const std::string& endpoint,
                                     const std::string& broadcast_endpoint)
    : endpoint_(endpoint),
      dealer_(context, zmq::socket_type::dealer),
      sub_(context, zmq::socket_type::sub),
      last_heard_(core::NowSeconds()) {
  dealer_.set(zmq::sockopt::linger, core::kLingerMs);
  // A blob bigger than any server accepts is dropped by ZeroMQ before it is allocated.
  for (zmq::socket_t* s : {&dealer_, &sub_}) {
    s->set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(kMaxBlobBytes + 4096));
  }
  core::SecureClientSocket(dealer_);
  core::SecureClientSocket(sub_);
  dealer_.connect(endpoint);
  sub_.set(zmq::sockopt::linger, 0);
  sub_.set(zmq::sockopt::conflate, 1);  // Must precede connect.
  sub_.set(zmq::sockopt::subscribe, "");
  sub_.connect(broadcast_endpoint);
}

void WeightsSubscriber::RequestLatest() {
  FetchMeta meta;
  meta.have_version = version_;
  std::vector<zmq::message_t> payload;
  payload.push_back(core::EncodeMeta(meta));
  core::Send(dealer_, MessageType::kFetchWeights, 0, next_sequence_++, std::move(payload));
  last_heard_ = core::NowSeconds();
}

std::vector<zmq::pollitem_t> WeightsSubscriber::PollItems() {
  return {{dealer_.handle(), 0, ZMQ_POLLIN, 0}, {sub_.handle(), 0, ZMQ_POLLIN, 0}};
}

std::optional<WeightsBlob> WeightsSubscriber::Poll() {
  if (!fetch_ && core::NowSeconds() - last_heard_ >= kRequestRepeatS) RequestLatest();
  std::optional<WeightsBlob> newest;
  zmq::message_t packed;
  while (core::RetryInterrupted([&] { return sub_.recv(packed, zmq::recv_flags::dontwait); })) {
    Receive(core::Unpack(std::move(packed)), &newest);
  }
  while (true) {
    auto frames = core::ReceiveFrames(dealer_);
    if (frames.empty()) break;
    Receive(core::Decode(std::move(frames)), &newest);
  }
  AdvanceFetch();
  return newest;
}

void WeightsSubscriber::Receive(Result<Message> m, std::optional<WeightsBlob>* newest) {
  if (!m.ok()) {  // Damaged on the way (its wire checksum) or not a ferry message.
    ++rejected_;
    return;
  }
  switch (m->header.type) {
    case MessageType::kWeights:
      OnWeights(*m, newest);
      break;
    case MessageType::kWeightsAnnounce:
      OnAnnounce(*m);
      break;
    case MessageType::kWeightsChunk:
      OnChunk(*m, newest);
      break;
    default:
      break;
  }
}

void WeightsSubscriber::Take(WeightsBlob blob, std::optional<WeightsBlob>* newest) {
  if (blob.version <= version_) return;
  version_ = blob.version;
  last_heard_ = core::NowSeconds();
  *newest = std::move(blob);
  if (fetch_ && fetch_->meta.version <= version_) fetch_.reset();
}

void WeightsSubscriber::OnWeights(Message& m, std::optional<WeightsBlob>* newest) {
  WeightsMeta meta;
  if (!core::DecodeMeta(m, &meta).ok() || m.payload.size() != 2 ||
      m.payload[1].size() != meta.bytes || BlobChecksum(m) != meta.checksum) {
    ++rejected_;
    return;
  }
  Take(WeightsBlob{meta.version, meta.checksum, std::move(m.payload[1])}, newest);
}

void WeightsSubscriber::OnAnnounce(const Message& m) {
  WeightsMeta meta;
  if (!core::DecodeMeta(m, &meta).ok() || m.payload.size() != 1 || meta.chunk_bytes == 0 ||
      meta.bytes > kMaxBlobBytes) {
    ++rejected_;
    return;
  }
  if (meta.version > announced_.version) announced_ = meta;
}

void WeightsSubscriber::OnChunk(Message& m, std::optional<WeightsBlob>* newest) {
  ChunkMeta chunk;
  if (!core::DecodeMeta(m, &chunk).ok() || m.payload.size() > 2) {
    ++rejected_;
    return;
  }
  if (!fetch_ || chunk.version != fetch_->meta.version) return;  // Of a fetch given up.
  ChunkedFetch& fetch = *fetch_;
  if (m.payload.size() == 1) {  // The server no longer keeps this version: ask for its latest.
    if (announced_.version == fetch.meta.version) announced_ = WeightsMeta{};
    fetch_.reset();
    RequestLatest();
    return;
  }
  if (chunk.offset != fetch.received) return;  // Answer to a request asked again.
  const uint64_t size = std::min(fetch.meta.chunk_bytes, fetch.meta.bytes - fetch.received);
  // A chunk of the wrong size, or a blob whose chunks do not add up to its checksum, is
  // refused; its version is not fetched again, a newer announcement starts the next fetch.
  auto refuse = [&] {
    ++rejected_;
    refused_version_ = fetch.meta.version;
    fetch_.reset();
  };
  if (m.payload[1].size() != size) return refuse();
  std::memcpy(fetch.blob.data<uint8_t>() + fetch.received, m.payload[1].data(), size);
  fetch.checksum = core::Crc32cConcat(fetch.checksum, BlobChecksum(m), size);
  fetch.received += size;
  fetch.progressed_at = core::NowSeconds();
  if (fetch.received < fetch.meta.bytes) return RequestChunks();
  if (fetch.checksum != fetch.meta.checksum) return refuse();
  WeightsBlob blob{fetch.meta.version, fetch.checksum, std::move(fetch.blob)};
  fetch_.reset();
  Take(std::move(blob), newest);
}

void WeightsSubscriber::AdvanceFetch() {
  const double now = core::NowSeconds();
  if (!fetch_ && announced_.version > std::max(version_, refused_version_)) {
    fetch_.emplace();
    fetch_->meta = announced_;
    fetch_->blob = zmq::message_t(announced_.bytes);
    fetch_->progressed_at = now;
    RequestChunks();
  } else if (fetch_ && now - fetch_->progressed_at >= kChunkRetryS && core::CanSend(dealer_)) {
    // Unanswered for a while (the server restarted, or its replies were lost): ask again
    // for every chunk not in place, unless the server is not even taking requests.
    fetch_->requested = fetch_->received;
    fetch_->progressed_at = now;
    RequestChunks();
  }
}

void WeightsSubscriber::RequestChunks() {
  ChunkedFetch& fetch = *fetch_;
  const uint64_t window = kChunkWindow * fetch.meta.chunk_bytes;
  while (fetch.requested < fetch.meta.bytes && fetch.requested - fetch.received < window) {
    ChunkMeta chunk;
    chunk.version = fetch.meta.version;
    chunk.offset = fetch.requested;
    std::vector<zmq::message_t> payload;
    payload.push_back(core::EncodeMeta(chunk));
    core::Send(dealer_, MessageType::kFetchChunk, 0, next_sequence_++, std::move(payload));
    fetch.requested = std::min(fetch.meta.bytes, fetch.requested + fetch.meta.chunk_bytes);
  }
}

}  // namespace ferry::paramserver
