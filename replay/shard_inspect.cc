// ShardServer's InspectRequest handler: a read-only report for `ferry inspect`.
#include <mutex>
#include <string>

#include "replay/inspect.h"
#include "replay/shard.h"

namespace ferry::replay {

Status ShardServer::HandleInspect(const zmq::message_t& routing_id, const core::Message& m) {
  InspectRequestMeta request;
  FERRY_RETURN_IF_ERROR(core::DecodeMeta(m, &request));
  if (m.payload.size() != 1) {
    return InvalidArgument("InspectRequest: " + std::to_string(m.payload.size()) +
                           " frames, expected 1");
  }
  if (request.top_k > kMaxInspectItems || request.sample_count > kMaxInspectItems) {
    return InvalidArgument("InspectRequest: top_k " + std::to_string(request.top_k) +
                           " or sample_count " + std::to_string(request.sample_count) + " above " +
                           std::to_string(kMaxInspectItems));
  }
  InspectReport report;
  report.shard_id = options_.shard_id;
  report.schema = options_.schema;
  report.selector = table_.selector();
  report.inserts_total = limiter_.inserts();
  RateLimiterState limiter;
  limiter.samples_per_insert = options_.samples_per_insert;
  limiter.min_size_to_sample = options_.min_size_to_sample;
  limiter.tolerance = options_.samples_per_insert_tolerance;
  limiter.can_insert = limiter_.CanInsert(table_.size());
  limiter.can_sample = table_.size() > 0 && limiter_.CanSample(table_.size());
  limiter.inserts_waiting = static_cast<int64_t>(pending_.size());
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    report.counters = CountersOf(stats_);
  }
  report.limiter = limiter;
  report.inserted_per_actor = dedup_.inserted_per_actor();
  report.table = ViewTable(table_, request.top_k, request.sample_count, request.seed);
  Reply(routing_id, core::MessageType::kInspectReply, m.header.sequence,
        EncodeInspectReply(report));
  return Status::Ok();
}

}  // namespace ferry::replay
