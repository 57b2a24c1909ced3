// libFuzzer target: arbitrary messages (fuzz_input.h) into a live ShardServer
// over inproc, each followed by a StatsRequest on the same connection. Aborts
// (a finding) when the shard stops answering, or when a message it rejected
// with an Error changed what it stores or counts as inserted. The table keeps
// LZ4-compressed uint8 observations, so the compressed path is fuzzed too.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "core/experience.h"
#include "core/log.h"
#include "core/wire.h"
#include "replay/protocol.h"
#include "replay/shard.h"
#include "tests/fuzz/fuzz_input.h"

namespace ferry::fuzz {
namespace {

constexpr double kReplyTimeoutSeconds = 10;

[[noreturn]] void Finding(const char* what) {
  std::fprintf(stderr, "shard_fuzz: %s\n", what);
  std::abort();
}

// The shard on its thread, and one DEALER connected to it. Lives for the
// whole fuzzing process.
class Harness {
 public:
  Harness() : server_(context_, Options()), client_(context_, zmq::socket_type::dealer) {
    if (!server_.Bind().ok()) Finding("cannot bind inproc://shard_fuzz");
    thread_ = std::thread([this] { server_.Serve(stop_); });
    client_.set(zmq::sockopt::linger, 0);
    client_.connect("inproc://shard_fuzz");
  }

  void Run(std::vector<zmq::message_t> frames) {
    const replay::StatsMeta before = Stats(nullptr);
    for (size_t i = 0; i < frames.size(); ++i) {
      client_.send(frames[i],
                   i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    std::vector<core::Message> replies;
    const replay::StatsMeta after = Stats(&replies);
    const bool rejected =
        replies.size() == 1 && replies[0].header.type == core::MessageType::kError;
    if (rejected &&
        (after.mass.inserted_total != before.mass.inserted_total ||
         after.mass.size != before.mass.size || after.mass.total_mass != before.mass.total_mass)) {
      Finding("a rejected message changed the table");
    }
    if (after.bad_messages < before.bad_messages) Finding("bad_messages went down");
  }

 private:
  static replay::ShardOptions Options() {
    replay::ShardOptions options;
    options.endpoint = "inproc://shard_fuzz";
    options.schema = FuzzSchema();
    options.capacity = 64;
    options.max_batch = 64;
    options.compression = replay::Compression::kLz4;
    return options;
  }

  // Sends a StatsRequest and returns its reply's stats, keeping the replies
  // that came before it in `earlier`.
  replay::StatsMeta Stats(std::vector<core::Message>* earlier) {
    const uint64_t sequence = next_sequence_++;
    core::Send(client_, core::MessageType::kStatsRequest, 0, sequence, {});
    const double deadline = core::NowSeconds() + kReplyTimeoutSeconds;
    while (core::NowSeconds() < deadline) {
      zmq::pollitem_t item{client_.handle(), 0, ZMQ_POLLIN, 0};
      core::Poll(&item, 1, 100);
      std::vector<zmq::message_t> frames = core::ReceiveFrames(client_);
      if (frames.empty()) continue;
      Result<core::Message> m = core::Decode(std::move(frames));
      if (!m.ok()) Finding("the shard sent a malformed reply");
      if (m->header.type == core::MessageType::kStatsReply && m->header.sequence == sequence) {
        replay::StatsMeta stats;
        if (!core::DecodeMeta(*m, &stats).ok()) Finding("malformed StatsReply");
        return stats;
      }
      if (earlier != nullptr) earlier->push_back(std::move(m).value());
    }
    Finding("the shard stopped answering");
  }

  zmq::context_t context_{1};
  replay::ShardServer server_;
  zmq::socket_t client_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  uint64_t next_sequence_ = uint64_t{1} << 40;  // Apart from the sequences inputs use.
};

}  // namespace
}  // namespace ferry::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Never destroyed: the shard serves until the fuzzing process exits.
  static auto* harness = new ferry::fuzz::Harness();
  harness->Run(ferry::fuzz::FramesOf(data, size));
  return 0;
}
