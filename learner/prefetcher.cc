#include "learner/prefetcher.h"

#include <utility>

namespace ferry::learner {
namespace {

using std::chrono::milliseconds;

// Column c of the batch in a tensor of its own.
torch::Tensor Column(const replay::SampledBatch& s, size_t c, int per_row, torch::Dtype dtype) {
  std::vector<int64_t> shape = {s.count};
  if (per_row > 1) shape.push_back(per_row);
  torch::Tensor column = torch::empty(shape, dtype);
  s.CopyColumn(c, column.data_ptr());
  return column;
}

// The batch's columns in tensors on `device` (the one copy of the received rows).
DqnBatch ToTensors(const replay::SampledBatch& s, int obs_dim, const torch::Device& device) {
  DqnBatch b;
  const int n = s.count;
  b.obs = Column(s, core::kObs, obs_dim, torch::kFloat32).view({n, obs_dim});
  b.next_obs = Column(s, core::kNextObs, obs_dim, torch::kFloat32).view({n, obs_dim});
  b.action = Column(s, core::kAction, 1, torch::kInt32).to(torch::kInt64);
  b.reward = Column(s, core::kReward, 1, torch::kFloat32);
  b.discount = Column(s, core::kDiscount, 1, torch::kFloat32);
  b.weights = torch::from_blob(const_cast<float*>(s.weights.data()), {n}).clone();
  for (torch::Tensor* t : {&b.obs, &b.next_obs, &b.action, &b.reward, &b.discount, &b.weights}) {
    *t = t->to(device);
  }
  return b;
}

}  // namespace

Prefetcher::Prefetcher(zmq::context_t& context, std::vector<std::string> endpoints,
                       core::Schema schema, uint32_t client_id, uint64_t seed, int batch_size,
                       int batches_per_request, double beta, int depth, torch::Device device,
                       TargetAhead* ahead)
    : sampler_(context, std::move(endpoints), schema, client_id, seed),
      batch_size_(batch_size),
      batches_per_request_(batches_per_request),
      beta_(beta),
      obs_dim_(static_cast<int>(schema.columns[core::kObs].elements())),
      device_(device),
      ahead_(ahead),
      ready_(static_cast<size_t>(depth)),
      thread_([this] { Run(); }) {}

Prefetcher::~Prefetcher() {
  stop_.store(true);
  ready_.Close();
  thread_.join();
}

Result<Prefetched> Prefetcher::Next(double timeout_seconds) {
  auto batch = ready_.Pop(milliseconds(static_cast<int64_t>(timeout_seconds * 1000)));
  if (!batch)
    return DeadlineExceeded("no replay batch within " + std::to_string(timeout_seconds) + " s");
  return std::move(*batch);
}

void Prefetcher::UpdatePriorities(const replay::SampledBatch& batch,
                                  const std::vector<float>& priorities) {
  std::lock_guard<std::mutex> lock(updates_mu_);
  pending_.keys.count += batch.count;
  pending_.keys.shards.insert(pending_.keys.shards.end(), batch.shards.begin(), batch.shards.end());
  pending_.keys.keys.insert(pending_.keys.keys.end(), batch.keys.begin(), batch.keys.end());
  pending_.priorities.insert(pending_.priorities.end(), priorities.begin(), priorities.end());
}

void Prefetcher::SendUpdates() {
  PendingUpdate pending;
  {
    std::lock_guard<std::mutex> lock(updates_mu_);
    std::swap(pending, pending_);
  }
  if (pending.keys.count > 0) sampler_.UpdatePriorities(pending.keys, pending.priorities);
}

void Prefetcher::Offer(Result<Prefetched> item) {
  while (!stop_.load()) {
    if (ready_.Push(std::move(item), milliseconds(2))) return;
    SendUpdates();
  }
}

void Prefetcher::Run() {
  while (!stop_.load()) {
    SendUpdates();
    auto sampled = sampler_.Sample(batch_size_ * batches_per_request_, beta_, /*timeout=*/1.0);
    if (!sampled.ok()) {
      Offer(sampled.status());
      continue;
    }
    for (replay::SampledBatch& part : replay::Deal(std::move(*sampled), batches_per_request_)) {
      Prefetched p{std::move(part), {}};
      p.batch = ToTensors(p.sampled, obs_dim_, device_);
      if (ahead_ != nullptr && ready_.size() > 0) ahead_->Fill(&p.batch);
      Offer(std::move(p));
    }
  }
}

}  // namespace ferry::learner
