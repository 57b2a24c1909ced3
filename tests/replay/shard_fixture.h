// Test helpers for replay shards on loopback TCP:
//
//   FreePort()    -> a port nothing listens on (the kernel's pick for port 0)
//   ShardThread   -> a ShardServer bound, restored from its snapshot_dir (if
//                    set) and serving on its own thread, stopped (writing a
//                    final snapshot) and joined in the destructor; EndLearner
//                    tells it the learner has ended
//   RawClient     -> a DEALER that speaks the wire protocol by hand, for
//                    well-formed and deliberately broken messages
//   WaitForStats  -> a shard's stats once a predicate holds (or after 2 s)
//   TwoShards     -> shards 0 and 1, each with a RawClient
//   MakeColumns / InsertPayload -> rows whose every column holds the row id
//
// Every receive waits at most a bounded time, so a broken shard fails a test
// instead of hanging it.
#ifndef FERRY_TESTS_REPLAY_SHARD_FIXTURE_H_
#define FERRY_TESTS_REPLAY_SHARD_FIXTURE_H_

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "core/experience.h"
#include "core/log.h"
#include "core/status.h"
#include "core/wire.h"
#include "replay/protocol.h"
#include "replay/shard.h"

namespace ferry::replay::testing {

inline core::Schema TestSchema() {
  return core::TransitionSchema(/*obs_dim=*/4, /*discrete_actions=*/true, /*action_dim=*/1);
}

// A port is handed out once per process: the kernel may offer a closed one again,
// and a test may hold a port for a shard it starts later.
inline int FreePort() {
  static std::set<int> handed_out;
  while (true) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof(address);
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
    ::close(fd);
    REQUIRE(ok);
    if (handed_out.insert(ntohs(address.sin_port)).second) return ntohs(address.sin_port);
  }
}

inline std::string LoopbackEndpoint(int port) { return "tcp://127.0.0.1:" + std::to_string(port); }

// A shard on a fresh loopback port: alpha 1 makes masses equal priorities.
inline ShardOptions TestShardOptions(uint32_t shard_id = 0) {
  ShardOptions options;
  options.shard_id = shard_id;
  options.endpoint = LoopbackEndpoint(FreePort());
  options.schema = TestSchema();
  options.capacity = 1024;
  options.alpha = 1.0;
  options.seed = 17 + shard_id;
  options.max_batch = 1024;
  return options;
}

class ShardThread {
 public:
  ShardThread(zmq::context_t& context, ShardOptions options)
      : endpoint_(options.endpoint), server_(context, std::move(options)) {
    const Status bound = server_.Bind();
    REQUIRE_MESSAGE(bound.ok(), bound.message());
    const Status restored = server_.Restore();
    REQUIRE_MESSAGE(restored.ok(), restored.message());
    thread_ = std::thread([this] { server_.Serve(stop_, learner_ended_); });
  }
  ~ShardThread() {
    stop_ = true;
    thread_.join();
  }
  ShardThread(const ShardThread&) = delete;
  ShardThread& operator=(const ShardThread&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  // What SIGUSR1 tells a shard process: the learner has ended.
  void EndLearner() { learner_ended_ = true; }

 private:
  std::string endpoint_;
  ShardServer server_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> learner_ended_{false};
  std::thread thread_;
};

// Row `id` holds the value id in every element of every column, whatever its dtype.
inline std::vector<std::vector<uint8_t>> MakeColumns(const core::Schema& schema, int64_t first_id,
                                                     int count) {
  std::vector<std::vector<uint8_t>> columns;
  for (const auto& spec : schema.columns) {
    std::vector<uint8_t> bytes(count * spec.row_bytes());
    const size_t element_bytes = core::DTypeSize(spec.dtype);
    for (int r = 0; r < count; ++r) {
      const int64_t id = first_id + r;
      for (size_t e = 0; e < spec.elements(); ++e) {
        uint8_t* out = bytes.data() + r * spec.row_bytes() + e * element_bytes;
        const float f = static_cast<float>(id);
        const int32_t i32 = static_cast<int32_t>(id);
        const uint8_t u8 = static_cast<uint8_t>(id);
        switch (spec.dtype) {
          case core::DType::kFloat32:
            std::memcpy(out, &f, sizeof(f));
            break;
          case core::DType::kInt32:
            std::memcpy(out, &i32, sizeof(i32));
            break;
          case core::DType::kInt64:
            std::memcpy(out, &id, sizeof(id));
            break;
          case core::DType::kUint8:
            std::memcpy(out, &u8, sizeof(u8));
            break;
        }
      }
    }
    columns.push_back(std::move(bytes));
  }
  return columns;
}

// The row id of row `row` in a policy_version column (int64).
inline int64_t RowId(const std::vector<uint8_t>& policy_version_column, size_t row) {
  int64_t id;
  std::memcpy(&id, policy_version_column.data() + row * sizeof(id), sizeof(id));
  return id;
}

// An InsertBatch payload: meta, one frame per column, raw priorities.
inline std::vector<zmq::message_t> InsertPayload(const core::Schema& schema, int64_t first_id,
                                                 int count, float priority, uint64_t epoch = 0) {
  InsertMeta meta;
  meta.schema_fingerprint = schema.Fingerprint();
  meta.actor_epoch = epoch;
  meta.count = static_cast<uint32_t>(count);
  std::vector<zmq::message_t> payload;
  payload.push_back(core::EncodeMeta(meta));
  for (const auto& column : MakeColumns(schema, first_id, count)) {
    payload.emplace_back(column.data(), column.size());
  }
  const std::vector<float> priorities(count, priority);
  payload.emplace_back(priorities.data(), priorities.size() * sizeof(float));
  return payload;
}

inline std::vector<zmq::message_t> SamplePayload(const core::Schema& schema, uint32_t count) {
  SampleRequestMeta meta;
  meta.schema_fingerprint = schema.Fingerprint();
  meta.count = count;
  std::vector<zmq::message_t> payload;
  payload.push_back(core::EncodeMeta(meta));
  return payload;
}

inline std::vector<zmq::message_t> UpdatePayload(const std::vector<Key>& keys,
                                                 const std::vector<float>& priorities) {
  UpdatePrioritiesMeta meta;
  meta.count = static_cast<uint32_t>(keys.size());
  std::vector<zmq::message_t> payload;
  payload.push_back(core::EncodeMeta(meta));
  payload.emplace_back(keys.data(), keys.size() * sizeof(Key));
  payload.emplace_back(priorities.data(), priorities.size() * sizeof(float));
  return payload;
}

inline StatsMeta DecodeStats(const core::Message& reply) {
  StatsMeta stats;
  const Status decoded = core::DecodeMeta(reply, &stats);
  REQUIRE_MESSAGE(decoded.ok(), decoded.message());
  return stats;
}

// The StatsReply's second frame: (u32 actor id, u64 transitions) records.
inline std::map<uint32_t, uint64_t> PerActorCounts(const core::Message& reply) {
  REQUIRE(reply.payload.size() == 2);
  const auto& frame = reply.payload[1];
  constexpr size_t kRecord = sizeof(uint32_t) + sizeof(uint64_t);
  REQUIRE(frame.size() % kRecord == 0);
  std::map<uint32_t, uint64_t> counts;
  for (size_t offset = 0; offset < frame.size(); offset += kRecord) {
    uint32_t actor;
    uint64_t count;
    std::memcpy(&actor, frame.data<uint8_t>() + offset, sizeof(actor));
    std::memcpy(&count, frame.data<uint8_t>() + offset + sizeof(actor), sizeof(count));
    counts[actor] = count;
  }
  return counts;
}

class RawClient {
 public:
  static constexpr uint32_t kClientId = 900;

  RawClient(zmq::context_t& context, const std::string& endpoint)
      : socket_(context, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(endpoint);
  }

  // Sends `frames` exactly as given; the shard's ROUTER adds only our routing id.
  void SendRaw(std::vector<zmq::message_t> frames) {
    for (size_t i = 0; i < frames.size(); ++i) {
      socket_.send(frames[i],
                   i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }

  void Send(core::MessageType type, uint64_t sequence, std::vector<zmq::message_t> payload,
            uint32_t sender = kClientId) {
    core::Send(socket_, type, sender, sequence, std::move(payload));
  }

  // The next reply; DeadlineExceeded when none comes within `timeout_seconds`.
  Result<core::Message> Receive(double timeout_seconds = 1.0) {
    const double deadline = core::NowSeconds() + timeout_seconds;
    while (true) {
      const double left = deadline - core::NowSeconds();
      if (left <= 0) return DeadlineExceeded("no reply from the shard");
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      core::Poll(&item, 1, std::max(1, static_cast<int>(left * 1000)));
      if (item.revents & ZMQ_POLLIN) return core::Decode(core::ReceiveFrames(socket_));
    }
  }

  // Sends a StatsRequest and returns its reply. Replies that arrive before it
  // (to messages sent earlier on this socket) go to `earlier`.
  core::Message StatsReply(std::vector<core::Message>* earlier = nullptr) {
    const uint64_t sequence = next_stats_sequence_++;
    Send(core::MessageType::kStatsRequest, sequence, {});
    while (true) {
      Result<core::Message> reply = Receive();
      REQUIRE_MESSAGE(reply.ok(), reply.status().message());
      if (reply->header.type == core::MessageType::kStatsReply &&
          reply->header.sequence == sequence) {
        return std::move(reply).value();
      }
      REQUIRE(earlier != nullptr);
      earlier->push_back(std::move(reply).value());
    }
  }

  StatsMeta Stats() { return DecodeStats(StatsReply()); }

  // Inserts rows first_id.. with one priority and returns the shard's ack.
  InsertAckMeta Insert(uint32_t actor, uint64_t sequence, int64_t first_id, int count,
                       float priority, uint64_t epoch = 0) {
    Send(core::MessageType::kInsertBatch, sequence,
         InsertPayload(TestSchema(), first_id, count, priority, epoch), actor);
    Result<core::Message> reply = Receive();
    REQUIRE_MESSAGE(reply.ok(), reply.status().message());
    REQUIRE(reply->header.type == core::MessageType::kInsertAck);
    REQUIRE(reply->header.sequence == sequence);
    InsertAckMeta ack;
    REQUIRE(core::DecodeMeta(*reply, &ack).ok());
    return ack;
  }

 private:
  zmq::socket_t socket_;
  uint64_t next_stats_sequence_ = uint64_t{0xFEED} << 48;
};

// Polls the shard's stats until `done` holds or two seconds pass.
template <typename Predicate>
StatsMeta WaitForStats(RawClient& client, Predicate done) {
  const double deadline = core::NowSeconds() + 2.0;
  StatsMeta stats = client.Stats();
  while (!done(stats) && core::NowSeconds() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    stats = client.Stats();
  }
  return stats;
}

// Shards 0 and 1 on loopback, each with a raw client.
struct TwoShards {
  explicit TwoShards(zmq::context_t& context, ShardOptions options_a = TestShardOptions(0),
                     ShardOptions options_b = TestShardOptions(1))
      : a(context, std::move(options_a)),
        b(context, std::move(options_b)),
        client_a(context, a.endpoint()),
        client_b(context, b.endpoint()) {}
  std::vector<std::string> endpoints() const { return {a.endpoint(), b.endpoint()}; }

  ShardThread a;
  ShardThread b;
  RawClient client_a;
  RawClient client_b;
};

}  // namespace ferry::replay::testing

#endif  // FERRY_TESTS_REPLAY_SHARD_FIXTURE_H_
