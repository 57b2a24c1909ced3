// How the libFuzzer targets in tests/fuzz/ turn their input bytes into
// ZeroMQ frames, and back for the seed corpus (make_seeds.cc):
//
//   byte 0     bit 0 set: a valid header (magic, version, payload length and
//              checksum) goes in front of the frames, of type byte 1 and
//              sequence 1, so mutations reach the decoders past the checksum;
//              clear: the frames are used exactly as given (byte 1 is unused)
//   then       frames, each a little-endian u16 length and that many bytes (a
//              last frame cut short takes what is left)
#ifndef FERRY_TESTS_FUZZ_FUZZ_INPUT_H_
#define FERRY_TESTS_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>
#include <zmq.hpp>

#include "core/crc32c.h"
#include "core/experience.h"
#include "core/wire.h"

namespace ferry::fuzz {

inline constexpr size_t kMaxFrames = 80;  // As many as core::ReceiveFrames keeps.

// The shard and snapshot targets' schema: CartPole-like, with 8x8 uint8
// observations so that LZ4-compressed columns are fuzzed too.
inline core::Schema FuzzSchema() {
  core::Schema schema = core::TransitionSchema(/*obs_dim=*/1, /*discrete_actions=*/true, 1);
  for (int c : {core::kObs, core::kNextObs}) {
    schema.columns[c].dtype = core::DType::kUint8;
    schema.columns[c].shape = {8, 8};
  }
  return schema;
}

inline std::vector<zmq::message_t> FramesOf(const uint8_t* data, size_t size) {
  std::vector<zmq::message_t> frames;
  if (size < 2) return frames;
  const bool framed = (data[0] & 1) != 0;
  const uint16_t type = data[1];
  size_t at = 2;
  while (at < size && frames.size() < kMaxFrames) {
    uint16_t length = data[at];
    if (at + 1 < size) length = static_cast<uint16_t>(length | data[at + 1] << 8);
    at += 2;
    const size_t n = at < size ? std::min<size_t>(length, size - at) : 0;
    frames.emplace_back(data + std::min(at, size), n);
    at += n;
  }
  if (framed) {
    core::Header header;
    header.type = static_cast<core::MessageType>(type);
    header.sequence = 1;
    for (const auto& frame : frames) {
      header.payload_bytes += static_cast<uint32_t>(frame.size());
      header.crc32c = core::Crc32c(header.crc32c, frame.data(), frame.size());
    }
    frames.insert(frames.begin(), zmq::message_t(&header, sizeof(header)));
  }
  return frames;
}

// The input FramesOf reads as a framed message of `type` with `payload`.
inline std::vector<uint8_t> InputOf(core::MessageType type,
                                    const std::vector<zmq::message_t>& payload) {
  std::vector<uint8_t> input = {1, static_cast<uint8_t>(type)};
  for (const auto& frame : payload) {
    const size_t n = std::min<size_t>(frame.size(), UINT16_MAX);
    input.push_back(static_cast<uint8_t>(n));
    input.push_back(static_cast<uint8_t>(n >> 8));
    input.insert(input.end(), frame.data<uint8_t>(), frame.data<uint8_t>() + n);
  }
  return input;
}

}  // namespace ferry::fuzz

#endif  // FERRY_TESTS_FUZZ_FUZZ_INPUT_H_
