#include "learner/prefetcher.h"

namespace ferry::learner {

using std::chrono::milliseconds;

Prefetcher::Prefetcher(zmq::context_t& context, std::vector<std::string> endpoints,
                       core::Schema schema, uint32_t client_id, uint64_t seed, int batch_size,
                       double beta, int depth)
    : sampler_(context, std::move(endpoints), std::move(schema), client_id, seed),
      batch_size_(batch_size),
      beta_(beta),
      ready_(static_cast<size_t>(depth)),
      thread_([this] { Run(); }) {}

Prefetcher::~Prefetcher() {
  stop_.store(true);
  ready_.Close();
  thread_.join();
}

Result<replay::SampledBatch> Prefetcher::Next(double timeout_seconds) {
  auto batch = ready_.Pop(milliseconds(static_cast<int64_t>(timeout_seconds * 1000)));
  if (!batch)
    return DeadlineExceeded("no replay batch within " + std::to_string(timeout_seconds) + " s");
  return std::move(*batch);
}

void Prefetcher::UpdatePriorities(const replay::SampledBatch& batch,
                                  std::vector<float> priorities) {
  PendingUpdate update;
  update.keys.count = batch.count;
  update.keys.shards = batch.shards;
  update.keys.keys = batch.keys;
  update.priorities = std::move(priorities);
  std::lock_guard<std::mutex> lock(updates_mu_);
  updates_.push_back(std::move(update));
}

void Prefetcher::SendUpdates() {
  std::vector<PendingUpdate> updates;
  {
    std::lock_guard<std::mutex> lock(updates_mu_);
    updates.swap(updates_);
  }
  for (const auto& u : updates) sampler_.UpdatePriorities(u.keys, u.priorities);
}

void Prefetcher::Run() {
  while (!stop_.load()) {
    SendUpdates();
    Result<replay::SampledBatch> batch = sampler_.Sample(batch_size_, beta_, /*timeout=*/1.0);
    // Wait for room, but keep priority updates flowing while the learner is busy.
    while (!stop_.load()) {
      if (ready_.Push(std::move(batch), milliseconds(2))) break;
      SendUpdates();
    }
  }
}

}  // namespace ferry::learner
