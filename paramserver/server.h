// The parameter server: keeps the latest versioned weight blob and spreads it.
//
//   PublishWeights (ROUTER) -> checksum verified -> stored as latest (older
//   versions refused) -> PublishAck -> one packed Weights frame on PUB
//   FetchWeights (ROUTER)   -> Weights reply with the latest blob
//
// Subscribers set ZMQ_CONFLATE, so a slow actor holds only the newest version
// and never a queue of old ones. Serve() runs on one thread and owns both
// sockets; latest_version() may be read from any thread.
//
// A relay (ServerOptions::upstream_endpoint set) takes no publications: it
// follows another paramserver as a subscriber does (fetch at start, then the
// broadcast) and serves what it receives to its own subscribers, so a tree of
// paramservers spreads one learner's weights to many hosts' actors.
#ifndef FERRY_PARAMSERVER_SERVER_H_
#define FERRY_PARAMSERVER_SERVER_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <zmq.hpp>

#include "core/status.h"
#include "core/wire.h"
#include "paramserver/protocol.h"

namespace ferry::paramserver {

struct ServerOptions {
  std::string endpoint;            // ROUTER: publish and fetch.
  std::string broadcast_endpoint;  // PUB.
  uint64_t max_blob_bytes = kMaxBlobBytes;
  // Relay mode: the upstream paramserver's ROUTER and PUB endpoints (empty: a root server).
  std::string upstream_endpoint;
  std::string upstream_broadcast_endpoint;
};

class ParamServer {
 public:
  ParamServer(zmq::context_t& context, ServerOptions options);
  Status Bind();
  void Serve(const std::atomic<bool>& stop);
  int64_t latest_version() const { return latest_version_.load(); }
  int64_t bad_messages() const { return bad_messages_.load(); }

 private:
  Status HandlePublish(const zmq::message_t& routing_id, core::Message& m);
  // Makes `blob` the latest version and broadcasts it.
  void Adopt(const WeightsMeta& meta, zmq::message_t& blob);
  void HandleFetch(const zmq::message_t& routing_id, const core::Message& m);
  std::vector<zmq::message_t> LatestPayload() const;

  bool relay() const { return !options_.upstream_endpoint.empty(); }

  zmq::context_t& context_;
  ServerOptions options_;
  zmq::socket_t router_;
  zmq::socket_t pub_;
  WeightsMeta meta_;
  mutable zmq::message_t blob_;  // copy() shares it by reference count.
  std::atomic<int64_t> latest_version_{-1};
  std::atomic<int64_t> bad_messages_{0};
};

}  // namespace ferry::paramserver

#endif  // FERRY_PARAMSERVER_SERVER_H_
