#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "core/wire.h"
#include "paramserver/client.h"
#include "paramserver/protocol.h"
#include "paramserver/server.h"
#include "tests/paramserver/server_fixture.h"

namespace ferry::paramserver {
namespace {

using core::MessageType;
using std::chrono::milliseconds;
using namespace fixture;  // NOLINT: the fixtures and helpers of server_fixture.h.

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
                  "A subscriber whose broadcast was lost asks again and catches up") {
  // Its broadcast endpoint has no publisher: every broadcast is lost to it.
  WeightsSubscriber subscriber(context_, endpoint_, FreeTcpEndpoints().second);
  WeightsPublisher publisher(context_, endpoint_);
  Publish(publisher, 1);
  REQUIRE(WaitUntil([&] { return server_->latest_version() == 1; }));
  subscriber.RequestLatest();
  REQUIRE(PollUntilVersion(subscriber, 1).has_value());
  // Nothing newer comes after version 2: only asking again can bring it.
  Publish(publisher, 2);
  const auto start = std::chrono::steady_clock::now();
  const auto blob = PollUntilVersion(subscriber, 2);
  REQUIRE(blob.has_value());
  CHECK(blob->version == 2);
  CHECK(Bytes(*blob) == BlobOf(2));
  CHECK(std::chrono::steady_clock::now() - start < milliseconds(2500));
  CHECK(server_->bad_messages() == 0);
}

TEST_CASE_FIXTURE(ServerFixture, "A fetch from a subscriber that holds the latest gets no blob") {
  WeightsPublisher publisher(context_, endpoint_);
  Publish(publisher, 5);
  REQUIRE(WaitUntil([&] { return server_->latest_version() == 5; }));
  RawPeer peer(context_, endpoint_);
  for (const int64_t have : {5, 7, 4}) peer.SendFetch(static_cast<uint64_t>(have), have);
  // Only the fetch naming version 4 is behind the server's 5: the first reply must answer it.
  const auto reply = peer.Reply();
  REQUIRE(reply.ok());
  CHECK(reply->header.sequence == 4);
  CHECK(reply->header.type == MessageType::kWeights);
  std::this_thread::sleep_for(milliseconds(50));
  CHECK(core::ReceiveFrames(peer.socket()).empty());
  CHECK(server_->bad_messages() == 0);
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
