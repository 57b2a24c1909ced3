#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
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

namespace ferry::paramserver {
namespace {

using core::Message;
using core::MessageType;
using std::chrono::milliseconds;

constexpr milliseconds kDeadline{5000};

using testing::FreeTcpEndpoints;

ServerOptions OptionsFor(const std::pair<std::string, std::string>& endpoints) {
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
std::vector<uint8_t> BlobOf(int64_t version, size_t bytes = 4096) {
  std::vector<uint8_t> blob(bytes);
  for (size_t i = 0; i < bytes; ++i) blob[i] = static_cast<uint8_t>(i * 31 + version * 7);
  return blob;
}

void Publish(WeightsPublisher& publisher, int64_t version, size_t bytes = 4096) {
  const std::vector<uint8_t> blob = BlobOf(version, bytes);
  publisher.Publish(version, blob.data(), blob.size());
}

std::vector<uint8_t> Bytes(const WeightsBlob& blob) {
  return std::vector<uint8_t>(blob.data(), blob.data() + blob.size());
}

// Polls until the subscriber holds `version`; returns the last blob Poll gave.
std::optional<WeightsBlob> PollUntilVersion(WeightsSubscriber& subscriber, int64_t version) {
  std::optional<WeightsBlob> last;
  WaitUntil([&] {
    if (auto blob = subscriber.Poll()) last = std::move(blob);
    return subscriber.version() >= version;
  });
  return last;
}

// Chunks small enough that test blobs (4096 bytes by default) travel in several.
constexpr uint64_t kTestChunkBytes = 1000;
// A blob whose last chunk is short.
constexpr size_t kChunkedBlobBytes = 10 * kTestChunkBytes + 7;

// Polls until the subscriber holds `version`; returns the versions Poll gave, each checked
// against the chunked blob of its version.
std::vector<int64_t> ChunkedVersionsUntil(WeightsSubscriber& subscriber, int64_t version) {
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

ServerOptions ChunkedOptions(double keep_fetched_s = 2.0) {
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

WeightsMeta MetaOf(int64_t version, const std::vector<uint8_t>& blob) {
  WeightsMeta meta;
  meta.version = version;
  meta.bytes = blob.size();
  meta.checksum = core::Crc32c(0, blob.data(), blob.size());
  return meta;
}

void CheckError(const Result<Message>& reply, uint64_t sequence, const std::string& fragment) {
  REQUIRE(reply.ok());
  CHECK(reply->header.type == MessageType::kError);
  CHECK(reply->header.sequence == sequence);
  const std::string text = core::ErrorText(*reply);
  CHECK_MESSAGE(text.find(fragment) != std::string::npos, text);
}

TEST_CASE_FIXTURE(ServerFixture, "A subscriber ends up with the newest of a quick burst") {
  WeightsSubscriber subscriber(context_, endpoint_, broadcast_endpoint_);
  WeightsPublisher publisher(context_, endpoint_);
  const int64_t first = WaitForBroadcast(publisher, {&subscriber});

  for (int64_t v = first; v < first + 5; ++v) Publish(publisher, v);
  const int64_t newest = first + 4;
  const auto blob = PollUntilVersion(subscriber, newest);
  REQUIRE(blob.has_value());
  CHECK(blob->version == newest);
  CHECK(Bytes(*blob) == BlobOf(newest));
  CHECK(subscriber.version() == newest);
  CHECK(subscriber.rejected() == 0);
  CHECK(server_->latest_version() == newest);
  CHECK(server_->bad_messages() == 0);
}

TEST_CASE_FIXTURE(ServerFixture, "A late subscriber fetches the latest weights") {
  WeightsPublisher publisher(context_, endpoint_);
  for (int64_t v = 1; v <= 3; ++v) Publish(publisher, v);
  REQUIRE(WaitUntil([&] { return server_->latest_version() == 3; }));

  WeightsSubscriber late(context_, endpoint_, broadcast_endpoint_);
  late.RequestLatest();
  const auto blob = PollUntilVersion(late, 3);
  REQUIRE(blob.has_value());
  CHECK(blob->version == 3);
  CHECK(Bytes(*blob) == BlobOf(3));
  CHECK_FALSE(late.Poll().has_value());  // Nothing newer, and version 3 is not given twice.
  CHECK(late.rejected() == 0);
}

TEST_CASE_FIXTURE(ServerFixture, "Fetching from an empty server yields nothing, not a failure") {
  WeightsSubscriber subscriber(context_, endpoint_, broadcast_endpoint_);
  subscriber.RequestLatest();  // Answered with "no weights yet" (version -1).
  WeightsPublisher publisher(context_, endpoint_);
  Publish(publisher, 1);
  REQUIRE(WaitUntil([&] { return server_->latest_version() == 1; }));
  subscriber.RequestLatest();
  const auto blob = PollUntilVersion(subscriber, 1);
  REQUIRE(blob.has_value());
  CHECK(blob->version == 1);
  CHECK(Bytes(*blob) == BlobOf(1));
  CHECK(subscriber.rejected() == 0);
}

TEST_CASE_FIXTURE(ServerFixture, "The server refuses a version that is not newer") {
  WeightsPublisher publisher(context_, endpoint_);
  Publish(publisher, 5);
  REQUIRE(WaitUntil([&] { return server_->latest_version() == 5; }));
  Publish(publisher, 3);
  REQUIRE(WaitUntil([&] { return server_->bad_messages() == 1; }));
  Publish(publisher, 5);
  REQUIRE(WaitUntil([&] { return server_->bad_messages() == 2; }));
  CHECK(server_->latest_version() == 5);

  WeightsSubscriber late(context_, endpoint_, broadcast_endpoint_);
  late.RequestLatest();
  const auto blob = PollUntilVersion(late, 5);
  REQUIRE(blob.has_value());
  CHECK(blob->version == 5);
  CHECK(Bytes(*blob) == BlobOf(5));

  RawPeer peer(context_, endpoint_);
  const std::vector<uint8_t> old = BlobOf(4);
  peer.SendPublish(/*sequence=*/4, MetaOf(4, old), old);
  CheckError(peer.Reply(), 4, "version 4 is not newer than 5");
}

TEST_CASE_FIXTURE(ServerFixture, "The server refuses corrupt messages and keeps serving") {
  RawPeer peer(context_, endpoint_);
  const std::vector<uint8_t> blob = BlobOf(1);

  WeightsMeta bad_checksum = MetaOf(1, blob);
  bad_checksum.checksum ^= 1;
  peer.SendPublish(/*sequence=*/11, bad_checksum, blob);
  CheckError(peer.Reply(), 11, "checksum mismatch");
  CHECK(server_->bad_messages() == 1);

  WeightsMeta bad_size = MetaOf(1, blob);
  bad_size.bytes += 1;
  peer.SendPublish(/*sequence=*/12, bad_size, blob);
  CheckError(peer.Reply(), 12, "blob size does not match");
  CHECK(server_->bad_messages() == 2);

  core::Send(peer.socket(), MessageType::kStatsRequest, 0, 13, {});
  CheckError(peer.Reply(), 13, "does not accept StatsRequest");
  CHECK(server_->bad_messages() == 3);

  peer.socket().send(zmq::str_buffer("not a ferry message"), zmq::send_flags::none);
  CheckError(peer.Reply(), 0, "header frame");
  CHECK(server_->bad_messages() == 4);
  CHECK(server_->latest_version() == -1);

  peer.SendPublish(/*sequence=*/14, MetaOf(1, blob), blob);
  const auto ack = peer.Reply();
  REQUIRE(ack.ok());
  CHECK(ack->header.type == MessageType::kPublishAck);
  CHECK(ack->header.sequence == 14);
  WeightsMeta acked;
  REQUIRE(core::DecodeMeta(*ack, &acked).ok());
  CHECK(acked.version == 1);
  CHECK(acked.bytes == blob.size());
  CHECK(server_->latest_version() == 1);
  CHECK(server_->bad_messages() == 4);
}

TEST_CASE_FIXTURE(ServerFixture, "A subscriber that does not poll gets only the newest") {
  WeightsPublisher publisher(context_, endpoint_);
  WeightsSubscriber idle(context_, endpoint_, broadcast_endpoint_);
  WeightsSubscriber watcher(context_, endpoint_, broadcast_endpoint_);
  const int64_t first = WaitForBroadcast(publisher, {&idle, &watcher});

  const int64_t newest = first + 19;
  for (int64_t v = first; v <= newest; ++v) Publish(publisher, v);
  std::vector<int64_t> watched;
  REQUIRE(WaitUntil([&] {
    if (auto blob = watcher.Poll()) watched.push_back(blob->version);
    return watcher.version() == newest;
  }));
  for (size_t i = 1; i < watched.size(); ++i) CHECK(watched[i] > watched[i - 1]);

  // The newest broadcast has reached `watcher`; `idle`'s next Poll must give
  // exactly that one, and nothing after it.
  std::optional<WeightsBlob> blob;
  REQUIRE(WaitUntil([&] {
    blob = idle.Poll();
    return blob.has_value();
  }));
  CHECK(blob->version == newest);
  CHECK(Bytes(*blob) == BlobOf(newest));
  CHECK_FALSE(idle.Poll().has_value());
  CHECK(idle.version() == newest);
  CHECK(idle.rejected() == 0);
}

TEST_CASE_FIXTURE(ServerFixture,
                  "A subscriber that asked before there were weights gets the first version") {
  // Its broadcast endpoint has no publisher: only the repeated fetch can bring the version.
  WeightsSubscriber subscriber(context_, endpoint_, FreeTcpEndpoints().second);
  subscriber.RequestLatest();  // The server holds nothing yet: its answer carries no version.
  std::this_thread::sleep_for(milliseconds(100));
  CHECK_FALSE(subscriber.Poll().has_value());
  WeightsPublisher publisher(context_, endpoint_);
  Publish(publisher, 1);
  const auto blob = PollUntilVersion(subscriber, 1);
  REQUIRE(blob.has_value());
  CHECK(blob->version == 1);
  CHECK(Bytes(*blob) == BlobOf(1));
}

TEST_CASE_FIXTURE(ServerFixture,
                  "A tree of relays hands every version down and refuses direct publications") {
  // root -> relay -> relay of relay, each with a subscriber of its own.
  ServerOptions relay_options = OptionsFor(FreeTcpEndpoints());
  relay_options.upstream_endpoint = endpoint_;
  relay_options.upstream_broadcast_endpoint = broadcast_endpoint_;
  RunningServer relay(context_, relay_options);
  ServerOptions leaf_options = OptionsFor(FreeTcpEndpoints());
  leaf_options.upstream_endpoint = relay_options.endpoint;
  leaf_options.upstream_broadcast_endpoint = relay_options.broadcast_endpoint;

  WeightsPublisher publisher(context_, endpoint_);
  Publish(publisher, 1);
  // A relay that starts after the first publication fetches it from upstream.
  RunningServer leaf(context_, leaf_options);
  REQUIRE(WaitUntil([&] { return leaf->latest_version() == 1; }));

  WeightsSubscriber on_leaf(context_, leaf_options.endpoint, leaf_options.broadcast_endpoint);
  WeightsSubscriber on_relay(context_, relay_options.endpoint, relay_options.broadcast_endpoint);
  const int64_t first = WaitForBroadcast(publisher, {&on_leaf, &on_relay}, /*version=*/2);
  for (int64_t v = first; v < first + 5; ++v) Publish(publisher, v);
  const int64_t newest = first + 4;
  for (WeightsSubscriber* subscriber : {&on_leaf, &on_relay}) {
    const auto blob = PollUntilVersion(*subscriber, newest);
    REQUIRE(blob.has_value());
    CHECK(blob->version == newest);
    CHECK(Bytes(*blob) == BlobOf(newest));
    CHECK(subscriber->rejected() == 0);
  }
  CHECK(relay->latest_version() == newest);
  CHECK(leaf->latest_version() == newest);

  // A late subscriber of the leaf fetches the latest, as from a root server.
  WeightsSubscriber late(context_, leaf_options.endpoint, leaf_options.broadcast_endpoint);
  late.RequestLatest();
  const auto fetched = PollUntilVersion(late, newest);
  REQUIRE(fetched.has_value());
  CHECK(Bytes(*fetched) == BlobOf(newest));

  RawPeer peer(context_, relay_options.endpoint);
  const std::vector<uint8_t> blob = BlobOf(newest + 1);
  peer.SendPublish(/*sequence=*/7, MetaOf(newest + 1, blob), blob);
  CheckError(peer.Reply(), 7, "takes no publications");
  CHECK(relay->latest_version() == newest);
  CHECK(relay->bad_messages() == 1);
  CHECK(server_->bad_messages() == 0);
}

TEST_CASE_FIXTURE(ChunkedServerFixture,
                  "A blob over the chunk size reaches subscribers, relays and late fetchers") {
  ServerOptions relay_options = ChunkedOptions();
  relay_options.upstream_endpoint = endpoint_;
  relay_options.upstream_broadcast_endpoint = broadcast_endpoint_;
  RunningServer relay(context_, relay_options);
  WeightsSubscriber subscriber(context_, endpoint_, broadcast_endpoint_);
  WeightsSubscriber on_relay(context_, relay_options.endpoint, relay_options.broadcast_endpoint);
  WeightsPublisher publisher(context_, endpoint_);
  const int64_t version = WaitForBroadcast(publisher, {&subscriber, &on_relay});

  Publish(publisher, version, kChunkedBlobBytes);
  for (WeightsSubscriber* s : {&subscriber, &on_relay}) {
    const auto blob = PollUntilVersion(*s, version);
    REQUIRE(blob.has_value());
    CHECK(blob->version == version);
    CHECK(Bytes(*blob) == BlobOf(version, kChunkedBlobBytes));
    CHECK(blob->checksum == MetaOf(version, BlobOf(version, kChunkedBlobBytes)).checksum);
    CHECK(s->fetching_version() == -1);
    CHECK(s->rejected() == 0);
  }
  for (const std::string& fetch_endpoint : {endpoint_, relay_options.endpoint}) {
    WeightsSubscriber late(context_, fetch_endpoint, FreeTcpEndpoints().second);
    late.RequestLatest();  // Answered with an announcement; the chunks follow.
    const auto fetched = PollUntilVersion(late, version);
    REQUIRE(fetched.has_value());
    CHECK(Bytes(*fetched) == BlobOf(version, kChunkedBlobBytes));
  }
  CHECK(server_->bad_messages() == 0);
  CHECK(relay->bad_messages() == 0);
}

TEST_CASE_FIXTURE(ChunkedServerFixture,
                  "A chunked fetch under way is finished before newer versions are fetched") {
  WeightsSubscriber subscriber(context_, endpoint_, broadcast_endpoint_);
  WeightsPublisher publisher(context_, endpoint_);
  const int64_t first = StartChunkedFetch(publisher, subscriber);
  const int64_t newest = first + 5;
  PublishChunked(publisher, first + 1, newest);
  CHECK(server_->kept_versions() == 2);  // `first`, being fetched, and the newest.

  // The server kept `first` for the fetch under way; the subscriber ends on the newest.
  const std::vector<int64_t> delivered = ChunkedVersionsUntil(subscriber, newest);
  REQUIRE(delivered.size() >= 2);
  CHECK(delivered.front() == first);
  CHECK(delivered.back() == newest);
  CHECK(std::is_sorted(delivered.begin(), delivered.end()));
  CHECK(subscriber.rejected() == 0);

  // Every fetch is finished: a new version replaces all the others.
  PublishChunked(publisher, newest + 1, newest + 1);
  CHECK(server_->kept_versions() == 1);
}

TEST_CASE_FIXTURE(ForgetfulServerFixture,
                  "A subscriber whose version was dropped mid-fetch moves to the latest") {
  WeightsSubscriber subscriber(context_, endpoint_, broadcast_endpoint_);
  WeightsPublisher publisher(context_, endpoint_);
  const int64_t first = StartChunkedFetch(publisher, subscriber);
  PublishChunked(publisher, first + 1, first + 1);  // `first` is dropped at once.

  CHECK(ChunkedVersionsUntil(subscriber, first + 1) == std::vector<int64_t>{first + 1});
  CHECK(subscriber.rejected() == 0);
  CHECK(server_->bad_messages() == 0);
}

TEST_CASE_FIXTURE(ChunkedServerFixture, "The server refuses chunk requests it cannot serve") {
  WeightsPublisher publisher(context_, endpoint_);
  Publish(publisher, 1, kChunkedBlobBytes);
  REQUIRE(WaitUntil([&] { return server_->latest_version() == 1; }));
  RawPeer peer(context_, endpoint_);

  peer.SendFetchChunk(/*sequence=*/21, 1, 500);
  CheckError(peer.Reply(), 21,
             "offset 500 is not a chunk of version 1 (10007 bytes in chunks of 1000)");
  peer.SendFetchChunk(/*sequence=*/22, 1, 11000);
  CheckError(peer.Reply(), 22, "offset 11000 is not a chunk");
  std::vector<zmq::message_t> short_meta;
  short_meta.emplace_back(3);
  core::Send(peer.socket(), MessageType::kFetchChunk, 0, 23, std::move(short_meta));
  CheckError(peer.Reply(), 23, "FetchChunk: metadata frame missing or of the wrong size");
  CHECK(server_->bad_messages() == 3);

  // A version the server does not keep: an answer without bytes.
  peer.SendFetchChunk(/*sequence=*/24, 7, 0);
  auto gone = peer.Reply();
  REQUIRE(gone.ok());
  CHECK(gone->header.type == MessageType::kWeightsChunk);
  CHECK(gone->header.sequence == 24);
  CHECK(gone->payload.size() == 1);

  // The last chunk is the blob's short tail, and the server still serves.
  peer.SendFetchChunk(/*sequence=*/25, 1, 10000);
  auto tail = peer.Reply();
  REQUIRE(tail.ok());
  CHECK(tail->header.type == MessageType::kWeightsChunk);
  REQUIRE(tail->payload.size() == 2);
  const std::vector<uint8_t> blob = BlobOf(1, kChunkedBlobBytes);
  CHECK(std::vector<uint8_t>(tail->payload[1].data<uint8_t>(),
                             tail->payload[1].data<uint8_t>() + tail->payload[1].size()) ==
        std::vector<uint8_t>(blob.begin() + 10000, blob.end()));
  CHECK(server_->bad_messages() == 3);
}

// A message to corrupt: a fetch of the latest, a chunk request (of the held version or
// another, some past its end), or a publication of the version the server holds.
std::pair<MessageType, testing::Frames> ValidRequest(std::mt19937_64& rng) {
  testing::Frames payload;
  switch (rng() % 3) {
    case 0: {
      FetchMeta fetch;
      fetch.have_version = static_cast<int64_t>(rng() % 3) - 1;
      payload.push_back(core::EncodeMeta(fetch));
      return {MessageType::kFetchWeights, std::move(payload)};
    }
    case 1: {
      ChunkMeta chunk;
      chunk.version = rng() % 4 == 0 ? 2 : 1;
      chunk.offset = (rng() % 13) * kTestChunkBytes;  // The last two are past the end.
      payload.push_back(core::EncodeMeta(chunk));
      return {MessageType::kFetchChunk, std::move(payload)};
    }
    default: {
      const std::vector<uint8_t> blob = BlobOf(1, kChunkedBlobBytes);
      payload.push_back(core::EncodeMeta(MetaOf(1, blob)));
      payload.emplace_back(blob.data(), blob.size());
      return {MessageType::kPublishWeights, std::move(payload)};
    }
  }
}

TEST_CASE_FIXTURE(ChunkedServerFixture,
                  "The server survives random and corrupted messages and keeps serving") {
  WeightsPublisher publisher(context_, endpoint_);
  Publish(publisher, 1, kChunkedBlobBytes);
  REQUIRE(WaitUntil([&] { return server_->latest_version() == 1; }));
  RawPeer peer(context_, endpoint_);
  std::mt19937_64 rng(20261130);
  int errors = 0;
  for (uint64_t i = 0; i < 1500; ++i) {
    CAPTURE(i);
    const int kind = static_cast<int>(rng() % 3);
    auto [type, payload] = ValidRequest(rng);
    if (kind == 0) {
      peer.SendRaw(testing::RandomFrames(rng));
    } else if (kind == 1) {  // Corrupted on the wire: the checksum no longer matches.
      testing::Frames frames = testing::Framed(type, i, std::move(payload), 0);
      testing::Mutate(rng, frames);
      peer.SendRaw(std::move(frames));
    } else {  // Corrupted before framing: the checksum matches, the decoders see it.
      testing::Mutate(rng, payload);
      core::Send(peer.socket(), type, 0, i, std::move(payload));
    }
    // A fetch behind it on the same connection is answered after it.
    const uint64_t probe = (uint64_t{1} << 62) + i;
    std::vector<zmq::message_t> fetch;
    fetch.push_back(core::EncodeMeta(FetchMeta{}));
    core::Send(peer.socket(), MessageType::kFetchWeights, 0, probe, std::move(fetch));
    int error_replies = 0;
    while (true) {
      const auto reply = peer.Reply();
      REQUIRE(reply.ok());
      if (reply->header.sequence == probe) {
        CHECK(reply->header.type == MessageType::kWeightsAnnounce);
        break;
      }
      error_replies += reply->header.type == MessageType::kError;
    }
    if (kind == 0) CHECK(error_replies == 1);
    errors += error_replies;
  }
  CHECK(errors > 500);
  CHECK(server_->bad_messages() == errors);

  // It still serves its latest version intact (a publication whose version field was
  // corrupted before framing is a valid publication of the same bytes).
  const int64_t latest = server_->latest_version();
  WeightsSubscriber late(context_, endpoint_, FreeTcpEndpoints().second);
  late.RequestLatest();
  const auto fetched = PollUntilVersion(late, latest);
  REQUIRE(fetched.has_value());
  CHECK(fetched->version == latest);
  CHECK(Bytes(*fetched) == BlobOf(1, kChunkedBlobBytes));
  CHECK(late.rejected() == 0);
}

TEST_CASE_FIXTURE(ServerFixture, "A blob under the chunk size is not served in chunks") {
  WeightsPublisher publisher(context_, endpoint_);
  Publish(publisher, 1);
  REQUIRE(WaitUntil([&] { return server_->latest_version() == 1; }));
  RawPeer peer(context_, endpoint_);
  peer.SendFetchChunk(/*sequence=*/31, 1, 0);
  CheckError(peer.Reply(), 31, "version 1 is sent whole, not in chunks");
}

// A rogue chunked server on fresh loopback ports: announces `announced` on its PUB and
// answers chunk requests on its ROUTER with the chunks of `blob`.
class RogueChunkServer {
 public:
  RogueChunkServer(const std::vector<uint8_t>& blob, const WeightsMeta& announced)
      : endpoints_(FreeTcpEndpoints()), blob_(blob) {
    for (zmq::socket_t* s : {&router_, &pub_}) s->set(zmq::sockopt::linger, 0);
    router_.bind(endpoints_.first);
    pub_.bind(endpoints_.second);
    std::vector<zmq::message_t> meta;
    meta.push_back(core::EncodeMeta(announced));
    announcement_ = core::Pack(MessageType::kWeightsAnnounce, 0, 1, meta);
  }

  zmq::context_t& context() { return context_; }
  const std::pair<std::string, std::string>& endpoints() const { return endpoints_; }

  void Announce() {
    zmq::message_t copy;
    copy.copy(announcement_);
    pub_.send(copy, zmq::send_flags::none);
  }

  // Takes every waiting chunk request, answering it with the chunk it names when `answer`;
  // returns how many there were.
  int TakeRequests(bool answer) {
    int taken = 0;
    while (true) {
      auto frames = core::ReceiveFrames(router_);
      if (frames.empty()) return taken;
      ++taken;
      zmq::message_t routing_id = std::move(frames.front());
      frames.erase(frames.begin());
      auto request = core::Decode(std::move(frames));
      REQUIRE(request.ok());
      ChunkMeta chunk;
      REQUIRE(core::DecodeMeta(*request, &chunk).ok());
      if (!answer) continue;
      std::vector<zmq::message_t> reply;
      reply.push_back(core::EncodeMeta(chunk));
      const size_t size = std::min<size_t>(kTestChunkBytes, blob_.size() - chunk.offset);
      reply.emplace_back(blob_.data() + chunk.offset, size);
      core::Send(router_, MessageType::kWeightsChunk, 0, request->header.sequence, std::move(reply),
                 &routing_id);
    }
  }

 private:
  zmq::context_t context_{1};
  zmq::socket_t router_{context_, zmq::socket_type::router};
  zmq::socket_t pub_{context_, zmq::socket_type::pub};
  std::pair<std::string, std::string> endpoints_;
  std::vector<uint8_t> blob_;
  zmq::message_t announcement_;
};

WeightsMeta AnnouncementOf(int64_t version, const std::vector<uint8_t>& blob) {
  WeightsMeta announced = MetaOf(version, blob);
  announced.chunk_bytes = kTestChunkBytes;
  return announced;
}

TEST_CASE("A subscriber refuses chunks that do not add up to the announced checksum") {
  const std::vector<uint8_t> blob = BlobOf(1, 2500);
  WeightsMeta announced = AnnouncementOf(1, blob);
  announced.checksum ^= 1;  // Not the checksum of the bytes the chunks will carry.
  RogueChunkServer rogue(blob, announced);
  WeightsSubscriber subscriber(rogue.context(), rogue.endpoints().first, rogue.endpoints().second);
  int answered = 0;
  REQUIRE(WaitUntil([&] {
    rogue.Announce();
    subscriber.Poll();
    answered += rogue.TakeRequests(/*answer=*/true);
    return subscriber.rejected() > 0;
  }));
  CHECK(answered == 3);
  CHECK(subscriber.rejected() == 1);
  CHECK(subscriber.version() == -1);
  CHECK(subscriber.fetching_version() == -1);
  // The refused version is not fetched again, however often it is announced.
  for (int i = 0; i < 5; ++i) {
    rogue.Announce();
    std::this_thread::sleep_for(milliseconds(10));
    CHECK_FALSE(subscriber.Poll().has_value());
  }
  CHECK(subscriber.fetching_version() == -1);
  CHECK(rogue.TakeRequests(/*answer=*/false) == 0);
}

TEST_CASE("A subscriber asks again for chunks that were never answered") {
  const std::vector<uint8_t> blob = BlobOf(1, 2500);
  RogueChunkServer rogue(blob, AnnouncementOf(1, blob));
  WeightsSubscriber subscriber(rogue.context(), rogue.endpoints().first, rogue.endpoints().second);
  int ignored = 0;
  REQUIRE(WaitUntil([&] {  // The first requests are lost.
    rogue.Announce();
    subscriber.Poll();
    ignored += rogue.TakeRequests(/*answer=*/false);
    return ignored == 3;
  }));
  int answered = 0;
  std::optional<WeightsBlob> received;
  REQUIRE(WaitUntil([&] {  // A second later, the same three again.
    if (auto got = subscriber.Poll()) received = std::move(got);
    answered += rogue.TakeRequests(/*answer=*/true);
    return received.has_value();
  }));
  CHECK(answered == 3);
  CHECK(received->version == 1);
  CHECK(Bytes(*received) == blob);
  CHECK(subscriber.rejected() == 0);
}

TEST_CASE("A subscriber refuses a broadcast blob that does not match its checksum") {
  // A rogue PUB in place of the server: each hop checks what it received, from one checksum.
  zmq::context_t context(1);
  const auto endpoints = FreeTcpEndpoints();
  zmq::socket_t pub(context, zmq::socket_type::pub);
  pub.set(zmq::sockopt::linger, 0);
  pub.bind(endpoints.second);
  WeightsSubscriber subscriber(context, endpoints.first, endpoints.second);
  auto packed = [](int64_t version, const WeightsMeta& meta, const std::vector<uint8_t>& blob) {
    std::vector<zmq::message_t> payload;
    payload.push_back(core::EncodeMeta(meta));
    payload.emplace_back(blob.data(), blob.size());
    return core::Pack(MessageType::kWeights, 0, static_cast<uint64_t>(version), payload);
  };
  std::optional<WeightsBlob> received;
  int64_t version = 1;
  REQUIRE(WaitUntil([&] {  // Until the subscription is live.
    const std::vector<uint8_t> blob = BlobOf(version);
    pub.send(packed(version, MetaOf(version, blob), blob), zmq::send_flags::none);
    ++version;
    std::this_thread::sleep_for(milliseconds(20));
    received = subscriber.Poll();
    return received.has_value();
  }));
  CHECK(Bytes(*received) == BlobOf(received->version));
  CHECK(received->checksum == MetaOf(0, BlobOf(received->version)).checksum);
  const int64_t held = subscriber.version();

  // One at a time: the subscription conflates. Bytes that are not the ones the metadata's
  // checksum was made from (the wire checksum covers what was sent, so only the blob's own
  // checksum can tell):
  std::vector<uint8_t> blob = BlobOf(held + 1);
  const WeightsMeta meta = MetaOf(held + 1, blob);
  blob[100] ^= 0x10;
  pub.send(packed(held + 1, meta, blob), zmq::send_flags::none);
  CHECK(WaitUntil([&] { return subscriber.Poll().has_value() || subscriber.rejected() == 1; }));
  CHECK(subscriber.rejected() == 1);
  // Bytes damaged after the message was made: the wire checksum tells.
  zmq::message_t damaged = packed(held + 2, MetaOf(held + 2, BlobOf(held + 2)), BlobOf(held + 2));
  damaged.data<uint8_t>()[damaged.size() - 5] ^= 0x01;
  pub.send(damaged, zmq::send_flags::none);
  CHECK(WaitUntil([&] { return subscriber.Poll().has_value() || subscriber.rejected() == 2; }));
  CHECK(subscriber.rejected() == 2);
  CHECK(subscriber.version() == held);
}

TEST_CASE("Publish never blocks when no server is listening") {
  zmq::context_t context(1);
  const std::string nobody = FreeTcpEndpoints().first;
  std::atomic<int> published{0};
  std::thread learner([&] {
    try {
      WeightsPublisher publisher(context, nobody);
      for (int64_t v = 1; v <= 10; ++v) {
        Publish(publisher, v);
        ++published;
      }
    } catch (const zmq::error_t&) {
      // Shutting the context down below ends a send that blocked.
    }
  });
  // A few versions fit the send queue; each later one is skipped after 50 ms.
  WaitUntil([&] { return published.load() == 10; }, milliseconds(3000));
  context.shutdown();
  learner.join();
  CHECK(published.load() == 10);
}

}  // namespace
}  // namespace ferry::paramserver
