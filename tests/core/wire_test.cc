#include "core/wire.h"

#include <doctest/doctest.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/crc32c.h"

namespace ferry::core {
namespace {

struct TestMeta {
  int64_t version = 0;
  uint32_t count = 0;
  double ratio = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(version, count, ratio);
  }
};

zmq::message_t Frame(const std::string& text) { return zmq::message_t(text.data(), text.size()); }

std::string Text(const zmq::message_t& frame) {
  return std::string(frame.data<char>(), frame.size());
}

// Three payload frames, one of them empty, so sizes and order both matter.
std::vector<zmq::message_t> SamplePayload() {
  std::vector<zmq::message_t> payload;
  payload.push_back(Frame("metadata"));
  payload.push_back(Frame(""));
  payload.push_back(Frame(std::string(1000, 'x') + "end"));
  return payload;
}

Header ValidHeader(MessageType type, const std::vector<zmq::message_t>& payload) {
  Header h;
  h.type = type;
  h.sender = 3;
  h.sequence = 99;
  for (const auto& f : payload) {
    h.payload_bytes += static_cast<uint32_t>(f.size());
    h.crc32c = Crc32c(h.crc32c, f.data(), f.size());
  }
  return h;
}

// Header frame followed by the payload, as Decode receives it.
std::vector<zmq::message_t> Frames(const Header& h, std::vector<zmq::message_t> payload) {
  std::vector<zmq::message_t> frames;
  frames.emplace_back(&h, sizeof(h));
  for (auto& f : payload) frames.push_back(std::move(f));
  return frames;
}

// Waits up to two seconds for one multipart message.
std::vector<zmq::message_t> ReceiveWithin(zmq::socket_t& socket) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline) {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    Poll(&item, 1, 50);
    if (item.revents & ZMQ_POLLIN) return ReceiveFrames(socket);
  }
  return {};
}

void CheckSamplePayload(const Message& m) {
  REQUIRE(m.payload.size() == 3);
  CHECK(Text(m.payload[0]) == "metadata");
  CHECK(m.payload[1].size() == 0);
  CHECK(Text(m.payload[2]) == std::string(1000, 'x') + "end");
}

void CheckRejected(const Result<Message>& m, const std::string& fragment) {
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == StatusCode::kInvalidArgument);
  CHECK_MESSAGE(m.status().message().find(fragment) != std::string::npos, m.status().message());
}

TEST_CASE("Send and Decode round trip over an inproc PAIR") {
  zmq::context_t context(1);
  zmq::socket_t a(context, zmq::socket_type::pair);
  zmq::socket_t b(context, zmq::socket_type::pair);
  a.set(zmq::sockopt::linger, 0);
  b.set(zmq::sockopt::linger, 0);
  a.bind("inproc://wire-pair");
  b.connect("inproc://wire-pair");

  Send(a, MessageType::kInsertBatch, /*sender=*/7, /*sequence=*/42, SamplePayload());
  auto m = Decode(ReceiveWithin(b));
  REQUIRE(m.ok());
  CHECK(m->header.magic == kMagic);
  CHECK(m->header.version == kProtocolVersion);
  CHECK(m->header.type == MessageType::kInsertBatch);
  CHECK(m->header.flags == 0);
  CHECK(m->header.sender == 7);
  CHECK(m->header.sequence == 42);
  CHECK(m->header.payload_bytes == 8 + 0 + 1003);
  CHECK(m->header.crc32c == ValidHeader(MessageType::kInsertBatch, SamplePayload()).crc32c);
  CheckSamplePayload(*m);

  Send(b, MessageType::kStatsRequest, /*sender=*/1, /*sequence=*/2, {});
  auto empty = Decode(ReceiveWithin(a));
  REQUIRE(empty.ok());
  CHECK(empty->header.type == MessageType::kStatsRequest);
  CHECK(empty->header.payload_bytes == 0);
  CHECK(empty->payload.empty());
}

TEST_CASE("Send and Decode round trip through DEALER and ROUTER") {
  zmq::context_t context(1);
  zmq::socket_t router(context, zmq::socket_type::router);
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  router.set(zmq::sockopt::linger, 0);
  dealer.set(zmq::sockopt::linger, 0);
  router.bind("inproc://wire-router");
  dealer.connect("inproc://wire-router");

  Send(dealer, MessageType::kSampleRequest, /*sender=*/5, /*sequence=*/11, SamplePayload());
  auto frames = ReceiveWithin(router);
  REQUIRE(frames.size() == 5);  // Routing id, header, three payload frames.
  zmq::message_t routing_id = std::move(frames.front());
  frames.erase(frames.begin());
  auto request = Decode(std::move(frames));
  REQUIRE(request.ok());
  CHECK(request->header.type == MessageType::kSampleRequest);
  CHECK(request->header.sender == 5);
  CheckSamplePayload(*request);

  std::vector<zmq::message_t> reply;
  reply.push_back(Frame("reply"));
  Send(router, MessageType::kSampleReply, /*sender=*/9, request->header.sequence, std::move(reply),
       &routing_id);
  auto answer = Decode(ReceiveWithin(dealer));
  REQUIRE(answer.ok());
  CHECK(answer->header.type == MessageType::kSampleReply);
  CHECK(answer->header.sender == 9);
  CHECK(answer->header.sequence == 11);
  REQUIRE(answer->payload.size() == 1);
  CHECK(Text(answer->payload[0]) == "reply");
}

TEST_CASE("Decode accepts a well-formed message built by hand") {
  auto m = Decode(Frames(ValidHeader(MessageType::kWeights, SamplePayload()), SamplePayload()));
  REQUIRE(m.ok());
  CHECK(m->header.sequence == 99);
  CheckSamplePayload(*m);
}

TEST_CASE("Decode rejects malformed messages") {
  const auto valid = ValidHeader(MessageType::kInsertBatch, SamplePayload());

  SUBCASE("no frames") { CheckRejected(Decode({}), "empty message"); }
  SUBCASE("header frame too short") {
    std::vector<zmq::message_t> frames;
    frames.emplace_back(&valid, kHeaderBytes - 1);
    CheckRejected(Decode(std::move(frames)), "header frame is 31 bytes");
  }
  SUBCASE("header frame too long") {
    std::vector<uint8_t> bytes(kHeaderBytes + 1, 0);
    std::memcpy(bytes.data(), &valid, kHeaderBytes);
    std::vector<zmq::message_t> frames;
    frames.emplace_back(bytes.data(), bytes.size());
    CheckRejected(Decode(std::move(frames)), "header frame is 33 bytes");
  }
  SUBCASE("bad magic") {
    Header h = valid;
    h.magic = 0x12345678;
    CheckRejected(Decode(Frames(h, SamplePayload())), "bad magic");
  }
  SUBCASE("wrong protocol version") {
    Header h = valid;
    h.version = kProtocolVersion + 1;
    CheckRejected(Decode(Frames(h, SamplePayload())),
                  "protocol version " + std::to_string(kProtocolVersion + 1) + ", expected " +
                      std::to_string(kProtocolVersion));
  }
  SUBCASE("unknown type below the range") {
    Header h = valid;
    h.type = static_cast<MessageType>(0);
    CheckRejected(Decode(Frames(h, SamplePayload())), "unknown message type 0");
  }
  SUBCASE("unknown type above the range") {
    Header h = valid;
    h.type = static_cast<MessageType>(static_cast<uint16_t>(MessageType::kWeightsChunk) + 1);
    CheckRejected(Decode(Frames(h, SamplePayload())), "unknown message type 18");
  }
  SUBCASE("payload shorter than the header says") {
    Header h = valid;
    h.payload_bytes += 1;
    CheckRejected(Decode(Frames(h, SamplePayload())), "payload is 1011 bytes, header says 1012");
  }
  SUBCASE("a payload frame missing") {
    auto payload = SamplePayload();
    payload.pop_back();
    CheckRejected(Decode(Frames(valid, std::move(payload))), "header says 1011");
  }
  SUBCASE("payload corrupted") {
    auto payload = SamplePayload();
    payload[2].data<char>()[500] ^= 0x01;
    CheckRejected(Decode(Frames(valid, std::move(payload))), "checksum mismatch");
  }
  SUBCASE("frames reordered") {
    std::vector<zmq::message_t> payload;
    payload.push_back(Frame(std::string(1000, 'x') + "end"));
    payload.push_back(Frame(""));
    payload.push_back(Frame("metadata"));
    CheckRejected(Decode(Frames(valid, std::move(payload))), "checksum mismatch");
  }
}

TEST_CASE("Decode bounds the number of payload frames") {
  auto message_of = [](size_t count) {
    std::vector<zmq::message_t> payload;
    for (size_t i = 0; i < count; ++i) payload.push_back(Frame("f"));
    const Header h = ValidHeader(MessageType::kInsertBatch, payload);
    return Frames(h, std::move(payload));
  };
  CHECK(Decode(message_of(kMaxPayloadFrames)).ok());
  CheckRejected(Decode(message_of(kMaxPayloadFrames + 1)), "too many frames");
}

std::atomic<int> g_signals_handled{0};
void CountSignal(int) { g_signals_handled.fetch_add(1); }

// A process stopping on SIGTERM gets the signal in whatever ZeroMQ call it is making, and ZeroMQ
// reports it as EINTR even from a non-blocking recv on an empty socket or a read of ZMQ_EVENTS:
// Send, ReceiveFrames and CanSend must go on, not throw (actors stopped by Slurm died of both).
TEST_CASE("Send, ReceiveFrames and CanSend carry on through a storm of signals") {
  struct sigaction action {};
  action.sa_handler = CountSignal;  // No SA_RESTART, as signal handlers in the roles.
  sigemptyset(&action.sa_mask);
  struct sigaction previous {};
  REQUIRE(sigaction(SIGUSR2, &action, &previous) == 0);
  zmq::context_t context(1);
  zmq::socket_t a(context, zmq::socket_type::pair);
  zmq::socket_t b(context, zmq::socket_type::pair);
  a.bind("inproc://signals");
  b.connect("inproc://signals");

  const pthread_t target = pthread_self();
  std::atomic<bool> done{false};
  std::thread storm([&] {
    while (!done.load()) {
      pthread_kill(target, SIGUSR2);
      std::this_thread::sleep_for(std::chrono::microseconds(5));
    }
  });
  int received = 0;
  bool in_order = true, can_send = true;
  std::string thrown;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  try {
    for (uint64_t i = 0; std::chrono::steady_clock::now() < deadline; ++i) {
      std::vector<zmq::message_t> payload;
      payload.push_back(Frame("x"));
      Send(a, MessageType::kInsertBatch, 1, i, std::move(payload));
      std::vector<zmq::message_t> frames;
      while ((frames = ReceiveFrames(b)).empty()) {
      }
      in_order = in_order && Decode(std::move(frames))->header.sequence == i;
      ++received;
      while (!ReceiveFrames(b).empty()) in_order = false;  // Empty: the call that met EINTR.
      can_send = can_send && CanSend(a);  // An empty queue's room, asked as actors ask.
    }
  } catch (const zmq::error_t& e) {
    thrown = e.what();
  }
  done.store(true);
  storm.join();
  sigaction(SIGUSR2, &previous, nullptr);
  INFO("after ", received, " messages");
  CHECK(thrown == "");
  CHECK(in_order);
  CHECK(can_send);
  CHECK(received > 1000);
  CHECK(g_signals_handled.load() > 1000);
}

TEST_CASE("ReceiveFrames drains an oversized message and keeps at most max_frames") {
  zmq::context_t context(1);
  zmq::socket_t a(context, zmq::socket_type::pair);
  zmq::socket_t b(context, zmq::socket_type::pair);
  a.set(zmq::sockopt::linger, 0);
  b.set(zmq::sockopt::linger, 0);
  a.bind("inproc://wire-flood");
  b.connect("inproc://wire-flood");

  CHECK(ReceiveFrames(b).empty());  // Nothing waiting is not an error.
  std::vector<zmq::message_t> payload;
  for (int i = 0; i < 100; ++i) payload.push_back(Frame("f"));
  Send(a, MessageType::kInsertBatch, 1, 1, std::move(payload));
  Send(a, MessageType::kStatsRequest, 1, 2, {});

  auto flood = ReceiveWithin(b);
  CHECK(flood.size() == 80);
  CheckRejected(Decode(std::move(flood)), "too many frames");
  // The rest of the oversized message was consumed, so the next one decodes cleanly.
  auto next = Decode(ReceiveWithin(b));
  REQUIRE(next.ok());
  CHECK(next->header.sequence == 2);
}

TEST_CASE("DecodeMeta round trips and checks the metadata frame's size") {
  TestMeta meta;
  meta.version = -7;
  meta.count = 123456;
  meta.ratio = 0.125;
  Message m;
  m.header.type = MessageType::kSampleRequest;

  SUBCASE("round trip") {
    m.payload.push_back(EncodeMeta(meta));
    CHECK(m.payload[0].size() == MetaBytes<TestMeta>());
    TestMeta decoded;
    REQUIRE(DecodeMeta(m, &decoded).ok());
    CHECK(decoded.version == -7);
    CHECK(decoded.count == 123456);
    CHECK(decoded.ratio == 0.125);
  }
  SUBCASE("missing frame") {
    TestMeta decoded;
    const Status status = DecodeMeta(m, &decoded);
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK(status.message().find("SampleRequest") != std::string::npos);
  }
  SUBCASE("one byte short") {
    const auto bytes = EncodeMeta(meta);
    m.payload.emplace_back(bytes.data(), bytes.size() - 1);
    TestMeta decoded;
    CHECK(DecodeMeta(m, &decoded).code() == StatusCode::kInvalidArgument);
  }
  SUBCASE("one byte long") {
    std::string bytes = Text(EncodeMeta(meta)) + "!";
    m.payload.push_back(Frame(bytes));
    TestMeta decoded;
    const Status status = DecodeMeta(m, &decoded);
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK(status.message().find("wrong size") != std::string::npos);
    CHECK(decoded.version == 0);  // Untouched.
  }
}

TEST_CASE("Pack and Unpack round trip, Unpack's frames being views of the packed bytes") {
  zmq::message_t packed =
      Pack(MessageType::kWeights, /*sender=*/4, /*sequence=*/77, SamplePayload());
  CHECK(packed.size() == kHeaderBytes + 4 + 3 * 8 + 1011);
  const auto* first = packed.data<uint8_t>();
  const auto* last = first + packed.size();
  auto m = Unpack(std::move(packed));  // Outlives `packed`: the frames keep its bytes alive.
  REQUIRE(m.ok());
  CHECK(m->header.type == MessageType::kWeights);
  CHECK(m->header.sender == 4);
  CHECK(m->header.sequence == 77);
  CHECK(m->header.payload_bytes == 1011);
  CheckSamplePayload(*m);
  for (const auto& frame : m->payload) {
    const auto* data = frame.data<uint8_t>();
    CHECK((data >= first && data + frame.size() <= last));
  }

  auto empty = Unpack(Pack(MessageType::kPublishAck, 0, 1, {}));
  REQUIRE(empty.ok());
  CHECK(empty->header.type == MessageType::kPublishAck);
  CHECK(empty->payload.empty());
}

TEST_CASE("A payload checksum the caller knows gives the header Send and Pack would compute") {
  const std::vector<zmq::message_t> payload = SamplePayload();
  uint32_t crc = 0;
  for (const auto& frame : payload) crc = Crc32c(crc, frame.data(), frame.size());
  const zmq::message_t computed = Pack(MessageType::kWeights, 1, 2, payload);
  const zmq::message_t given = Pack(MessageType::kWeights, 1, 2, payload, crc);
  CHECK(Text(computed) == Text(given));
  // A wrong one is not checked by the sender; the receiver's Decode refuses the message.
  CheckRejected(Unpack(Pack(MessageType::kWeights, 1, 2, payload, crc ^ 1)), "checksum mismatch");
}

TEST_CASE("Unpack rejects malformed packed messages") {
  const zmq::message_t packed = Pack(MessageType::kWeights, 4, 77, SamplePayload());
  const std::string bytes = Text(packed);
  const size_t table = kHeaderBytes + 4;  // Offset of the frame size table.

  SUBCASE("shorter than a header and a frame count") {
    CheckRejected(Unpack(Frame(bytes.substr(0, table - 1))), "truncated");
    CheckRejected(Unpack(Frame("")), "truncated");
  }
  SUBCASE("last frame cut short") {
    CheckRejected(Unpack(Frame(bytes.substr(0, bytes.size() - 1))), "truncated");
  }
  SUBCASE("frame table cut short") {
    CheckRejected(Unpack(Frame(bytes.substr(0, table + 8 * 3 - 1))), "bad frame table");
  }
  SUBCASE("trailing bytes") { CheckRejected(Unpack(Frame(bytes + "?")), "trailing bytes"); }
  SUBCASE("frame count above the limit") {
    std::string edited = bytes;
    const uint32_t count = kMaxPayloadFrames + 1;
    std::memcpy(edited.data() + kHeaderBytes, &count, 4);
    CheckRejected(Unpack(Frame(edited)), "bad frame table");
  }
  SUBCASE("frame count larger than the table") {
    std::vector<zmq::message_t> one;
    one.push_back(Frame("abc"));
    std::string small = Text(Pack(MessageType::kWeights, 4, 77, one));
    const uint32_t count = 2;  // Needs 16 bytes of table; only 11 bytes follow.
    std::memcpy(small.data() + kHeaderBytes, &count, 4);
    CheckRejected(Unpack(Frame(small)), "bad frame table");
  }
  SUBCASE("frame size beyond the end") {
    std::string edited = bytes;
    const uint64_t huge = ~0ull;
    std::memcpy(edited.data() + table, &huge, 8);
    CheckRejected(Unpack(Frame(edited)), "truncated");
  }
  SUBCASE("corrupted payload byte") {
    std::string edited = bytes;
    edited[edited.size() - 2] ^= 0x20;
    CheckRejected(Unpack(Frame(edited)), "checksum mismatch");
  }
}

TEST_CASE("ErrorPayload bounds the text and ErrorText reads it back") {
  Message m;
  m.header.type = MessageType::kError;
  CHECK(ErrorText(m) == "(no text)");

  m.payload = ErrorPayload("version 3 is not newer than 5");
  REQUIRE(m.payload.size() == 1);
  CHECK(ErrorText(m) == "version 3 is not newer than 5");

  const std::string long_text = std::string(1024, 'a') + std::string(500, 'b');
  m.payload = ErrorPayload(long_text);
  REQUIRE(m.payload.size() == 1);
  CHECK(m.payload[0].size() == 1024);
  CHECK(ErrorText(m) == std::string(1024, 'a'));

  // A peer's oversized error frame is cut on the reading side too.
  m.payload.clear();
  m.payload.push_back(Frame(long_text));
  CHECK(ErrorText(m) == std::string(1024, 'a'));

  m.payload = ErrorPayload("");
  CHECK(ErrorText(m).empty());
}

TEST_CASE("MessageTypeName names every type") {
  CHECK(std::string(MessageTypeName(MessageType::kInsertBatch)) == "InsertBatch");
  CHECK(std::string(MessageTypeName(MessageType::kPublishWeights)) == "PublishWeights");
  CHECK(std::string(MessageTypeName(MessageType::kError)) == "Error");
  CHECK(std::string(MessageTypeName(static_cast<MessageType>(99))) == "Unknown");
}

}  // namespace
}  // namespace ferry::core
