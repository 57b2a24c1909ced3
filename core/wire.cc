#include "core/wire.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "core/crc32c.h"

namespace ferry::core {
namespace {

constexpr size_t kMaxErrorText = 1024;

bool KnownType(uint16_t t) {
  return t >= static_cast<uint16_t>(MessageType::kInsertBatch) &&
         t <= static_cast<uint16_t>(MessageType::kWeightsChunk);
}

Header MakeHeader(MessageType type, uint32_t sender, uint64_t sequence,
                  const std::vector<zmq::message_t>& payload, std::optional<uint32_t> payload_crc) {
  Header h;
  h.type = type;
  h.sender = sender;
  h.sequence = sequence;
  size_t bytes = 0;
  uint32_t crc = 0;
  for (const auto& frame : payload) {
    bytes += frame.size();
    if (!payload_crc) crc = Crc32c(crc, frame.data(), frame.size());
  }
  FERRY_CHECK(bytes <= UINT32_MAX);
  h.payload_bytes = static_cast<uint32_t>(bytes);
  h.crc32c = payload_crc.value_or(crc);
  return h;
}

// A frame that reads `size` bytes at `data` inside *owner and keeps *owner alive.
zmq::message_t View(const std::shared_ptr<zmq::message_t>& owner, const uint8_t* data,
                    size_t size) {
  auto* keep = new std::shared_ptr<zmq::message_t>(owner);
  return zmq::message_t(
      const_cast<uint8_t*>(data), size,
      [](void*, void* hint) { delete static_cast<std::shared_ptr<zmq::message_t>*>(hint); }, keep);
}

Status ValidateHeader(const Header& h) {
  if (h.magic != kMagic) return InvalidArgument("bad magic: not a ferry message");
  if (h.version != kProtocolVersion) {
    return InvalidArgument("protocol version " + std::to_string(h.version) + ", expected " +
                           std::to_string(kProtocolVersion));
  }
  if (!KnownType(static_cast<uint16_t>(h.type))) {
    return InvalidArgument("unknown message type " + std::to_string(static_cast<int>(h.type)));
  }
  return Status::Ok();
}

}  // namespace

const char* MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kInsertBatch:
      return "InsertBatch";
    case MessageType::kInsertAck:
      return "InsertAck";
    case MessageType::kSampleRequest:
      return "SampleRequest";
    case MessageType::kSampleReply:
      return "SampleReply";
    case MessageType::kUpdatePriorities:
      return "UpdatePriorities";
    case MessageType::kStatsRequest:
      return "StatsRequest";
    case MessageType::kStatsReply:
      return "StatsReply";
    case MessageType::kPublishWeights:
      return "PublishWeights";
    case MessageType::kPublishAck:
      return "PublishAck";
    case MessageType::kFetchWeights:
      return "FetchWeights";
    case MessageType::kWeights:
      return "Weights";
    case MessageType::kError:
      return "Error";
    case MessageType::kInspectRequest:
      return "InspectRequest";
    case MessageType::kInspectReply:
      return "InspectReply";
    case MessageType::kWeightsAnnounce:
      return "WeightsAnnounce";
    case MessageType::kFetchChunk:
      return "FetchChunk";
    case MessageType::kWeightsChunk:
      return "WeightsChunk";
  }
  return "Unknown";
}

void Send(zmq::socket_t& socket, MessageType type, uint32_t sender, uint64_t sequence,
          std::vector<zmq::message_t> payload, const zmq::message_t* routing_id,
          std::optional<uint32_t> payload_crc) {
  const Header h = MakeHeader(type, sender, sequence, payload, payload_crc);
  if (routing_id != nullptr) {
    RetryInterrupted([&] {
      return socket.send(zmq::const_buffer(routing_id->data(), routing_id->size()),
                         zmq::send_flags::sndmore);
    });
  }
  const auto header_flags = payload.empty() ? zmq::send_flags::none : zmq::send_flags::sndmore;
  RetryInterrupted([&] { return socket.send(zmq::const_buffer(&h, sizeof(h)), header_flags); });
  for (size_t i = 0; i < payload.size(); ++i) {
    const auto flags = i + 1 < payload.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
    RetryInterrupted([&] { return socket.send(payload[i], flags); });
  }
}

int Poll(zmq::pollitem_t* items, size_t count, int timeout_ms) {
  try {
    return zmq::poll(items, count, std::chrono::milliseconds(timeout_ms));
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return 0;
    throw;
  }
}

bool CanSend(zmq::socket_t& socket) {
  const int events = RetryInterrupted([&] { return socket.get(zmq::sockopt::events); });
  return (events & ZMQ_POLLOUT) != 0;
}

Result<Message> Decode(std::vector<zmq::message_t> frames) {
  if (frames.empty()) return InvalidArgument("empty message");
  if (frames[0].size() != kHeaderBytes) {
    return InvalidArgument("header frame is " + std::to_string(frames[0].size()) +
                           " bytes, expected " + std::to_string(kHeaderBytes));
  }
  Message m;
  std::memcpy(&m.header, frames[0].data(), kHeaderBytes);
  FERRY_RETURN_IF_ERROR(ValidateHeader(m.header));
  if (frames.size() - 1 > kMaxPayloadFrames) return InvalidArgument("too many frames");
  size_t bytes = 0;
  uint32_t crc = 0;
  for (size_t i = 1; i < frames.size(); ++i) {
    bytes += frames[i].size();
    crc = Crc32c(crc, frames[i].data(), frames[i].size());
  }
  if (bytes != m.header.payload_bytes) {
    return InvalidArgument("payload is " + std::to_string(bytes) + " bytes, header says " +
                           std::to_string(m.header.payload_bytes));
  }
  if (crc != m.header.crc32c) return InvalidArgument("payload checksum mismatch");
  m.payload.reserve(frames.size() - 1);
  for (size_t i = 1; i < frames.size(); ++i) m.payload.push_back(std::move(frames[i]));
  return m;
}

std::vector<zmq::message_t> ReceiveFrames(zmq::socket_t& socket, size_t max_frames) {
  std::vector<zmq::message_t> frames;
  zmq::message_t frame;
  if (!RetryInterrupted([&] { return socket.recv(frame, zmq::recv_flags::dontwait); })) {
    return frames;
  }
  bool more = frame.more();
  frames.push_back(std::move(frame));
  // The rest of a multipart message is already here: ZeroMQ delivers it atomically.
  while (more) {
    zmq::message_t next;
    FERRY_CHECK(
        RetryInterrupted([&] { return socket.recv(next, zmq::recv_flags::none); }).has_value());
    more = next.more();
    if (frames.size() < max_frames) frames.push_back(std::move(next));
  }
  return frames;
}

std::vector<zmq::message_t> ErrorPayload(const std::string& text) {
  std::vector<zmq::message_t> payload;
  payload.emplace_back(text.data(), std::min(text.size(), kMaxErrorText));
  return payload;
}

std::string ErrorText(const Message& message) {
  if (message.payload.empty()) return "(no text)";
  const auto& f = message.payload[0];
  return std::string(f.data<char>(), std::min(f.size(), kMaxErrorText));
}

zmq::message_t Pack(MessageType type, uint32_t sender, uint64_t sequence,
                    const std::vector<zmq::message_t>& payload,
                    std::optional<uint32_t> payload_crc) {
  // Layout: header, frame count (u32), each frame's size (u64), frame bytes.
  const Header h = MakeHeader(type, sender, sequence, payload, payload_crc);
  size_t total = kHeaderBytes + 4 + 8 * payload.size() + h.payload_bytes;
  zmq::message_t packed(total);
  auto* p = packed.data<uint8_t>();
  std::memcpy(p, &h, kHeaderBytes);
  p += kHeaderBytes;
  const uint32_t count = static_cast<uint32_t>(payload.size());
  std::memcpy(p, &count, 4);
  p += 4;
  for (const auto& f : payload) {
    const uint64_t size = f.size();
    std::memcpy(p, &size, 8);
    p += 8;
  }
  for (const auto& f : payload) {
    std::memcpy(p, f.data(), f.size());
    p += f.size();
  }
  return packed;
}

Result<Message> Unpack(zmq::message_t packed_message) {
  const auto packed = std::make_shared<zmq::message_t>(std::move(packed_message));
  const auto* p = packed->data<uint8_t>();
  size_t left = packed->size();
  if (left < kHeaderBytes + 4) return InvalidArgument("packed message truncated");
  std::vector<zmq::message_t> frames;
  frames.emplace_back(p, kHeaderBytes);
  uint32_t count;
  std::memcpy(&count, p + kHeaderBytes, 4);
  p += kHeaderBytes + 4;
  left -= kHeaderBytes + 4;
  if (count > kMaxPayloadFrames || left < 8ull * count) {
    return InvalidArgument("packed message has a bad frame table");
  }
  std::vector<uint64_t> sizes(count);
  std::memcpy(sizes.data(), p, 8ull * count);
  p += 8ull * count;
  left -= 8ull * count;
  for (uint64_t size : sizes) {
    if (size > left) return InvalidArgument("packed message truncated");
    frames.push_back(View(packed, p, size));
    p += size;
    left -= size;
  }
  if (left != 0) return InvalidArgument("packed message has trailing bytes");
  return Decode(std::move(frames));
}

}  // namespace ferry::core
