// The learner's view of a sharded replay: global-proportional batches.
//
//   Sample(B) -> split B over shards by their priority mass (global_sampling.h)
//             -> SampleRequest to each shard (DEALER per shard, all in flight)
//             -> retry shards that are rate-limited or too small, until deadline
//             -> concatenate columns, global P(i) and IS weights
//   Deal(batch, G) -> G batches from one sample of G * B, each still global-proportional
//   UpdatePriorities(batch, |TD|) -> per-shard UpdatePriorities, fire and forget (a batch of
//                                    several learner batches' keys may be passed at once)
//
// Used from one thread (its sockets are not thread-safe).
#ifndef FERRY_REPLAY_SAMPLER_H_
#define FERRY_REPLAY_SAMPLER_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "core/experience.h"
#include "core/status.h"
#include "core/wire.h"
#include "replay/protocol.h"
#include "replay/table.h"

namespace ferry::replay {

struct SampledBatch {
  int count = 0;
  std::vector<uint32_t> shards;  // Owning shard of each item.
  std::vector<Key> keys;
  std::vector<double> probabilities;  // Global P(i).
  std::vector<float> weights;         // Normalised IS weights.
  // Per schema column, its rows in key order as the shards sent them: one frame per
  // shard that contributed, kept as received (no copy). CopyColumn and Column join them.
  std::vector<std::vector<zmq::message_t>> column_frames;
  int64_t global_size = 0;
  int64_t inserted_total = 0;  // Transitions ever stored, all shards.
  double wait_seconds = 0;     // Time spent waiting on rate limits.

  // Writes column c's count rows to dst (count * row bytes).
  void CopyColumn(size_t c, void* dst) const;
  std::vector<uint8_t> Column(size_t c) const;
};

// `whole`'s rows dealt round-robin into `parts` batches: row i goes to part i % parts, with its
// shard, key, probability, weight and columns (one frame per column). Rows arrive grouped by
// shard, so each part holds every shard's rows in the whole's proportion, within one row, and
// each row keeps its global probability and weight. The sizes and inserted count are copied to
// every part; the rate-limit wait stays with part 0. whole.count must be a multiple of parts.
std::vector<SampledBatch> Deal(SampledBatch whole, int parts);

class ReplaySampler {
 public:
  ReplaySampler(zmq::context_t& context, std::vector<std::string> endpoints, core::Schema schema,
                uint32_t client_id, uint64_t seed);

  Result<SampledBatch> Sample(int count, double beta, double timeout_seconds);
  void UpdatePriorities(const SampledBatch& batch, const std::vector<float>& priorities);
  // Stats of every shard; fails if one does not answer in time.
  Result<std::vector<StatsMeta>> Stats(double timeout_seconds);
  int num_shards() const { return static_cast<int>(sockets_.size()); }

 private:
  Status RefreshMasses(double deadline);
  // Waits for the reply to request `sequence` on `shard`; skips stale replies.
  Result<core::Message> Await(int shard, core::MessageType type, uint64_t sequence,
                              double deadline);

  std::vector<std::string> endpoints_;
  core::Schema schema_;
  uint64_t fingerprint_;  // schema_.Fingerprint(), rendered once.
  uint32_t client_id_;
  std::mt19937_64 rng_;
  std::vector<zmq::socket_t> sockets_;
  std::vector<MassInfo> mass_;
  bool have_mass_ = false;
  uint64_t next_sequence_ = 1;
};

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_SAMPLER_H_
