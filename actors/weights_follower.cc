#include "actors/weights_follower.h"

#include <chrono>
#include <utility>

namespace ferry::actors {
namespace {

constexpr auto kPollPeriod = std::chrono::milliseconds(1);

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
  return taken;
}

void WeightsFollower::Recycle(PreparedWeights weights) {
  std::lock_guard<std::mutex> lock(mu_);
  spare_ = std::move(weights);
}

void WeightsFollower::Run(const std::stop_token& stop) {
  // Made here: its sockets belong to this thread.
  paramserver::WeightsSubscriber subscriber(context_, endpoint_, broadcast_endpoint_);
  subscriber.RequestLatest();  // Poll repeats it until a first version arrives.
  while (!stop.stop_requested()) {
    if (std::optional<paramserver::WeightsBlob> blob = subscriber.Poll()) {
      PreparedWeights weights;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (spare_) weights = std::move(*spare_);
        spare_.reset();
      }
      const Status prepared = prepare_(*blob, &weights);
      std::lock_guard<std::mutex> lock(mu_);
      if (!prepared.ok()) {
        error_ = prepared;
        return;
      }
      if (latest_) spare_ = std::move(latest_);  // Superseded before the actor took it.
      latest_ = std::move(weights);
    }
    std::this_thread::sleep_for(kPollPeriod);
  }
}

}  // namespace ferry::actors
