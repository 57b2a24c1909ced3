#include "actors/weights_follower.h"

#include <chrono>
#include <utility>

#include "core/log.h"

namespace ferry::actors {
namespace {

constexpr auto kPollPeriod = std::chrono::milliseconds(1);
// How often to ask for the latest version while none has arrived (start-up,
// or a paramserver that was down).
constexpr double kFetchPeriodS = 1.0;

}  // namespace

WeightsFollower::WeightsFollower(zmq::context_t& context, std::string endpoint,
                                 std::string broadcast_endpoint)
    : context_(context),
      endpoint_(std::move(endpoint)),
      broadcast_endpoint_(std::move(broadcast_endpoint)),
      thread_([this](const std::stop_token& stop) { Run(stop); }) {}

std::optional<paramserver::WeightsBlob> WeightsFollower::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<paramserver::WeightsBlob> taken = std::move(latest_);
  latest_.reset();
  return taken;
}

void WeightsFollower::Run(const std::stop_token& stop) {
  // Made here: its sockets belong to this thread.
  paramserver::WeightsSubscriber subscriber(context_, endpoint_, broadcast_endpoint_);
  subscriber.RequestLatest();
  double last_fetch = core::NowSeconds();
  while (!stop.stop_requested()) {
    if (std::optional<paramserver::WeightsBlob> blob = subscriber.Poll()) {
      std::lock_guard<std::mutex> lock(mu_);
      latest_ = std::move(blob);
    } else if (subscriber.version() < 0 && core::NowSeconds() - last_fetch > kFetchPeriodS) {
      subscriber.RequestLatest();
      last_fetch = core::NowSeconds();
    }
    std::this_thread::sleep_for(kPollPeriod);
  }
}

}  // namespace ferry::actors
