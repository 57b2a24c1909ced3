#include "replay/sampler.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "core/curve.h"
#include "core/log.h"
#include "core/wire.h"
#include "replay/global_sampling.h"

namespace ferry::replay {

using core::Message;
using core::MessageType;

namespace {

// While a shard is down its queue on our side fills up, and a send into a full
// queue would block the learner for good: requests wait for room until their
// deadline, priority updates (fire and forget) go only where there is room now.
bool HasRoom(zmq::socket_t& socket, double deadline) {
  while (true) {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLOUT, 0};
    const double left = deadline - core::NowSeconds();
    core::Poll(&item, 1, std::max(0, static_cast<int>(left * 1000)));
    if (item.revents & ZMQ_POLLOUT) return true;
    if (core::NowSeconds() >= deadline) return false;
  }
}

Status NotReading(int shard, const std::string& endpoint) {
  return Unavailable("replay shard " + std::to_string(shard) + " at " + endpoint +
                     " stopped reading requests; is it running?");
}

}  // namespace

ReplaySampler::ReplaySampler(zmq::context_t& context, std::vector<std::string> endpoints,
                             core::Schema schema, uint32_t client_id, uint64_t seed)
    : endpoints_(std::move(endpoints)),
      schema_(std::move(schema)),
      fingerprint_(schema_.Fingerprint()),
      client_id_(client_id),
      rng_(seed),
      mass_(endpoints_.size()) {
  for (const auto& endpoint : endpoints_) {
    sockets_.emplace_back(context, zmq::socket_type::dealer);
    sockets_.back().set(zmq::sockopt::linger, core::kLingerMs);
    // Bounded by the largest legal reply, so an oversized one is dropped before it is allocated.
    sockets_.back().set(zmq::sockopt::maxmsgsize,
                        int64_t{core::kMaxBatchRows} * (static_cast<int64_t>(schema_.row_bytes()) +
                                                        kSampleReplyRowOverhead) +
                            (int64_t{64} << 10));
    sockets_.back().set(zmq::sockopt::reconnect_ivl, kReconnectIntervalMs);
    sockets_.back().set(zmq::sockopt::reconnect_ivl_max, kReconnectIntervalMaxMs);
    core::SecureClientSocket(sockets_.back());
    sockets_.back().connect(endpoint);
  }
}

Result<Message> ReplaySampler::Await(int shard, MessageType type, uint64_t sequence,
                                     double deadline) {
  auto& socket = sockets_[shard];
  while (true) {
    const double left = deadline - core::NowSeconds();
    if (left <= 0) {
      return DeadlineExceeded("replay shard " + std::to_string(shard) + " at " + endpoints_[shard] +
                              " did not answer in time");
    }
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    core::Poll(&item, 1, std::max(1, static_cast<int>(left * 1000)));
    if (!(item.revents & ZMQ_POLLIN)) continue;
    Result<Message> m = core::Decode(core::ReceiveFrames(socket));
    if (!m.ok()) {
      core::Log("dropping malformed reply from %s: %s", endpoints_[shard].c_str(),
                m.status().message().c_str());
      continue;
    }
    if (m->header.type == MessageType::kError && m->header.sequence == sequence) {
      return InvalidArgument("replay shard " + endpoints_[shard] + ": " + core::ErrorText(*m));
    }
    if (m->header.type == type && m->header.sequence == sequence) return m;
  }
}

Status ReplaySampler::RefreshMasses(double deadline) {
  auto stats = Stats(std::max(0.0, deadline - core::NowSeconds()));
  if (!stats.ok()) return stats.status();
  for (size_t k = 0; k < stats->size(); ++k) mass_[k] = (*stats)[k].mass;
  have_mass_ = true;
  return Status::Ok();
}

Result<std::vector<StatsMeta>> ReplaySampler::Stats(double timeout_seconds) {
  const double deadline = core::NowSeconds() + timeout_seconds;
  const uint64_t sequence = next_sequence_++;
  for (int k = 0; k < num_shards(); ++k) {
    if (!HasRoom(sockets_[k], deadline)) return NotReading(k, endpoints_[k]);
    core::Send(sockets_[k], MessageType::kStatsRequest, client_id_, sequence, {});
  }
  std::vector<StatsMeta> all(sockets_.size());
  for (int k = 0; k < num_shards(); ++k) {
    auto reply = Await(k, MessageType::kStatsReply, sequence, deadline);
    if (!reply.ok()) return reply.status();
    FERRY_RETURN_IF_ERROR(core::DecodeMeta(*reply, &all[k]));
  }
  return all;
}

Result<SampledBatch> ReplaySampler::Sample(int count, double beta, double timeout_seconds) {
  const double start = core::NowSeconds();
  const double deadline = start + timeout_seconds;
  // A shard seen empty gets no share, so no reply of its own would tell us it filled up.
  const bool any_empty =
      std::any_of(mass_.begin(), mass_.end(), [](const MassInfo& m) { return m.size == 0; });
  if (!have_mass_ || any_empty) FERRY_RETURN_IF_ERROR(RefreshMasses(deadline));

  std::vector<double> masses;
  for (const auto& m : mass_) masses.push_back(m.size > 0 ? m.total_mass : 0.0);
  while (std::all_of(masses.begin(), masses.end(), [](double m) { return m <= 0; })) {
    if (core::NowSeconds() >= deadline) return DeadlineExceeded("every replay shard is empty");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    FERRY_RETURN_IF_ERROR(RefreshMasses(deadline));
    for (size_t k = 0; k < masses.size(); ++k) {
      masses[k] = mass_[k].size > 0 ? mass_[k].total_mass : 0.0;
    }
  }
  const std::vector<int> counts =
      SplitAcrossShards(masses, count, std::uniform_real_distribution<double>(0, 1)(rng_));

  // All shards work on their share at once; only refused shares are asked again.
  std::vector<Message> replies(sockets_.size());
  std::vector<uint64_t> sequences(sockets_.size(), 0);
  auto request = [&](int k) {
    if (!HasRoom(sockets_[k], deadline)) return NotReading(k, endpoints_[k]);
    SampleRequestMeta req;
    req.schema_fingerprint = fingerprint_;
    req.count = static_cast<uint32_t>(counts[k]);
    sequences[k] = next_sequence_++;
    std::vector<zmq::message_t> payload;
    payload.push_back(core::EncodeMeta(req));
    core::Send(sockets_[k], MessageType::kSampleRequest, client_id_, sequences[k],
               std::move(payload));
    return Status::Ok();
  };
  for (int k = 0; k < num_shards(); ++k) {
    if (counts[k] > 0) FERRY_RETURN_IF_ERROR(request(k));
  }
  double waited = 0;
  for (int k = 0; k < num_shards(); ++k) {
    if (counts[k] == 0) continue;
    while (true) {
      auto reply = Await(k, MessageType::kSampleReply, sequences[k], deadline);
      if (!reply.ok()) return reply.status();
      SampleReplyMeta meta;
      FERRY_RETURN_IF_ERROR(core::DecodeMeta(*reply, &meta));
      mass_[k] = meta.mass;
      if (meta.status == SampleStatus::kOk) {
        replies[k] = std::move(reply).value();
        break;
      }
      // The shard must still deliver its share, or the split stops being proportional.
      const double pause_start = core::NowSeconds();
      if (pause_start >= deadline) {
        return DeadlineExceeded(
            "replay shard " + endpoints_[k] + " stayed " +
            (meta.status == SampleStatus::kTooSmall ? "below min size" : "rate-limited"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      waited += core::NowSeconds() - pause_start;
      FERRY_RETURN_IF_ERROR(request(k));
    }
  }

  SampledBatch batch;
  batch.count = count;
  batch.wait_seconds = waited;
  batch.column_frames.resize(schema_.columns.size());
  double global_total = 0;
  double global_min = 0;
  for (const auto& m : mass_) {
    batch.global_size += m.size;
    batch.inserted_total += m.inserted_total;
    global_total += m.total_mass;
    if (m.size > 0 && (global_min == 0 || m.min_mass < global_min)) global_min = m.min_mass;
  }
  for (int k = 0; k < num_shards(); ++k) {
    if (counts[k] == 0) continue;
    Message& r = replies[k];
    const size_t n = static_cast<size_t>(counts[k]);
    if (r.payload.size() != 4 + schema_.columns.size() || r.payload[1].size() != n * sizeof(Key) ||
        r.payload[2].size() != n * sizeof(double)) {
      return Internal("replay shard " + endpoints_[k] + " sent a malformed SampleReply");
    }
    const auto* keys = r.payload[1].data<Key>();
    const auto* masses_k = r.payload[2].data<double>();
    for (size_t i = 0; i < n; ++i) {
      batch.shards.push_back(static_cast<uint32_t>(k));
      batch.keys.push_back(keys[i]);
      batch.probabilities.push_back(masses_k[i] / global_total);
    }
    for (size_t c = 0; c < schema_.columns.size(); ++c) {
      auto& frame = r.payload[4 + c];
      if (frame.size() != n * schema_.columns[c].row_bytes()) {
        return Internal("replay shard " + endpoints_[k] + " sent a column of the wrong size");
      }
      batch.column_frames[c].push_back(std::move(frame));
    }
  }
  batch.weights =
      ImportanceWeights(batch.probabilities, batch.global_size, global_min / global_total, beta);
  return batch;
}

void SampledBatch::CopyColumn(size_t c, void* dst) const {
  auto* out = static_cast<uint8_t*>(dst);
  for (const auto& frame : column_frames[c]) {
    std::memcpy(out, frame.data(), frame.size());
    out += frame.size();
  }
}

std::vector<uint8_t> SampledBatch::Column(size_t c) const {
  size_t bytes = 0;
  for (const auto& frame : column_frames[c]) bytes += frame.size();
  std::vector<uint8_t> column(bytes);
  CopyColumn(c, column.data());
  return column;
}

std::vector<SampledBatch> Deal(SampledBatch whole, int parts) {
  FERRY_CHECK(parts >= 1 && whole.count % parts == 0);
  if (parts == 1) {
    std::vector<SampledBatch> one;
    one.push_back(std::move(whole));
    return one;
  }
  const int rows = whole.count / parts;
  std::vector<SampledBatch> dealt(static_cast<size_t>(parts));
  for (int p = 0; p < parts; ++p) {
    SampledBatch& part = dealt[p];
    part.count = rows;
    part.global_size = whole.global_size;
    part.inserted_total = whole.inserted_total;
    part.wait_seconds = p == 0 ? whole.wait_seconds : 0;
    for (int i = p; i < whole.count; i += parts) {
      part.shards.push_back(whole.shards[i]);
      part.keys.push_back(whole.keys[i]);
      part.probabilities.push_back(whole.probabilities[i]);
      part.weights.push_back(whole.weights[i]);
    }
    part.column_frames.resize(whole.column_frames.size());
  }
  for (size_t c = 0; c < whole.column_frames.size(); ++c) {
    const std::vector<uint8_t> column = whole.Column(c);
    const size_t row_bytes = column.size() / static_cast<size_t>(whole.count);
    for (int p = 0; p < parts; ++p) {
      zmq::message_t frame(static_cast<size_t>(rows) * row_bytes);
      auto* out = static_cast<uint8_t*>(frame.data());
      for (int i = p; i < whole.count; i += parts, out += row_bytes) {
        std::memcpy(out, column.data() + static_cast<size_t>(i) * row_bytes, row_bytes);
      }
      dealt[p].column_frames[c].push_back(std::move(frame));
    }
  }
  return dealt;
}

void ReplaySampler::UpdatePriorities(const SampledBatch& batch,
                                     const std::vector<float>& priorities) {
  FERRY_CHECK(priorities.size() == batch.keys.size());
  for (int k = 0; k < num_shards(); ++k) {
    std::vector<Key> keys;
    std::vector<float> values;
    for (size_t i = 0; i < batch.keys.size(); ++i) {
      if (batch.shards[i] != static_cast<uint32_t>(k)) continue;
      keys.push_back(batch.keys[i]);
      values.push_back(priorities[i]);
    }
    // In messages of at most the rows a shard accepts, in order, so a key updated twice ends
    // at its later priority.
    for (size_t first = 0; first < keys.size(); first += core::kMaxBatchRows) {
      // Lost updates are harmless: a shard that is not reading goes without.
      if (!HasRoom(sockets_[k], /*deadline=*/0)) break;
      const size_t n = std::min(keys.size() - first, static_cast<size_t>(core::kMaxBatchRows));
      UpdatePrioritiesMeta meta;
      meta.count = static_cast<uint32_t>(n);
      std::vector<zmq::message_t> payload;
      payload.push_back(core::EncodeMeta(meta));
      payload.emplace_back(keys.data() + first, n * sizeof(Key));
      payload.emplace_back(values.data() + first, n * sizeof(float));
      core::Send(sockets_[k], MessageType::kUpdatePriorities, client_id_, next_sequence_++,
                 std::move(payload));
    }
  }
}

}  // namespace ferry::replay
