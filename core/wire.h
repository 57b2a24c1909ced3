// The wire protocol every ferry process speaks over ZeroMQ.
//
//   frame 0: Header (32 bytes: magic, version, type, flags, sender, sequence,
//            payload length, CRC32C of the payload)
//   frame 1: metadata, a fixed-size struct in cereal binary
//   frame 2..: raw bulk frames (columns, keys, weight blobs), never re-encoded
//
// Decode validates the header, the frame count, the payload length and the
// checksum before anything reads the payload; DecodeMeta checks the metadata
// frame's exact size. Servers turn every failure into an Error reply and a
// counter, never a crash.
#ifndef FERRY_CORE_WIRE_H_
#define FERRY_CORE_WIRE_H_

#include <cereal/archives/binary.hpp>
#include <cerrno>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "core/status.h"

namespace ferry::core {

inline constexpr uint32_t kMagic = 0x59525246;  // "FRRY" little-endian.
// 2: InsertAck carries durability (replay/protocol.h).
// 3: weight blobs over a chunk size are announced and fetched in chunks (paramserver/protocol.h).
// 4: InsertAck says whether the shard's rate limiter held the batch (replay/protocol.h).
inline constexpr uint16_t kProtocolVersion = 4;
inline constexpr size_t kHeaderBytes = 32;
inline constexpr size_t kMaxPayloadFrames = 64;
// The largest insert, sample or priority update, in rows, a replay shard accepts by default
// (replay::ShardOptions::max_batch).
inline constexpr int kMaxBatchRows = 1 << 16;
// How long a socket that carries multipart messages keeps delivering what it has queued once
// it is closed. Not 0: libzmq 4.3 aborts ("Resource temporarily unavailable",
// src/session_base.cpp) when a connection drops just after a socket closed with linger 0, while
// its I/O thread is part-way through sending a multipart message. A lingering socket can still
// read the rest of that message and drop it, so the drop is handled; closing waits at most this
// long for a peer that does not read.
inline constexpr int kLingerMs = 100;

enum class MessageType : uint16_t {
  kInsertBatch = 1,
  kInsertAck = 2,
  kSampleRequest = 3,
  kSampleReply = 4,
  kUpdatePriorities = 5,
  kStatsRequest = 6,
  kStatsReply = 7,
  kPublishWeights = 8,
  kPublishAck = 9,
  kFetchWeights = 10,
  kWeights = 11,
  kError = 12,
  kInspectRequest = 13,
  kInspectReply = 14,
  kWeightsAnnounce = 15,
  kFetchChunk = 16,
  kWeightsChunk = 17,
};
const char* MessageTypeName(MessageType type);

struct Header {
  uint32_t magic = kMagic;
  uint16_t version = kProtocolVersion;
  MessageType type = MessageType::kError;
  uint32_t flags = 0;
  uint32_t sender = 0;    // Actor id, learner rank or server id.
  uint64_t sequence = 0;  // Per-sender batch number or request id, echoed in replies.
  uint32_t payload_bytes = 0;
  uint32_t crc32c = 0;
};
static_assert(sizeof(Header) == kHeaderBytes);

struct Message {
  Header header;
  std::vector<zmq::message_t> payload;  // Frames after the header.
};

// Fills in the header's length and checksum and sends header + payload as one
// multipart message (after `routing_id` when the socket is a ROUTER).
// `payload_crc`, when given, is the payload's checksum (Crc32c over its frames
// in order) as the caller already knows it, e.g. from a weight blob's checksum
// by Crc32cConcat; it is used as is, saving a pass over the bytes.
void Send(zmq::socket_t& socket, MessageType type, uint32_t sender, uint64_t sequence,
          std::vector<zmq::message_t> payload, const zmq::message_t* routing_id = nullptr,
          std::optional<uint32_t> payload_crc = std::nullopt);

// zmq::poll that treats a signal's interruption (EINTR) as "nothing ready",
// so a SIGTERM reaches the caller's stop flag instead of an exception.
int Poll(zmq::pollitem_t* items, size_t count, int timeout_ms);

// Runs `call`, a socket's send or recv, again while ZeroMQ reports a signal's interruption
// (EINTR). Any call can report one, a non-blocking one too (it looks at the socket's command
// pipe with a zero-timeout poll, which a pending signal interrupts), and it has then done
// nothing. The caller sees its stop flag, set by the signal's handler, at its next check.
template <typename Call>
auto RetryInterrupted(Call call) -> decltype(call()) {
  while (true) {
    try {
      return call();
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
    }
  }
}

// Whether `socket` would take a message now (ZMQ_POLLOUT among its ZMQ_EVENTS). Reading the
// events runs the socket's pending commands, which a signal interrupts as it does a recv: that
// is retried as RetryInterrupted does.
bool CanSend(zmq::socket_t& socket);

// Validates and splits received frames (without any routing id).
Result<Message> Decode(std::vector<zmq::message_t> frames);

// Receives one multipart message without blocking; an empty vector means none
// was waiting. `max_frames` bounds what a peer can make us buffer.
std::vector<zmq::message_t> ReceiveFrames(zmq::socket_t& socket, size_t max_frames = 80);

// An Error message's payload: the text, bounded to 1 KB on decode.
std::vector<zmq::message_t> ErrorPayload(const std::string& text);
std::string ErrorText(const Message& message);

// Packs a whole message into one frame and back: the form used on PUB/SUB,
// where ZMQ_CONFLATE ("latest only") works on single-frame messages.
// `payload_crc` as for Send. Unpack copies nothing: the frames it returns are
// views of `packed`, which lives on until the last of them is gone.
zmq::message_t Pack(MessageType type, uint32_t sender, uint64_t sequence,
                    const std::vector<zmq::message_t>& payload,
                    std::optional<uint32_t> payload_crc = std::nullopt);
Result<Message> Unpack(zmq::message_t packed);

template <typename T>
zmq::message_t EncodeMeta(const T& meta) {
  std::ostringstream out;
  {
    cereal::BinaryOutputArchive archive(out);
    archive(meta);
  }
  const std::string bytes = out.str();
  return zmq::message_t(bytes.data(), bytes.size());
}

// Metadata structs are fixed-size, so a frame of any other size is malformed.
template <typename T>
size_t MetaBytes() {
  static const size_t bytes = EncodeMeta(T{}).size();
  return bytes;
}

template <typename T>
Status DecodeMeta(const Message& message, T* meta) {
  if (message.payload.empty() || message.payload[0].size() != MetaBytes<T>()) {
    return InvalidArgument(std::string(MessageTypeName(message.header.type)) +
                           ": metadata frame missing or of the wrong size");
  }
  std::istringstream in(std::string(message.payload[0].data<char>(), message.payload[0].size()));
  cereal::BinaryInputArchive archive(in);
  archive(*meta);
  return Status::Ok();
}

}  // namespace ferry::core

#endif  // FERRY_CORE_WIRE_H_
