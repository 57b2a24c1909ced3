// Both ends of the weight flow that talk to a ParamServer.
//
// WeightsPublisher (learner rank 0): Publish() queues the blob and returns; if
// the send queue stays full for 50 ms (server down or stalled) it skips that
// version rather than block. Acks and refusals are collected on later calls, so
// the learner never waits on the server.
// WeightsSubscriber (actor): Poll() never blocks; it returns the newest blob
// that arrived on the broadcast (ZMQ_CONFLATE keeps only the latest) or as the
// answer to RequestLatest(), the fetch used at start-up and after a reconnect.
// Until a first version arrives, Poll repeats a RequestLatest once a second:
// a server asked before it held weights does not answer later, and the
// broadcast of its first version can pass a subscriber still connecting.
// A blob announced in chunks is fetched by Poll itself, kChunkWindow chunks in
// flight, into one buffer: a fetch under way is finished before the newest
// announced version is started (so versions published faster than a fetch takes
// cannot starve it), unless the server has dropped its version. Chunks asked
// for and not answered within a second are asked for again.
// Each object is used from one thread.
#ifndef FERRY_PARAMSERVER_CLIENT_H_
#define FERRY_PARAMSERVER_CLIENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "core/status.h"
#include "core/wire.h"
#include "paramserver/protocol.h"

namespace ferry::paramserver {

struct WeightsBlob {
  int64_t version = -1;
  uint32_t checksum = 0;  // CRC32C of the bytes, verified on receipt.
  zmq::message_t frame;   // The bytes as received: a view of the message, not a copy.
  const uint8_t* data() const { return frame.data<uint8_t>(); }
  size_t size() const { return frame.size(); }
};

class WeightsPublisher {
 public:
  WeightsPublisher(zmq::context_t& context, const std::string& endpoint);
  void Publish(int64_t version, const void* data, size_t bytes);
  int64_t acked_version() const { return acked_version_; }

 private:
  void DrainReplies();

  std::string endpoint_;
  zmq::socket_t socket_;
  int64_t acked_version_ = -1;
};

class WeightsSubscriber {
 public:
  WeightsSubscriber(zmq::context_t& context, const std::string& endpoint,
                    const std::string& broadcast_endpoint);
  // Asks the server for its latest version; it answers only if it holds a newer one than this
  // subscriber. Poll asks again after every second without a new version: a broadcast can be
  // lost (a conflated PUB/SUB pair drops one now and then), and then nothing newer may come.
  void RequestLatest();
  // The newest blob newer than any returned before, if one is waiting.
  std::optional<WeightsBlob> Poll();
  int64_t version() const { return version_; }
  // Its two sockets, for a caller that waits on them with zmq::poll before calling Poll.
  std::vector<zmq::pollitem_t> PollItems();
  // The version being fetched in chunks; -1: none.
  int64_t fetching_version() const { return fetch_ ? fetch_->meta.version : -1; }
  int64_t rejected() const { return rejected_; }

  static constexpr int kChunkWindow = 4;

 private:
  // A chunked version being assembled; chunks arrive in order into `blob`.
  struct ChunkedFetch {
    WeightsMeta meta;
    zmq::message_t blob;
    uint64_t received = 0;     // Bytes in place.
    uint64_t requested = 0;    // Bytes asked for.
    uint32_t checksum = 0;     // CRC32C of the bytes in place.
    double progressed_at = 0;  // core::NowSeconds() of the last request or chunk.
  };

  void Receive(Result<core::Message> m, std::optional<WeightsBlob>* newest);
  // Makes `blob` the newest, unless it is not newer than what Poll gave before.
  void Take(WeightsBlob blob, std::optional<WeightsBlob>* newest);
  void OnWeights(core::Message& m, std::optional<WeightsBlob>* newest);
  void OnAnnounce(const core::Message& m);
  void OnChunk(core::Message& m, std::optional<WeightsBlob>* newest);
  // Starts, re-asks or continues the chunked fetch as its state requires.
  void AdvanceFetch();
  void RequestChunks();

  std::string endpoint_;
  zmq::socket_t dealer_;
  zmq::socket_t sub_;
  int64_t version_ = -1;
  int64_t rejected_ = 0;          // Messages that failed a checksum or did not decode.
  WeightsMeta announced_;         // The newest chunked version announced (version -1: none).
  int64_t refused_version_ = -1;  // Its chunks did not match its checksum: not fetched again.
  std::optional<ChunkedFetch> fetch_;
  // core::NowSeconds() of the last RequestLatest or new version, whichever came later.
  double last_heard_;
  uint64_t next_sequence_ = 1;
};

}  // namespace ferry::paramserver

#endif  // FERRY_PARAMSERVER_CLIENT_H_
