// Shared by the paramserver tests: servers on loopback ports, blobs that differ by version,
// polling with a deadline, and a raw DEALER for messages the clients never send.
#ifndef FERRY_TESTS_PARAMSERVER_SERVER_FIXTURE_H_
#define FERRY_TESTS_PARAMSERVER_SERVER_FIXTURE_H_

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "core/crc32c.h"
#include "core/wire.h"
#include "paramserver/client.h"
#include "paramserver/protocol.h"
#include "paramserver/server.h"
#include "tests/corrupt_messages.h"
#include "tests/free_ports.h"

namespace ferry::paramserver::fixture {

using core::Message;
using core::MessageType;
using std::chrono::milliseconds;

inline constexpr milliseconds kDeadline{5000};

using ferry::testing::FreeTcpEndpoints;

inline ServerOptions OptionsFor(const std::pair<std::string, std::string>& endpoints) {
  ServerOptions options;
  options.endpoint = endpoints.first;
  options.broadcast_endpoint = endpoints.second;
  return options;
}

// Calls `done` until it returns true or `limit` passes; returns its last answer.
template <typename Predicate>
bool WaitUntil(Predicate done, milliseconds limit = kDeadline) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return done();
}

// The weight blob of `version`: its bytes differ from every other version's.
inline std::vector<uint8_t> BlobOf(int64_t version, size_t bytes = 4096) {
  std::vector<uint8_t> blob(bytes);
  for (size_t i = 0; i < bytes; ++i) blob[i] = static_cast<uint8_t>(i * 31 + version * 7);
  return blob;
}

inline void Publish(WeightsPublisher& publisher, int64_t version, size_t bytes = 4096) {
  const std::vector<uint8_t> blob = BlobOf(version, bytes);
  publisher.Publish(version, blob.data(), blob.size());
}

inline std::vector<uint8_t> Bytes(const WeightsBlob& blob) {
  return std::vector<uint8_t>(blob.data(), blob.data() + blob.size());
}

// Polls until the subscriber holds `version`; returns the last blob Poll gave.
inline std::optional<WeightsBlob> PollUntilVersion(WeightsSubscriber& subscriber, int64_t version) {
  std::optional<WeightsBlob> last;
  WaitUntil([&] {
    if (auto blob = subscriber.Poll()) last = std::move(blob);
    return subscriber.version() >= version;
  });
  return last;
}

// Chunks small enough that test blobs (4096 bytes by default) travel in several.
inline constexpr uint64_t kTestChunkBytes = 1000;
// A blob whose last chunk is short.
inline constexpr size_t kChunkedBlobBytes = 10 * kTestChunkBytes + 7;

// Polls until the subscriber holds `version`; returns the versions Poll gave, each checked
// against the chunked blob of its version.
inline std::vector<int64_t> ChunkedVersionsUntil(WeightsSubscriber& subscriber, int64_t version) {
  std::vector<int64_t> delivered;
  REQUIRE(WaitUntil([&] {
    if (auto blob = subscriber.Poll()) {
      delivered.push_back(blob->version);
      CHECK(Bytes(*blob) == BlobOf(blob->version, kChunkedBlobBytes));
    }
    return subscriber.version() >= version;
  }));
  return delivered;
}

// A ParamServer serving on its own thread over loopback TCP; stopped and
// joined when it goes out of scope.
class RunningServer {
 public:
  RunningServer(zmq::context_t& context, const ServerOptions& options) : server_(context, options) {
    const Status bound = server_.Bind();
    REQUIRE_MESSAGE(bound.ok(), bound.ToString());
    thread_ = std::thread([this] { server_.Serve(stop_); });
  }
  ~RunningServer() {
    stop_.store(true);
    thread_.join();
  }
  RunningServer(const RunningServer&) = delete;
  RunningServer& operator=(const RunningServer&) = delete;
  ParamServer& operator*() { return server_; }
  ParamServer* operator->() { return &server_; }

 private:
  ParamServer server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A test with one running root server.
class ServerFixture {
 public:
  ServerFixture() : ServerFixture(OptionsFor(FreeTcpEndpoints())) {}

 protected:
  explicit ServerFixture(ServerOptions options)
      : options_(std::move(options)),
        endpoint_(options_.endpoint),
        broadcast_endpoint_(options_.broadcast_endpoint),
        server_(context_, options_) {}

  // Publishes ever newer versions, one every 20 ms, until every subscriber has
  // received one over the broadcast: from then on their subscriptions are live.
  // Returns the next unused version.
  int64_t WaitForBroadcast(WeightsPublisher& publisher,
                           const std::vector<WeightsSubscriber*>& subscribers, int64_t version = 1,
                           size_t bytes = 4096) {
    std::vector<bool> live(subscribers.size(), false);
    const bool all_live = WaitUntil([&] {
      Publish(publisher, version++, bytes);
      std::this_thread::sleep_for(milliseconds(20));
      for (size_t i = 0; i < subscribers.size(); ++i) {
        if (subscribers[i]->Poll().has_value()) live[i] = true;
      }
      return std::find(live.begin(), live.end(), false) == live.end();
    });
    REQUIRE_MESSAGE(all_live, "a subscriber never received a broadcast");
    return version;
  }

  // Makes `subscriber`'s subscription live with versions sent whole (one every 20 ms, each
  // superseding the last, could starve a chunked fetch polled every 20 ms), then publishes a
  // chunked version and polls until the subscriber has asked for its first chunks.
  // Returns that version.
  int64_t StartChunkedFetch(WeightsPublisher& publisher, WeightsSubscriber& subscriber) {
    const int64_t version =
        WaitForBroadcast(publisher, {&subscriber}, /*version=*/1, /*bytes=*/kTestChunkBytes);
    Publish(publisher, version, kChunkedBlobBytes);
    REQUIRE(WaitUntil([&] {
      subscriber.Poll();  // The poll that sees the announcement asks for the first chunks.
      return subscriber.fetching_version() == version;
    }));
    return version;
  }

  // Publishes chunked versions `from`..`to` and waits until the server holds `to`.
  void PublishChunked(WeightsPublisher& publisher, int64_t from, int64_t to) {
    for (int64_t v = from; v <= to; ++v) Publish(publisher, v, kChunkedBlobBytes);
    REQUIRE(WaitUntil([&] { return server_->latest_version() == to; }));
  }

  zmq::context_t context_{1};
  ServerOptions options_;
  std::string endpoint_;
  std::string broadcast_endpoint_;
  RunningServer server_;
};

inline ServerOptions ChunkedOptions(double keep_fetched_s = 2.0) {
  ServerOptions options = OptionsFor(FreeTcpEndpoints());
  options.chunk_bytes = kTestChunkBytes;
  options.keep_fetched_s = keep_fetched_s;
  return options;
}

class ChunkedServerFixture : public ServerFixture {
 public:
  ChunkedServerFixture() : ServerFixture(ChunkedOptions()) {}
};

// Drops a superseded version at once, even while it is being fetched.
class ForgetfulServerFixture : public ServerFixture {
 public:
  ForgetfulServerFixture() : ServerFixture(ChunkedOptions(/*keep_fetched_s=*/-1)) {}
};

// A raw DEALER speaking the wire protocol, for messages the clients never send.
class RawPeer {
 public:
  RawPeer(zmq::context_t& context, const std::string& endpoint)
      : socket_(context, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(endpoint);
  }

  void SendPublish(uint64_t sequence, const WeightsMeta& meta, const std::vector<uint8_t>& blob) {
    std::vector<zmq::message_t> payload;
    payload.push_back(core::EncodeMeta(meta));
    payload.emplace_back(blob.data(), blob.size());
    core::Send(socket_, MessageType::kPublishWeights, 0, sequence, std::move(payload));
  }

  void SendFetch(uint64_t sequence, int64_t have_version) {
    FetchMeta fetch;
    fetch.have_version = have_version;
    std::vector<zmq::message_t> payload;
    payload.push_back(core::EncodeMeta(fetch));
    core::Send(socket_, MessageType::kFetchWeights, 0, sequence, std::move(payload));
  }

  void SendFetchChunk(uint64_t sequence, int64_t version, uint64_t offset) {
    ChunkMeta chunk;
    chunk.version = version;
    chunk.offset = offset;
    std::vector<zmq::message_t> payload;
    payload.push_back(core::EncodeMeta(chunk));
    core::Send(socket_, MessageType::kFetchChunk, 0, sequence, std::move(payload));
  }

  void SendRaw(testing::Frames frames) {
    for (size_t i = 0; i < frames.size(); ++i) {
      socket_.send(frames[i],
                   i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }

  zmq::socket_t& socket() { return socket_; }

  Result<Message> Reply() {
    std::vector<zmq::message_t> frames;
    WaitUntil([&] {
      frames = core::ReceiveFrames(socket_);
      return !frames.empty();
    });
    return core::Decode(std::move(frames));
  }

 private:
  zmq::socket_t socket_;
};

inline WeightsMeta MetaOf(int64_t version, const std::vector<uint8_t>& blob) {
  WeightsMeta meta;
  meta.version = version;
  meta.bytes = blob.size();
  meta.checksum = core::Crc32c(0, blob.data(), blob.size());
  return meta;
}

inline void CheckError(const Result<Message>& reply, uint64_t sequence,
                       const std::string& fragment) {
  REQUIRE(reply.ok());
  CHECK(reply->header.type == MessageType::kError);
  CHECK(reply->header.sequence == sequence);
  const std::string text = core::ErrorText(*reply);
  CHECK_MESSAGE(text.find(fragment) != std::string::npos, text);
}

}  // namespace ferry::paramserver::fixture

#endif  // FERRY_TESTS_PARAMSERVER_SERVER_FIXTURE_H_
