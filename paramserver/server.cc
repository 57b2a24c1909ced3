#include "paramserver/server.h"

#include <optional>

#include "core/curve.h"
#include "core/log.h"
#include "paramserver/client.h"

namespace ferry::paramserver {

using core::Message;
using core::MessageType;

ParamServer::ParamServer(zmq::context_t& context, ServerOptions options)
    : context_(context),
      options_(std::move(options)),
      router_(context, zmq::socket_type::router),
      pub_(context, zmq::socket_type::pub) {
  router_.set(zmq::sockopt::linger, 0);
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
  zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
  while (!stop.load(std::memory_order_relaxed)) {
    // A relay also checks its upstream between polls: a few ms added per tree level.
    core::Poll(&item, 1, relay() ? 2 : 50);
    if (upstream) {
      if (auto blob = upstream->Poll()) {
        WeightsMeta meta;
        meta.version = blob->version;
        meta.bytes = blob->size();
        meta.checksum = blob->checksum;  // Verified by the subscriber.
        Adopt(meta, blob->frame);
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
          HandleFetch(routing_id, *m);
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
  if (meta.version <= meta_.version) {
    return InvalidArgument("PublishWeights: version " + std::to_string(meta.version) +
                           " is not newer than " + std::to_string(meta_.version));
  }
  std::vector<zmq::message_t> ack;
  ack.push_back(core::EncodeMeta(meta));
  core::Send(router_, MessageType::kPublishAck, 0, m.header.sequence, std::move(ack), &routing_id);
  Adopt(meta, m.payload[1]);
  return Status::Ok();
}

void ParamServer::Adopt(const WeightsMeta& meta, zmq::message_t& blob) {
  meta_ = meta;
  blob_.copy(blob);
  latest_version_.store(meta.version);
  const std::vector<zmq::message_t> payload = LatestPayload();
  pub_.send(core::Pack(MessageType::kWeights, 0, static_cast<uint64_t>(meta_.version), payload,
                       PayloadChecksum(payload[0], meta_)),
            zmq::send_flags::dontwait);
}

void ParamServer::HandleFetch(const zmq::message_t& routing_id, const Message& m) {
  std::vector<zmq::message_t> payload = LatestPayload();
  const uint32_t payload_crc = PayloadChecksum(payload[0], meta_);
  core::Send(router_, MessageType::kWeights, 0, m.header.sequence, std::move(payload), &routing_id,
             payload_crc);
}

std::vector<zmq::message_t> ParamServer::LatestPayload() const {
  std::vector<zmq::message_t> payload;
  payload.push_back(core::EncodeMeta(meta_));
  payload.emplace_back();
  payload.back().copy(blob_);
  return payload;
}

}  // namespace ferry::paramserver
