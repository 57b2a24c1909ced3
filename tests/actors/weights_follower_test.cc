#include "actors/weights_follower.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "core/log.h"
#include "paramserver/client.h"
#include "paramserver/server.h"
#include "tests/free_ports.h"

namespace ferry::actors {
namespace {

using testing::FreeTcpEndpoints;

// A ParamServer serving on its own thread, and a learner-side publisher.
struct ServerFixture {
  ServerFixture() : server(context, Options()), publisher(context, endpoints.first) {
    REQUIRE(server.Bind().ok());
    serving = std::thread([this] { server.Serve(stop); });
  }
  ~ServerFixture() {
    stop.store(true);
    serving.join();
  }
  paramserver::ServerOptions Options() {
    endpoints = FreeTcpEndpoints();
    paramserver::ServerOptions options;
    options.endpoint = endpoints.first;
    options.broadcast_endpoint = endpoints.second;
    return options;
  }
  void Publish(int64_t version) {
    const std::vector<uint8_t> blob(1000, static_cast<uint8_t>(version));
    publisher.Publish(version, blob.data(), blob.size());
  }
  // The first version Take returns within `seconds`.
  std::optional<paramserver::WeightsBlob> TakeWithin(WeightsFollower& follower, double seconds) {
    const double start = core::NowSeconds();
    while (core::NowSeconds() - start < seconds) {
      if (auto blob = follower.Take()) return blob;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return std::nullopt;
  }

  zmq::context_t context{1};
  std::pair<std::string, std::string> endpoints;
  paramserver::ParamServer server;
  paramserver::WeightsPublisher publisher;
  std::atomic<bool> stop{false};
  std::thread serving;
};

TEST_CASE_FIXTURE(ServerFixture, "A follower started late fetches the latest version") {
  Publish(3);
  const double start = core::NowSeconds();
  while (server.latest_version() < 3 && core::NowSeconds() - start < 5) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(server.latest_version() == 3);
  WeightsFollower follower(context, endpoints.first, endpoints.second);
  const auto blob = TakeWithin(follower, 5.0);
  REQUIRE(blob.has_value());
  CHECK(blob->version == 3);
  CHECK(std::vector<uint8_t>(blob->data(), blob->data() + blob->size()) ==
        std::vector<uint8_t>(1000, 3));
  CHECK_FALSE(follower.Take().has_value());
}

TEST_CASE_FIXTURE(ServerFixture, "A follower hands over only the newest of the versions it got") {
  WeightsFollower follower(context, endpoints.first, endpoints.second);
  // Before any publication there is nothing to take, and asking does not wait.
  CHECK_FALSE(follower.Take().has_value());
  int64_t newest_taken = -1;
  const double start = core::NowSeconds();
  int64_t published = 0;
  while (newest_taken < 20 && core::NowSeconds() - start < 10) {
    if (published < 20) Publish(++published);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (auto blob = follower.Take()) {
      CHECK(blob->version > newest_taken);
      newest_taken = blob->version;
    }
  }
  CHECK(newest_taken == 20);
}

}  // namespace
}  // namespace ferry::actors
