// Blobs over the chunk size: announced, then fetched chunk by chunk.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "core/wire.h"
#include "paramserver/client.h"
#include "paramserver/protocol.h"
#include "paramserver/server.h"
#include "tests/corrupt_messages.h"
#include "tests/paramserver/server_fixture.h"

namespace ferry::paramserver {
namespace {

using core::MessageType;
using std::chrono::milliseconds;
using namespace fixture;  // NOLINT: the fixtures and helpers of server_fixture.h.

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
    peer.SendFetch(probe, /*have_version=*/-1);
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

}  // namespace
}  // namespace ferry::paramserver
