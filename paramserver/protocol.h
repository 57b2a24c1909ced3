// Parameter-server messages (frame 1 metadata, frame 2 the weight blob).
//
//   PublishWeights  learner rank 0 -> server   meta, blob      -> PublishAck
//   FetchWeights    actor -> server            meta            -> Weights (latest)
//   Weights         server -> subscribers      packed into one frame on PUB
#ifndef FERRY_PARAMSERVER_PROTOCOL_H_
#define FERRY_PARAMSERVER_PROTOCOL_H_

#include <cstdint>

namespace ferry::paramserver {

// The largest weight blob a server accepts by default (ServerOptions::max_blob_bytes), and the
// bound every client socket puts on what it receives.
inline constexpr uint64_t kMaxBlobBytes = uint64_t{1} << 30;

struct WeightsMeta {
  int64_t version = -1;   // -1: the server holds no weights yet.
  uint32_t checksum = 0;  // CRC32C of the blob.
  uint64_t bytes = 0;
  template <class Archive>
  void serialize(Archive& ar) { ar(version, checksum, bytes); }
};

struct FetchMeta {
  int64_t have_version = -1;
  template <class Archive>
  void serialize(Archive& ar) { ar(have_version); }
};

}  // namespace ferry::paramserver

#endif  // FERRY_PARAMSERVER_PROTOCOL_H_
