#include "actors/weights_follower.h"

#include <chrono>
#include <utility>

#include "core/wire.h"

namespace ferry::actors {
namespace {

// The longest the thread sleeps between two looks at its stop request and its subscriber's timers.
constexpr int kWaitMs = 20;

}  // namespace

WeightsFollower::WeightsFollower(zmq::context_t& context, std::string endpoint,
                                 std::string broadcast_endpoint, Prepare prepare)
    : context_(context),
      endpoint_(std::move(endpoint)),
      broadcast_endpoint_(std::move(broadcast_endpoint)),
      prepare_(std::move(prepare)),
      thread_([this](const std::stop_token& stop) { Run(stop); }) {}

Result<std::optional<PreparedWeights>> WeightsFollower::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!error_.ok()) return error_;
  std::optional<PreparedWeights> taken = std::move(latest_);
  latest_.reset();
  if (taken) taken_.notify_one();
  return taken;
}

void WeightsFollower::Recycle(PreparedWeights weights) {
  std::lock_guard<std::mutex> lock(mu_);
  spares_.push_back(std::move(weights));
}

void WeightsFollower::Run(const std::stop_token& stop) {
  // Made here: its sockets belong to this thread.
  paramserver::WeightsSubscriber subscriber(context_, endpoint_, broadcast_endpoint_);
  subscriber.RequestLatest();  // Poll repeats it until a first version arrives.
  std::vector<zmq::pollitem_t> items = subscriber.PollItems();
  while (!stop.stop_requested()) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (latest_) {  // Not taken yet: nothing newer is prepared until it is.
        taken_.wait_for(lock, std::chrono::milliseconds(kWaitMs));
        continue;
      }
    }
    std::optional<paramserver::WeightsBlob> blob = subscriber.Poll();
    if (!blob) {
      core::Poll(items.data(), items.size(), kWaitMs);
      continue;
    }
    PreparedWeights weights;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!spares_.empty()) {
        weights = std::move(spares_.back());
        spares_.pop_back();
      }
    }
    const Status prepared = prepare_(*blob, &weights);
    std::lock_guard<std::mutex> lock(mu_);
    if (!prepared.ok()) {
      error_ = prepared;
      return;
    }
    latest_ = std::move(weights);
  }
}

}  // namespace ferry::actors
