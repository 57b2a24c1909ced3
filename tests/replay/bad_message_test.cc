#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "core/crc32c.h"
#include "core/experience.h"
#include "core/wire.h"
#include "replay/protocol.h"
#include "replay/sampler.h"
#include "replay/shard.h"
#include "tests/corrupt_messages.h"
#include "tests/replay/shard_fixture.h"

namespace ferry::replay {
namespace {

using core::Header;
using core::MessageType;
using testing::RawClient;
using testing::ShardThread;
using testing::TestSchema;
using testing::TestShardOptions;

using ferry::testing::Frames;
using ferry::testing::Mutate;
using ferry::testing::RandomFrames;
using ferry::testing::Truncated;
using ferry::testing::WithHeader;

Header HeaderFor(MessageType type, uint64_t sequence, const Frames& payload) {
  return ferry::testing::HeaderFor(type, sequence, payload, RawClient::kClientId);
}

Frames Framed(MessageType type, uint64_t sequence, Frames payload) {
  return ferry::testing::Framed(type, sequence, std::move(payload), RawClient::kClientId);
}

// A valid message whose header is then changed by `edit` (so framing checks see it).
Frames EditedHeader(const std::function<void(Header&)>& edit) {
  Frames payload = testing::InsertPayload(TestSchema(), 0, 4, 1.0f);
  Header header = HeaderFor(MessageType::kInsertBatch, 1, payload);
  edit(header);
  return WithHeader(header, std::move(payload));
}

InsertMeta ValidInsertMeta(uint32_t count) {
  InsertMeta meta;
  meta.schema_fingerprint = TestSchema().Fingerprint();
  meta.count = count;
  return meta;
}

// An InsertBatch payload of 4 rows whose frame `index` is replaced by `frame`.
Frames InsertWithFrame(size_t index, zmq::message_t frame) {
  Frames payload = testing::InsertPayload(TestSchema(), 0, 4, 1.0f);
  payload[index] = std::move(frame);
  return payload;
}

Frames InsertWithMeta(const InsertMeta& meta, int rows) {
  Frames payload = testing::InsertPayload(TestSchema(), 0, rows, 1.0f);
  payload[0] = core::EncodeMeta(meta);
  return payload;
}

// The parts of a shard's stats that a rejected message must leave alone.
void CheckUnchanged(const StatsMeta& before, const StatsMeta& after) {
  CHECK(after.mass.size == before.mass.size);
  CHECK(after.mass.total_mass == before.mass.total_mass);
  CHECK(after.mass.min_mass == before.mass.min_mass);
  CHECK(after.mass.inserted_total == before.mass.inserted_total);
  CHECK(after.samples_total == before.samples_total);
  CHECK(after.updates_applied == before.updates_applied);
  CHECK(after.updates_stale == before.updates_stale);
  CHECK(after.duplicates_dropped == before.duplicates_dropped);
}

struct BadMessage {
  std::string name;
  std::function<Frames()> frames;
  bool framing_ok;  // Passes Decode, so the error reply echoes the sequence.
};

constexpr uint64_t kSequence = 77;

std::vector<BadMessage> BadMessages() {
  const core::Schema schema = TestSchema();
  const size_t obs_bytes = schema.columns[core::kObs].row_bytes();
  std::vector<BadMessage> cases;
  auto framing = [&](std::string name, std::function<Frames()> frames) {
    cases.push_back({std::move(name), std::move(frames), false});
  };
  auto content = [&](std::string name, MessageType type, std::function<Frames()> payload) {
    cases.push_back(
        {std::move(name), [type, payload] { return Framed(type, kSequence, payload()); }, true});
  };

  framing("empty message", [] {
    Frames frames;
    frames.emplace_back();
    return frames;
  });
  framing("header one byte short", [] {
    Frames frames = EditedHeader([](Header&) {});
    frames[0] = Truncated(frames[0], 1);
    return frames;
  });
  framing("header one byte long", [] {
    Frames frames = EditedHeader([](Header&) {});
    std::vector<uint8_t> bytes(frames[0].data<uint8_t>(),
                               frames[0].data<uint8_t>() + frames[0].size());
    bytes.push_back(0);
    frames[0] = zmq::message_t(bytes.data(), bytes.size());
    return frames;
  });
  framing("bad magic", [] { return EditedHeader([](Header& h) { h.magic = 0x12345678; }); });
  framing("wrong version",
          [] { return EditedHeader([](Header& h) { h.version = core::kProtocolVersion + 1; }); });
  framing("type 0",
          [] { return EditedHeader([](Header& h) { h.type = static_cast<MessageType>(0); }); });
  framing("type 99",
          [] { return EditedHeader([](Header& h) { h.type = static_cast<MessageType>(99); }); });
  framing("payload length mismatch",
          [] { return EditedHeader([](Header& h) { ++h.payload_bytes; }); });
  framing("bad checksum", [] { return EditedHeader([](Header& h) { h.crc32c ^= 1; }); });
  framing("payload byte changed after checksumming", [] {
    Frames frames = EditedHeader([](Header&) {});
    frames[2].data<uint8_t>()[0] ^= 0x40;
    return frames;
  });
  framing("too many frames", [] { return Framed(MessageType::kStatsRequest, 1, Frames(70)); });

  content("InsertBatch without frames", MessageType::kInsertBatch, [] { return Frames(); });
  content("InsertBatch truncated meta", MessageType::kInsertBatch, [] {
    Frames payload = testing::InsertPayload(TestSchema(), 0, 4, 1.0f);
    payload[0] = Truncated(payload[0], 1);
    return payload;
  });
  content("InsertBatch column a row short", MessageType::kInsertBatch, [obs_bytes] {
    Frames payload = testing::InsertPayload(TestSchema(), 0, 4, 1.0f);
    return InsertWithFrame(1, Truncated(payload[1], obs_bytes));
  });
  content("InsertBatch column a byte long", MessageType::kInsertBatch,
          [] { return InsertWithFrame(1 + core::kReward, zmq::message_t(4 * sizeof(float) + 1)); });
  content("InsertBatch priorities frame missing", MessageType::kInsertBatch, [] {
    Frames payload = testing::InsertPayload(TestSchema(), 0, 4, 1.0f);
    payload.pop_back();
    return payload;
  });
  content("InsertBatch extra frame", MessageType::kInsertBatch, [] {
    Frames payload = testing::InsertPayload(TestSchema(), 0, 4, 1.0f);
    payload.emplace_back(8);
    return payload;
  });
  content("InsertBatch priorities frame a row short", MessageType::kInsertBatch, [] {
    return InsertWithFrame(core::kNumTransitionColumns + 1, zmq::message_t(3 * sizeof(float)));
  });
  content("InsertBatch count 0", MessageType::kInsertBatch, [] {
    Frames payload;
    payload.push_back(core::EncodeMeta(ValidInsertMeta(0)));
    for (int c = 0; c <= core::kNumTransitionColumns; ++c) payload.emplace_back();
    return payload;
  });
  content("InsertBatch huge count", MessageType::kInsertBatch,
          [] { return InsertWithMeta(ValidInsertMeta(0xFFFFFFFFu), 4); });
  content("InsertBatch count above max_batch", MessageType::kInsertBatch,
          [] { return InsertWithMeta(ValidInsertMeta(1025), 1025); });
  content("InsertBatch schema mismatch", MessageType::kInsertBatch, [] {
    InsertMeta meta = ValidInsertMeta(4);
    meta.schema_fingerprint = core::TransitionSchema(8, true, 1).Fingerprint();
    return InsertWithMeta(meta, 4);
  });
  content("UpdatePriorities fewer keys than count", MessageType::kUpdatePriorities, [] {
    Frames payload = testing::UpdatePayload({Key{0, 1}, Key{1, 1}, Key{2, 1}}, {2, 2, 2});
    payload[1] = Truncated(payload[1], sizeof(Key));
    return payload;
  });
  content("UpdatePriorities fewer priorities than count", MessageType::kUpdatePriorities, [] {
    Frames payload = testing::UpdatePayload({Key{0, 1}, Key{1, 1}}, {2, 2});
    payload[2] = Truncated(payload[2], 1);
    return payload;
  });
  content("UpdatePriorities priorities frame missing", MessageType::kUpdatePriorities, [] {
    Frames payload = testing::UpdatePayload({Key{0, 1}}, {2});
    payload.pop_back();
    return payload;
  });
  content("UpdatePriorities huge count", MessageType::kUpdatePriorities, [] {
    Frames payload = testing::UpdatePayload({Key{0, 1}}, {2});
    UpdatePrioritiesMeta meta;
    meta.count = 0xFFFFFFFFu;
    payload[0] = core::EncodeMeta(meta);
    return payload;
  });
  content("SampleRequest count 0", MessageType::kSampleRequest,
          [] { return testing::SamplePayload(TestSchema(), 0); });
  content("SampleRequest count above max_batch", MessageType::kSampleRequest,
          [] { return testing::SamplePayload(TestSchema(), 1025); });
  content("SampleRequest schema mismatch", MessageType::kSampleRequest,
          [] { return testing::SamplePayload(core::TransitionSchema(8, true, 1), 4); });
  content("SampleRequest truncated meta", MessageType::kSampleRequest, [] {
    Frames payload = testing::SamplePayload(TestSchema(), 4);
    payload[0] = Truncated(payload[0], 2);
    return payload;
  });
  content("PublishWeights (a paramserver message)", MessageType::kPublishWeights, [] {
    Frames payload;
    payload.emplace_back(64);
    return payload;
  });
  content("InsertAck (a reply)", MessageType::kInsertAck, [] {
    Frames payload;
    payload.push_back(core::EncodeMeta(InsertAckMeta{}));
    return payload;
  });
  content("Error", MessageType::kError, [] { return core::ErrorPayload("not for you"); });
  return cases;
}

TEST_CASE("a shard answers each malformed message with an error, counts it and changes nothing") {
  zmq::context_t context;
  ShardThread shard(context, TestShardOptions());
  RawClient client(context, shard.endpoint());
  client.Insert(/*actor=*/1, /*sequence=*/0, /*first_id=*/0, /*count=*/20, /*priority=*/2.0f);
  StatsMeta before = client.Stats();
  REQUIRE(before.mass.size == 20);
  REQUIRE(before.bad_messages == 0);

  for (const BadMessage& bad : BadMessages()) {
    CAPTURE(bad.name);
    client.SendRaw(bad.frames());
    Result<core::Message> reply = client.Receive(/*timeout_seconds=*/1.0);
    REQUIRE_MESSAGE(reply.ok(), reply.status().message());
    CHECK(reply->header.type == MessageType::kError);
    CHECK(core::ErrorText(*reply).size() > 0);
    if (bad.framing_ok) CHECK(reply->header.sequence == kSequence);
    const StatsMeta after = client.Stats();
    CHECK(after.bad_messages == before.bad_messages + 1);
    CheckUnchanged(before, after);
    before = after;
  }

  // Still serving: a valid insert goes in.
  CHECK(client.Insert(1, 1, 20, 5, 2.0f).size == 25);
}

TEST_CASE("a shard drops a frame above its size limit and keeps serving others") {
  zmq::context_t context;
  ShardOptions options = TestShardOptions();
  options.max_batch = 16;
  ShardThread shard(context, options);
  RawClient client(context, shard.endpoint());
  client.Insert(1, 0, 0, 10, 1.0f);
  const StatsMeta before = client.Stats();
  {
    RawClient flooder(context, shard.endpoint());
    Frames payload;
    payload.emplace_back(1 << 20);
    flooder.Send(MessageType::kInsertBatch, 1, std::move(payload));
    // The transport closes that connection; there is no socket left to answer on.
    CHECK_FALSE(flooder.Receive(/*timeout_seconds=*/0.3).ok());
  }
  CHECK(client.Insert(1, 1, 10, 10, 1.0f).size == 20);
  const StatsMeta after = client.Stats();
  CHECK(after.mass.inserted_total == before.mass.inserted_total + 10);
}

// One well-formed message of a random kind, and how many rows it inserts if stored.
struct Template {
  MessageType type;
  Frames payload;
  int rows = 0;
};

Template RandomValidMessage(std::mt19937_64& rng, uint64_t sequence) {
  switch (rng() % 4) {
    case 0: {
      const int rows = 1 + static_cast<int>(rng() % 8);
      return {MessageType::kInsertBatch,
              testing::InsertPayload(TestSchema(), static_cast<int64_t>(sequence) * 8, rows,
                                     1.0f + static_cast<float>(rng() % 4)),
              rows};
    }
    case 1:
      return {MessageType::kSampleRequest,
              testing::SamplePayload(TestSchema(), 1 + static_cast<uint32_t>(rng() % 16))};
    case 2: {
      std::vector<Key> keys;
      std::vector<float> priorities;
      for (int i = 0; i < 4; ++i) {
        keys.push_back(Key{static_cast<uint32_t>(rng() % 300), static_cast<uint32_t>(rng() % 3)});
        priorities.push_back(0.5f + static_cast<float>(rng() % 8));
      }
      return {MessageType::kUpdatePriorities, testing::UpdatePayload(keys, priorities)};
    }
    default:
      return {MessageType::kStatsRequest, {}};
  }
}

TEST_CASE("a shard survives a fuzz of random and corrupted messages and stays consistent") {
  zmq::context_t context;
  ShardOptions options = TestShardOptions();
  options.capacity = 256;
  ShardThread shard(context, options);
  RawClient client(context, shard.endpoint());
  std::mt19937_64 rng(20240917);

  int64_t inserted = 0;
  int64_t bad_messages = 0;
  int errors = 0;
  for (uint64_t i = 0; i < 2000; ++i) {
    CAPTURE(i);
    const int kind = static_cast<int>(rng() % 3);
    Template message = RandomValidMessage(rng, i);
    const uint32_t actor = 1 + static_cast<uint32_t>(rng() % 3);
    if (kind == 0) {
      client.SendRaw(RandomFrames(rng));
    } else if (kind == 1) {
      // Corrupted on the wire: header or payload, checksum left as it was.
      Frames frames = Framed(message.type, i, std::move(message.payload));
      std::memcpy(frames[0].data<uint8_t>() + offsetof(Header, sender), &actor, sizeof(actor));
      Mutate(rng, frames);
      client.SendRaw(std::move(frames));
    } else {
      // Corrupted before framing: the checksum matches, so the decoders see it.
      Mutate(rng, message.payload);
      client.Send(message.type, i, std::move(message.payload), actor);
    }

    // The StatsRequest behind it on the same connection is answered after it.
    std::vector<core::Message> replies;
    const StatsMeta stats = testing::DecodeStats(client.StatsReply(&replies));
    REQUIRE(replies.size() <= 1);
    const bool error = !replies.empty() && replies[0].header.type == MessageType::kError;
    errors += error;
    if (kind == 0) CHECK(error);
    CHECK(stats.bad_messages == bad_messages + (error ? 1 : 0));
    bad_messages = stats.bad_messages;
    if (!replies.empty() && replies[0].header.type == MessageType::kInsertAck) {
      InsertAckMeta ack;
      REQUIRE(core::DecodeMeta(replies[0], &ack).ok());
      if (ack.duplicate == 0) inserted += message.rows;
    }
    REQUIRE(stats.mass.inserted_total == inserted);
    REQUIRE(stats.mass.size == std::min<int64_t>(inserted, options.capacity));
  }
  CHECK(errors > 1000);
  CHECK(inserted > 0);

  // Afterwards it still stores and samples correctly.
  const InsertAckMeta ack = client.Insert(/*actor=*/50, 0, 100000, 10, 4.0f);
  CHECK(ack.duplicate == 0);
  inserted += 10;
  CHECK(ack.size == std::min<int64_t>(inserted, options.capacity));
  ReplaySampler sampler(context, {shard.endpoint()}, TestSchema(), /*client_id=*/1, /*seed=*/6);
  Result<SampledBatch> batch = sampler.Sample(32, /*beta=*/0.4, /*timeout_seconds=*/2.0);
  REQUIRE_MESSAGE(batch.ok(), batch.status().message());
  CHECK(batch->count == 32);
  CHECK(batch->global_size == std::min<int64_t>(inserted, options.capacity));
  CHECK(batch->inserted_total == inserted);
  REQUIRE(batch->column_frames.size() == TestSchema().columns.size());
  for (size_t c = 0; c < batch->column_frames.size(); ++c) {
    CHECK(batch->Column(c).size() == 32 * TestSchema().columns[c].row_bytes());
  }
  for (int i = 0; i < 32; ++i) {
    CHECK(batch->probabilities[i] > 0);
    CHECK(batch->probabilities[i] <= 1);
    CHECK(batch->weights[i] > 0);
    CHECK(batch->weights[i] <= 1.0f + 1e-6f);
  }
}

}  // namespace
}  // namespace ferry::replay
