// Raw wire messages for tests that feed servers bad input: framing by hand, random frames,
// and corruption of valid messages.
#ifndef FERRY_TESTS_CORRUPT_MESSAGES_H_
#define FERRY_TESTS_CORRUPT_MESSAGES_H_

#include <cstdint>
#include <random>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "core/crc32c.h"
#include "core/wire.h"

namespace ferry::testing {

using Frames = std::vector<zmq::message_t>;

// A correct header for `payload`: right length and checksum.
inline core::Header HeaderFor(core::MessageType type, uint64_t sequence, const Frames& payload,
                              uint32_t sender) {
  core::Header header;
  header.type = type;
  header.sender = sender;
  header.sequence = sequence;
  for (const auto& frame : payload) {
    header.payload_bytes += static_cast<uint32_t>(frame.size());
    header.crc32c = core::Crc32c(header.crc32c, frame.data(), frame.size());
  }
  return header;
}

// Header frame then payload, as a DEALER sends them.
inline Frames WithHeader(const core::Header& header, Frames payload) {
  Frames frames;
  frames.emplace_back(&header, sizeof(header));
  for (auto& frame : payload) frames.push_back(std::move(frame));
  return frames;
}

inline Frames Framed(core::MessageType type, uint64_t sequence, Frames payload, uint32_t sender) {
  const core::Header header = HeaderFor(type, sequence, payload, sender);
  return WithHeader(header, std::move(payload));
}

inline zmq::message_t Truncated(const zmq::message_t& frame, size_t drop) {
  return zmq::message_t(frame.data(), frame.size() - drop);
}

// Flips 1-3 random bytes or cuts a random frame short.
inline void Mutate(std::mt19937_64& rng, Frames& frames) {
  std::vector<size_t> nonempty;
  for (size_t f = 0; f < frames.size(); ++f) {
    if (frames[f].size() > 0) nonempty.push_back(f);
  }
  if (nonempty.empty()) {
    frames.emplace_back(1 + rng() % 16);
    return;
  }
  zmq::message_t& frame = frames[nonempty[rng() % nonempty.size()]];
  if (rng() % 3 == 0) {
    frame = Truncated(frame, 1 + rng() % frame.size());
    return;
  }
  const int flips = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < flips; ++i) {
    frame.data<uint8_t>()[rng() % frame.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
  }
}

// 1-4 frames of random bytes; half the time the first is a plausible header (right magic and
// version, any message type) over them.
inline Frames RandomFrames(std::mt19937_64& rng) {
  Frames frames;
  const int count = 1 + static_cast<int>(rng() % 4);
  for (int f = 0; f < count; ++f) {
    zmq::message_t frame(rng() % 65);
    for (size_t i = 0; i < frame.size(); ++i)
      frame.data<uint8_t>()[i] = static_cast<uint8_t>(rng());
    frames.push_back(std::move(frame));
  }
  if (rng() % 2 == 0) {
    core::Header header;
    header.type = static_cast<core::MessageType>(
        rng() % (static_cast<uint16_t>(core::MessageType::kWeightsChunk) + 1));
    header.sequence = rng();
    header.payload_bytes = static_cast<uint32_t>(rng() % 200);
    header.crc32c = static_cast<uint32_t>(rng());
    frames[0] = zmq::message_t(&header, sizeof(header));
  }
  return frames;
}

}  // namespace ferry::testing

#endif  // FERRY_TESTS_CORRUPT_MESSAGES_H_
