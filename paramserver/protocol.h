// Parameter-server messages (frame 1 metadata, frame 2 the weight blob or a chunk of it).
//
//   PublishWeights  learner rank 0 -> server   meta, blob      -> PublishAck
//   FetchWeights    actor -> server            meta            -> Weights or WeightsAnnounce
//   Weights         server -> subscribers      meta, blob: packed into one frame on PUB
//   WeightsAnnounce server -> subscribers      meta (no blob): packed on PUB
//   FetchChunk      actor -> server            chunk meta      -> WeightsChunk
//   WeightsChunk    server -> actor            chunk meta, bytes (no bytes: version not kept)
//
// A blob of at most the server's chunk size travels whole, in Weights. A bigger
// one is announced (WeightsMeta::chunk_bytes > 0) and each subscriber pulls it
// chunk by chunk at its own pace, a few chunks in flight; every reply is a view
// of the server's one copy of the blob, never a copy per subscriber.
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
// Blobs above this many bytes are fetched in chunks of this size (ServerOptions::chunk_bytes).
inline constexpr uint64_t kChunkBytes = uint64_t{1} << 20;

struct WeightsMeta {
  int64_t version = -1;   // -1: the server holds no weights yet.
  uint32_t checksum = 0;  // CRC32C of the blob.
  uint64_t bytes = 0;
  uint64_t chunk_bytes = 0;  // In WeightsAnnounce: the blob is fetched in chunks of this size.
  template <class Archive>
  void serialize(Archive& ar) {
    ar(version, checksum, bytes, chunk_bytes);
  }
};

// FetchChunk asks for the chunk of `version` that starts at `offset` (a multiple
// of the announced chunk size); WeightsChunk echoes both.
struct ChunkMeta {
  int64_t version = -1;
  uint64_t offset = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(version, offset);
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
inline uint32_t PayloadChecksum(const zmq::message_t& meta_frame, uint32_t blob_checksum,
                                uint64_t blob_bytes) {
  return core::Crc32cConcat(core::Crc32c(0, meta_frame.data(), meta_frame.size()), blob_checksum,
                            blob_bytes);
}
// The blob's (or chunk's) checksum in a decoded [meta, blob] message, from its
// header checksum (which core::Decode verified over the bytes received):
inline uint32_t BlobChecksum(const core::Message& m) {
  const zmq::message_t& meta_frame = m.payload[0];
  return core::Crc32cSuffix(m.header.crc32c, core::Crc32c(0, meta_frame.data(), meta_frame.size()),
                            m.payload[1].size());
}

}  // namespace ferry::paramserver

#endif  // FERRY_PARAMSERVER_PROTOCOL_H_
