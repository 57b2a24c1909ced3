// Parameter-server messages (frame 1 metadata, frame 2 the weight blob).
//
//   PublishWeights  learner rank 0 -> server   meta, blob      -> PublishAck
//   FetchWeights    actor -> server            meta            -> Weights (latest)
//   Weights         server -> subscribers      packed into one frame on PUB
#ifndef FERRY_PARAMSERVER_PROTOCOL_H_
#define FERRY_PARAMSERVER_PROTOCOL_H_

#include <cstdint>
#include <zmq.hpp>

#include "core/crc32c.h"
#include "core/wire.h"

namespace ferry::paramserver {

// The largest weight blob a server accepts by default (ServerOptions::max_blob_bytes), and the
// bound every client socket puts on what it receives.
inline constexpr uint64_t kMaxBlobBytes = uint64_t{1} << 30;

struct WeightsMeta {
  int64_t version = -1;   // -1: the server holds no weights yet.
  uint32_t checksum = 0;  // CRC32C of the blob.
  uint64_t bytes = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(version, checksum, bytes);
  }
};

struct FetchMeta {
  int64_t have_version = -1;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(have_version);
  }
};

// A blob is checksummed once, where it is made (WeightsMeta::checksum); every hop
// after that derives one checksum from the other instead of reading the blob again.
// The header checksum of a [meta, blob] payload, reading only the meta frame:
inline uint32_t PayloadChecksum(const zmq::message_t& meta_frame, const WeightsMeta& meta) {
  return core::Crc32cConcat(core::Crc32c(0, meta_frame.data(), meta_frame.size()), meta.checksum,
                            meta.bytes);
}
// The blob's checksum in a decoded [meta, blob] message, from its header checksum
// (which core::Decode verified over the bytes received):
inline uint32_t BlobChecksum(const core::Message& m) {
  const zmq::message_t& meta_frame = m.payload[0];
  return core::Crc32cSuffix(m.header.crc32c, core::Crc32c(0, meta_frame.data(), meta_frame.size()),
                            m.payload[1].size());
}

}  // namespace ferry::paramserver

#endif  // FERRY_PARAMSERVER_PROTOCOL_H_
