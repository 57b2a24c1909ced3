#include "replay/shard.h"

#include <algorithm>
#include <cstring>

#include "core/curve.h"
#include "core/log.h"
#include "core/wire.h"

namespace ferry::replay {

using core::Message;
using core::MessageType;

namespace {

// A fresh nonzero id per shard process, so writers see a restart in its acks.
uint64_t DrawIncarnation() {
  std::random_device device;
  const uint64_t drawn = (static_cast<uint64_t>(device()) << 32 | device()) ^
                         static_cast<uint64_t>(core::NowSeconds() * 1e9);
  return drawn == 0 ? 1 : drawn;
}

// Whether two validated InsertBatch messages are the same batch of the same actor process.
bool SameBatch(const Message& a, const Message& b) {
  if (a.header.sender != b.header.sender || a.header.sequence != b.header.sequence) return false;
  InsertMeta meta_a, meta_b;
  FERRY_CHECK(core::DecodeMeta(a, &meta_a).ok() && core::DecodeMeta(b, &meta_b).ok());
  return meta_a.actor_epoch == meta_b.actor_epoch;
}

}  // namespace

ShardServer::ShardServer(zmq::context_t& context, ShardOptions options)
    : options_(std::move(options)),
      fingerprint_(options_.schema.Fingerprint()),
      incarnation_(DrawIncarnation()),
      socket_(context, zmq::socket_type::router),
      table_(options_.schema, options_.capacity, options_.alpha, options_.selector,
             options_.compression),
      limiter_(options_.samples_per_insert, options_.min_size_to_sample,
               options_.samples_per_insert_tolerance),
      rng_(options_.seed),
      snapshots_(options_.snapshot_dir, options_.shard_id, options_.snapshot_period_seconds) {
  socket_.set(zmq::sockopt::linger, core::kLingerMs);
  // Bounded by the largest legal insert, so an oversized message is dropped by
  // ZeroMQ before it is allocated.
  const int64_t max_message =
      static_cast<int64_t>(options_.max_batch) * (options_.schema.row_bytes() + 16) + 4096;
  socket_.set(zmq::sockopt::maxmsgsize, max_message);
  stats_.capacity = options_.capacity;
  stats_.schema_fingerprint = fingerprint_;
  stats_.alpha = options_.alpha;
}

Status ShardServer::Bind() {
  try {
    core::SecureServerSocket(socket_);
    socket_.bind(options_.endpoint);
  } catch (const zmq::error_t& e) {
    return Unavailable("replay shard " + std::to_string(options_.shard_id) + ": cannot bind " +
                       options_.endpoint + ": " + e.what());
  }
  return Status::Ok();
}

Status ShardServer::Restore() {
  std::lock_guard<std::mutex> lock(stats_mu_);
  FERRY_RETURN_IF_ERROR(snapshots_.Restore(&table_, &dedup_, &limiter_, &stats_));
  stats_.mass = Mass();
  stats_.resident_bytes = table_.resident_bytes();
  return Status::Ok();
}

ShardView ShardServer::View() const {
  return ShardView{&table_, &dedup_, &limiter_, CountersOf(Stats())};
}

void ShardServer::Serve(const std::atomic<bool>& stop) {
  static const std::atomic<bool> never{false};
  Serve(stop, never);
}

void ShardServer::Serve(const std::atomic<bool>& stop, const std::atomic<bool>& learner_ended) {
  zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0}};
  while (!stop.load(std::memory_order_relaxed)) {
    core::Poll(items, 1, 50);
    snapshots_.Tick([this] { return View(); });
    if (!learner_ended_ && learner_ended.load(std::memory_order_relaxed)) {
      learner_ended_ = true;
      core::Log("the learner has ended: admitting every insert (%zu held by the rate limiter)",
                pending_.size());
      DrainPending();
    }
    if (!(items[0].revents & ZMQ_POLLIN)) continue;
    // Drain what is queued, then check `stop` again.
    for (int i = 0; i < 256; ++i) {
      std::vector<zmq::message_t> frames = core::ReceiveFrames(socket_);
      if (frames.empty()) break;
      zmq::message_t routing_id = std::move(frames.front());
      frames.erase(frames.begin());
      Result<Message> decoded = core::Decode(std::move(frames));
      if (!decoded.ok()) {
        {
          std::lock_guard<std::mutex> lock(stats_mu_);
          ++stats_.bad_messages;
        }
        core::Send(socket_, MessageType::kError, options_.shard_id, 0,
                   core::ErrorPayload(decoded.status().message()), &routing_id);
        continue;
      }
      Handle(std::move(routing_id), std::move(decoded).value());
    }
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.mass = Mass();
    stats_.resident_bytes = table_.resident_bytes();
    stats_.inserts_waiting = static_cast<int64_t>(pending_.size());
  }
  snapshots_.Finish(View());
}

StatsMeta ShardServer::Stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return stats_;
}

MassInfo ShardServer::Mass() const {
  MassInfo m;
  m.total_mass = table_.total_mass();
  m.min_mass = table_.min_mass();
  m.size = table_.size();
  m.inserted_total = limiter_.inserts();
  return m;
}

void ShardServer::Handle(zmq::message_t routing_id, Message message) {
  Status status;
  const uint64_t sequence = message.header.sequence;
  switch (message.header.type) {
    case MessageType::kInsertBatch: {
      bool deferred = false;
      status = HandleInsert(routing_id, message, /*held=*/false, &deferred);
      if (status.ok() && deferred) {
        // An actor re-sends what stays unacked; queueing every copy would grow the
        // queue without bound while the limiter holds. Acks go to its latest connection.
        auto same = std::find_if(pending_.begin(), pending_.end(),
                                 [&](const Pending& p) { return SameBatch(p.message, message); });
        if (same == pending_.end()) {
          pending_.push_back({std::move(routing_id), std::move(message)});
        } else {
          same->routing_id = std::move(routing_id);
          std::lock_guard<std::mutex> lock(stats_mu_);
          ++stats_.duplicates_dropped;
        }
        return;
      }
      break;
    }
    case MessageType::kSampleRequest:
      status = HandleSample(routing_id, message);
      if (status.ok()) DrainPending();
      break;
    case MessageType::kUpdatePriorities:
      status = HandleUpdate(message);
      break;
    case MessageType::kStatsRequest:
      HandleStats(routing_id, message);
      break;
    case MessageType::kInspectRequest:
      status = HandleInspect(routing_id, message);
      break;
    default:
      status = InvalidArgument(std::string("a replay shard does not accept ") +
                               core::MessageTypeName(message.header.type));
  }
  if (!status.ok()) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.bad_messages;
    Reply(routing_id, MessageType::kError, sequence, core::ErrorPayload(status.message()));
  }
}

Status ShardServer::ValidateInsert(const Message& m, InsertMeta* meta) const {
  FERRY_RETURN_IF_ERROR(core::DecodeMeta(m, meta));
  const auto& columns = options_.schema.columns;
  if (meta->schema_fingerprint != fingerprint_) {
    return InvalidArgument("InsertBatch: schema differs from this shard's (" +
                           options_.schema.ToString() + ")");
  }
  if (meta->count == 0 || meta->count > static_cast<uint32_t>(options_.max_batch)) {
    return InvalidArgument("InsertBatch: count " + std::to_string(meta->count) + " outside 1.." +
                           std::to_string(options_.max_batch));
  }
  if (m.payload.size() != columns.size() + 2) {
    return InvalidArgument("InsertBatch: " + std::to_string(m.payload.size()) +
                           " frames, expected " + std::to_string(columns.size() + 2));
  }
  for (size_t c = 0; c < columns.size(); ++c) {
    if (m.payload[c + 1].size() != meta->count * columns[c].row_bytes()) {
      return InvalidArgument("InsertBatch: column '" + columns[c].name + "' has " +
                             std::to_string(m.payload[c + 1].size()) + " bytes, expected " +
                             std::to_string(meta->count * columns[c].row_bytes()));
    }
  }
  if (m.payload.back().size() != meta->count * sizeof(float)) {
    return InvalidArgument("InsertBatch: priorities frame has the wrong size");
  }
  return Status::Ok();
}

Status ShardServer::HandleInsert(const zmq::message_t& routing_id, const Message& m, bool held,
                                 bool* deferred) {
  InsertMeta meta;
  FERRY_RETURN_IF_ERROR(ValidateInsert(m, &meta));
  if (!CanInsert()) {
    *deferred = true;
    return Status::Ok();
  }
  const uint32_t actor = m.header.sender;
  InsertAckMeta ack;
  if (dedup_.Accept(actor, meta.actor_epoch, m.header.sequence)) {
    std::vector<const uint8_t*> columns;
    for (size_t c = 0; c < options_.schema.columns.size(); ++c) {
      columns.push_back(m.payload[c + 1].data<uint8_t>());
    }
    table_.Insert(static_cast<int>(meta.count), columns, m.payload.back().data<float>());
    limiter_.Inserted(meta.count);
    dedup_.CountInserted(actor, meta.count);
  } else {
    ack.duplicate = 1;
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.duplicates_dropped;
  }
  ack.size = table_.size();
  ack.snapshots = snapshots_.enabled() ? 1 : 0;
  ack.incarnation = incarnation_;
  ack.durable_through = snapshots_.DurableThrough(actor, meta.actor_epoch);
  ack.held = held ? 1 : 0;
  std::vector<zmq::message_t> payload;
  payload.push_back(core::EncodeMeta(ack));
  Reply(routing_id, MessageType::kInsertAck, m.header.sequence, std::move(payload));
  return Status::Ok();
}

bool ShardServer::CanInsert() const { return learner_ended_ || limiter_.CanInsert(table_.size()); }

void ShardServer::DrainPending() {
  while (!pending_.empty() && CanInsert()) {
    Pending p = std::move(pending_.front());
    pending_.pop_front();
    bool deferred = false;
    // Validated when it arrived; only the limiter can defer it again.
    FERRY_CHECK(HandleInsert(p.routing_id, p.message, /*held=*/true, &deferred).ok());
    FERRY_CHECK(!deferred);
  }
}

Status ShardServer::HandleSample(const zmq::message_t& routing_id, const Message& m) {
  SampleRequestMeta req;
  FERRY_RETURN_IF_ERROR(core::DecodeMeta(m, &req));
  if (req.schema_fingerprint != fingerprint_) {
    return InvalidArgument("SampleRequest: schema differs from this shard's (" +
                           options_.schema.ToString() + ")");
  }
  if (req.count == 0 || req.count > static_cast<uint32_t>(options_.max_batch)) {
    return InvalidArgument("SampleRequest: count " + std::to_string(req.count) + " outside 1.." +
                           std::to_string(options_.max_batch));
  }
  SampleReplyMeta reply;
  // The rows are gathered straight into the frames that carry them.
  std::vector<zmq::message_t> row_frames;
  if (table_.size() < options_.min_size_to_sample || table_.size() == 0) {
    reply.status = SampleStatus::kTooSmall;
  } else if (!limiter_.CanSample(table_.size())) {
    reply.status = SampleStatus::kRateLimited;
  }
  if (reply.status != SampleStatus::kOk) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.samples_refused;
  } else {
    for (const auto& column : options_.schema.columns) {
      row_frames.emplace_back(req.count * column.row_bytes());
    }
    // Only now: a frame of up to 33 bytes keeps its bytes inside the
    // zmq::message_t, so they move whenever the vector grows.
    std::vector<uint8_t*> destinations;
    for (auto& frame : row_frames) destinations.push_back(frame.data<uint8_t>());
    table_.Sample(static_cast<int>(req.count), rng_, &scratch_, destinations);
    limiter_.Sampled(req.count);
    reply.count = req.count;
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      stats_.samples_total += req.count;
    }
  }
  reply.mass = Mass();
  std::vector<zmq::message_t> payload;
  payload.push_back(core::EncodeMeta(reply));
  if (reply.status == SampleStatus::kOk) {
    payload.emplace_back(scratch_.keys.data(), scratch_.keys.size() * sizeof(Key));
    payload.emplace_back(scratch_.masses.data(), scratch_.masses.size() * sizeof(double));
    payload.emplace_back(scratch_.times_sampled.data(),
                         scratch_.times_sampled.size() * sizeof(uint32_t));
    for (auto& frame : row_frames) payload.push_back(std::move(frame));
  }
  Reply(routing_id, MessageType::kSampleReply, m.header.sequence, std::move(payload));
  return Status::Ok();
}

Status ShardServer::HandleUpdate(const Message& m) {
  UpdatePrioritiesMeta meta;
  FERRY_RETURN_IF_ERROR(core::DecodeMeta(m, &meta));
  if (meta.count > static_cast<uint32_t>(options_.max_batch) || m.payload.size() != 3 ||
      m.payload[1].size() != meta.count * sizeof(Key) ||
      m.payload[2].size() != meta.count * sizeof(float)) {
    return InvalidArgument("UpdatePriorities: frames do not match count " +
                           std::to_string(meta.count));
  }
  std::vector<Key> keys(meta.count);
  std::vector<float> priorities(meta.count);
  std::memcpy(keys.data(), m.payload[1].data(), m.payload[1].size());
  std::memcpy(priorities.data(), m.payload[2].data(), m.payload[2].size());
  const int applied =
      table_.UpdatePriorities(keys.data(), priorities.data(), static_cast<int>(meta.count));
  std::lock_guard<std::mutex> lock(stats_mu_);
  stats_.updates_applied += applied;
  stats_.updates_stale += meta.count - applied;
  return Status::Ok();
}

void ShardServer::HandleStats(const zmq::message_t& routing_id, const Message& m) {
  StatsMeta stats;
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.mass = Mass();
    stats_.resident_bytes = table_.resident_bytes();
    stats_.inserts_waiting = static_cast<int64_t>(pending_.size());
    stats = stats_;
  }
  std::vector<uint8_t> per_actor;
  for (const auto& [actor, count] : dedup_.inserted_per_actor()) {
    const uint64_t c = static_cast<uint64_t>(count);
    const auto* a = reinterpret_cast<const uint8_t*>(&actor);
    const auto* n = reinterpret_cast<const uint8_t*>(&c);
    per_actor.insert(per_actor.end(), a, a + sizeof(actor));
    per_actor.insert(per_actor.end(), n, n + sizeof(c));
  }
  std::vector<zmq::message_t> payload;
  payload.push_back(core::EncodeMeta(stats));
  payload.emplace_back(per_actor.data(), per_actor.size());
  Reply(routing_id, MessageType::kStatsReply, m.header.sequence, std::move(payload));
}

void ShardServer::Reply(const zmq::message_t& routing_id, MessageType type, uint64_t sequence,
                        std::vector<zmq::message_t> payload) {
  core::Send(socket_, type, options_.shard_id, sequence, std::move(payload), &routing_id);
}

}  // namespace ferry::replay
