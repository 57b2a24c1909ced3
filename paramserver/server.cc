#include "paramserver/server.h"

#include <algorithm>
#include <iterator>
#include <optional>

#include "core/curve.h"
#include "core/log.h"
#include "core/wire.h"
#include "paramserver/client.h"

namespace ferry::paramserver {

using core::Message;
using core::MessageType;

namespace {

// ZeroMQ's release of a chunk reply: drops the reference that kept the blob alive.
void ReleaseBlob(void* /*data*/, void* owner) {
  delete static_cast<std::shared_ptr<zmq::message_t>*>(owner);
}

}  // namespace

ParamServer::ParamServer(zmq::context_t& context, ServerOptions options)
    : context_(context),
      options_(std::move(options)),
      router_(context, zmq::socket_type::router),
      pub_(context, zmq::socket_type::pub) {
  router_.set(zmq::sockopt::linger, core::kLingerMs);
  core::SecureServerSocket(router_);
  core::SecureServerSocket(pub_);
  router_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(options_.max_blob_bytes + 4096));
  pub_.set(zmq::sockopt::linger, 0);
  // Conflate the outbound queue too: a high-water mark drops the newest blob
  // when a burst outruns the I/O thread, leaving subscribers on a stale one.
  pub_.set(zmq::sockopt::conflate, 1);
}

Status ParamServer::Bind() {
  try {
    router_.bind(options_.endpoint);
    pub_.bind(options_.broadcast_endpoint);
  } catch (const zmq::error_t& e) {
    return Unavailable("paramserver: cannot bind " + options_.endpoint + " / " +
                       options_.broadcast_endpoint + ": " + e.what());
  }
  return Status::Ok();
}

void ParamServer::Serve(const std::atomic<bool>& stop) {
  std::optional<WeightsSubscriber> upstream;
  if (relay()) {
    upstream.emplace(context_, options_.upstream_endpoint, options_.upstream_broadcast_endpoint);
    upstream->RequestLatest();
  }
  // The ROUTER, and a relay's upstream sockets: a chunk or a broadcast from upstream wakes it.
  std::vector<zmq::pollitem_t> items = {{router_.handle(), 0, ZMQ_POLLIN, 0}};
  if (upstream) {
    for (const zmq::pollitem_t& item : upstream->PollItems()) items.push_back(item);
  }
  const zmq::pollitem_t& item = items.front();
  while (!stop.load(std::memory_order_relaxed)) {
    core::Poll(items.data(), items.size(), 50);
    if (upstream) {
      if (auto blob = upstream->Poll()) {
        WeightsMeta meta;
        meta.version = blob->version;
        meta.bytes = blob->size();
        meta.checksum = blob->checksum;  // Verified by the subscriber.
        Adopt(meta, std::move(blob->frame));
      }
    }
    if (!(item.revents & ZMQ_POLLIN)) continue;
    for (int i = 0; i < 64; ++i) {
      auto frames = core::ReceiveFrames(router_);
      if (frames.empty()) break;
      zmq::message_t routing_id = std::move(frames.front());
      frames.erase(frames.begin());
      auto m = core::Decode(std::move(frames));
      Status status = m.ok() ? Status::Ok() : m.status();
      uint64_t sequence = 0;
      if (m.ok()) {
        sequence = m->header.sequence;
        if (m->header.type == MessageType::kPublishWeights) {
          status = HandlePublish(routing_id, *m);
        } else if (m->header.type == MessageType::kFetchWeights) {
          status = HandleFetch(routing_id, *m);
        } else if (m->header.type == MessageType::kFetchChunk) {
          status = HandleFetchChunk(routing_id, *m);
        } else {
          status = InvalidArgument(std::string("the paramserver does not accept ") +
                                   core::MessageTypeName(m->header.type));
        }
      }
      if (!status.ok()) {
        ++bad_messages_;
        core::Send(router_, MessageType::kError, 0, sequence, core::ErrorPayload(status.message()),
                   &routing_id);
      }
    }
  }
}

Status ParamServer::HandlePublish(const zmq::message_t& routing_id, Message& m) {
  if (relay()) {
    return InvalidArgument("this paramserver relays " + options_.upstream_endpoint +
                           " and takes no publications; publish to the root paramserver");
  }
  WeightsMeta meta;
  FERRY_RETURN_IF_ERROR(core::DecodeMeta(m, &meta));
  if (m.payload.size() != 2 || m.payload[1].size() != meta.bytes) {
    return InvalidArgument("PublishWeights: blob size does not match its metadata");
  }
  if (BlobChecksum(m) != meta.checksum) {
    return InvalidArgument("PublishWeights: blob checksum mismatch");
  }
  if (meta.version <= latest_meta().version) {
    return InvalidArgument("PublishWeights: version " + std::to_string(meta.version) +
                           " is not newer than " + std::to_string(latest_meta().version));
  }
  std::vector<zmq::message_t> ack;
  ack.push_back(core::EncodeMeta(meta));
  core::Send(router_, MessageType::kPublishAck, 0, m.header.sequence, std::move(ack), &routing_id);
  Adopt(meta, std::move(m.payload[1]));
  return Status::Ok();
}

void ParamServer::Adopt(WeightsMeta meta, zmq::message_t blob) {
  meta.chunk_bytes = meta.bytes > options_.chunk_bytes ? options_.chunk_bytes : 0;
  Kept& kept = kept_[meta.version];
  kept.meta = meta;
  kept.blob = std::make_shared<zmq::message_t>(std::move(blob));
  if (meta.chunk_bytes > 0) {
    kept.chunk_checksums.resize((meta.bytes + meta.chunk_bytes - 1) / meta.chunk_bytes);
  }
  ForgetOldVersions();
  latest_version_.store(meta.version);
  std::vector<zmq::message_t> payload;
  uint32_t crc = 0;
  const MessageType type = LatestPayload(&payload, &crc);
  zmq::message_t packed = core::Pack(type, 0, static_cast<uint64_t>(meta.version), payload, crc);
  core::RetryInterrupted([&] { return pub_.send(packed, zmq::send_flags::dontwait); });
}

void ParamServer::ForgetOldVersions() {
  const double now = core::NowSeconds();
  const int64_t latest = kept_.rbegin()->first;
  auto being_fetched = [&](const Kept& kept) {
    return std::any_of(kept.fetchers.begin(), kept.fetchers.end(), [&](const auto& fetcher) {
      return now - fetcher.second <= options_.keep_fetched_s;
    });
  };
  for (auto it = kept_.begin(); it != kept_.end();) {
    it = it->first == latest || being_fetched(it->second) ? std::next(it) : kept_.erase(it);
  }
  while (kept_.size() > kMaxKeptVersions) {
    auto oldest_fetch = kept_.begin();
    for (auto it = kept_.begin(); it->first != latest; ++it) {
      if (it->second.fetched_at < oldest_fetch->second.fetched_at) oldest_fetch = it;
    }
    kept_.erase(oldest_fetch);
  }
  kept_versions_.store(static_cast<int64_t>(kept_.size()));
}

const WeightsMeta& ParamServer::latest_meta() const {
  static const WeightsMeta kNone;  // Version -1: nothing published yet.
  return kept_.empty() ? kNone : kept_.rbegin()->second.meta;
}

Status ParamServer::HandleFetch(const zmq::message_t& routing_id, const Message& m) {
  FetchMeta request;
  FERRY_RETURN_IF_ERROR(core::DecodeMeta(m, &request));
  // The fetcher holds the latest already: its repeated asking costs no blob.
  if (request.have_version >= latest_meta().version) return Status::Ok();
  std::vector<zmq::message_t> payload;
  uint32_t crc = 0;
  const MessageType type = LatestPayload(&payload, &crc);
  core::Send(router_, type, 0, m.header.sequence, std::move(payload), &routing_id, crc);
  return Status::Ok();
}

Status ParamServer::HandleFetchChunk(const zmq::message_t& routing_id, const Message& m) {
  ChunkMeta request;
  FERRY_RETURN_IF_ERROR(core::DecodeMeta(m, &request));
  std::vector<zmq::message_t> payload;
  payload.push_back(core::EncodeMeta(request));
  auto found = kept_.find(request.version);
  if (found == kept_.end()) {  // Superseded and dropped: the reply carries no bytes.
    core::Send(router_, MessageType::kWeightsChunk, 0, m.header.sequence, std::move(payload),
               &routing_id);
    return Status::Ok();
  }
  Kept& kept = found->second;
  const uint64_t chunk = kept.meta.chunk_bytes;
  if (chunk == 0) {
    return InvalidArgument("FetchChunk: version " + std::to_string(request.version) +
                           " is sent whole, not in chunks");
  }
  if (request.offset % chunk != 0 || request.offset >= kept.meta.bytes) {
    return InvalidArgument("FetchChunk: offset " + std::to_string(request.offset) +
                           " is not a chunk of version " + std::to_string(request.version) + " (" +
                           std::to_string(kept.meta.bytes) + " bytes in chunks of " +
                           std::to_string(chunk) + ")");
  }
  const uint64_t size = std::min(chunk, kept.meta.bytes - request.offset);
  uint8_t* data = kept.blob->data<uint8_t>() + request.offset;
  std::optional<uint32_t>& checksum = kept.chunk_checksums[request.offset / chunk];
  if (!checksum) checksum = core::Crc32c(0, data, size);
  kept.fetched_at = core::NowSeconds();
  const std::string fetcher(routing_id.data<char>(), routing_id.size());
  if (request.offset + size == kept.meta.bytes) {
    kept.fetchers.erase(fetcher);
  } else {
    kept.fetchers[fetcher] = kept.fetched_at;
  }
  const uint32_t crc = PayloadChecksum(payload[0], *checksum, size);
  // A view of the stored blob that keeps it alive until ZeroMQ has sent it.
  payload.emplace_back(data, size, &ReleaseBlob, new std::shared_ptr<zmq::message_t>(kept.blob));
  core::Send(router_, MessageType::kWeightsChunk, 0, m.header.sequence, std::move(payload),
             &routing_id, crc);
  return Status::Ok();
}

MessageType ParamServer::LatestPayload(std::vector<zmq::message_t>* payload, uint32_t* crc) const {
  const WeightsMeta& meta = latest_meta();
  payload->push_back(core::EncodeMeta(meta));
  if (meta.chunk_bytes > 0) {
    *crc = core::Crc32c(0, payload->front().data(), payload->front().size());
    return MessageType::kWeightsAnnounce;
  }
  payload->emplace_back();
  if (!kept_.empty()) payload->back().copy(*kept_.rbegin()->second.blob);  // Shared, not copied.
  *crc = PayloadChecksum(payload->front(), meta.checksum, meta.bytes);
  return MessageType::kWeights;
}

}  // namespace ferry::paramserver
