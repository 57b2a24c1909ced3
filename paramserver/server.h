// The parameter server: keeps the latest versioned weight blob and spreads it.
//
//   PublishWeights (ROUTER) -> checksum verified -> stored as latest (older
//   versions refused) -> PublishAck -> one packed Weights frame on PUB, or for
//   a blob over options.chunk_bytes a WeightsAnnounce
//   FetchWeights (ROUTER)   -> the latest: Weights, or WeightsAnnounce
//   FetchChunk (ROUTER)     -> WeightsChunk, a view of the stored blob
//
// Subscribers set ZMQ_CONFLATE, so a slow actor holds only the newest version
// and never a queue of old ones. A chunked version stays fetchable while
// subscribers fetch it: the server keeps the latest version plus, at most
// kMaxKeptVersions - 1 older ones that a subscriber has started and not
// finished (asked for its last chunk), with a request within
// options.keep_fetched_s; a FetchChunk for any other version is answered with
// an empty WeightsChunk and the subscriber moves to the latest. Serve() runs on one thread and owns
// both sockets; latest_version() may be read from any thread.
//
// A relay (ServerOptions::upstream_endpoint set) takes no publications: it
// follows another paramserver as a subscriber does (fetch at start, then the
// broadcast) and serves what it receives to its own subscribers, so a tree of
// paramservers spreads one learner's weights to many hosts' actors.
#ifndef FERRY_PARAMSERVER_SERVER_H_
#define FERRY_PARAMSERVER_SERVER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "core/status.h"
#include "core/wire.h"
#include "paramserver/protocol.h"

namespace ferry::paramserver {

struct ServerOptions {
  std::string endpoint;            // ROUTER: publish and fetch.
  std::string broadcast_endpoint;  // PUB.
  uint64_t max_blob_bytes = kMaxBlobBytes;
  uint64_t chunk_bytes = kChunkBytes;  // Larger blobs are announced and fetched in chunks.
  double keep_fetched_s = 2.0;         // How long an unfinished fetch keeps an older version.
  // Relay mode: the upstream paramserver's ROUTER and PUB endpoints (empty: a root server).
  std::string upstream_endpoint;
  std::string upstream_broadcast_endpoint;
};

class ParamServer {
 public:
  static constexpr size_t kMaxKeptVersions = 4;

  ParamServer(zmq::context_t& context, ServerOptions options);
  Status Bind();
  void Serve(const std::atomic<bool>& stop);
  int64_t latest_version() const { return latest_version_.load(); }
  int64_t bad_messages() const { return bad_messages_.load(); }
  // Versions held: the latest and older ones kept for fetches under way.
  int64_t kept_versions() const { return kept_versions_.load(); }

 private:
  // A version held for broadcast and fetches.
  struct Kept {
    WeightsMeta meta;  // chunk_bytes > 0: fetched in chunks.
    std::shared_ptr<zmq::message_t> blob;
    std::vector<std::optional<uint32_t>> chunk_checksums;  // Each computed at its first fetch.
    // Subscribers (routing ids) fetching it, each with the core::NowSeconds() of its latest
    // request; one leaves when it asks for the last chunk.
    std::map<std::string, double> fetchers;
    double fetched_at = -1;  // The latest request's time; -1: none.
  };

  Status HandlePublish(const zmq::message_t& routing_id, core::Message& m);
  // Makes `blob` the latest version and broadcasts it (or announces it).
  void Adopt(WeightsMeta meta, zmq::message_t blob);
  // Drops older versions no subscriber is fetching, down to kMaxKeptVersions.
  void ForgetOldVersions();
  // Answers with the latest version's message, unless the fetcher holds that version already.
  Status HandleFetch(const zmq::message_t& routing_id, const core::Message& m);
  Status HandleFetchChunk(const zmq::message_t& routing_id, const core::Message& m);
  // The latest version's message, Weights or WeightsAnnounce, and its payload checksum.
  core::MessageType LatestPayload(std::vector<zmq::message_t>* payload, uint32_t* crc) const;
  const WeightsMeta& latest_meta() const;

  bool relay() const { return !options_.upstream_endpoint.empty(); }

  zmq::context_t& context_;
  ServerOptions options_;
  zmq::socket_t router_;
  zmq::socket_t pub_;
  std::map<int64_t, Kept> kept_;  // By version; the last is the latest.
  std::atomic<int64_t> latest_version_{-1};
  std::atomic<int64_t> bad_messages_{0};
  std::atomic<int64_t> kept_versions_{0};
};

}  // namespace ferry::paramserver

#endif  // FERRY_PARAMSERVER_SERVER_H_
