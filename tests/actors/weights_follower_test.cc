#include "actors/weights_follower.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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

namespace ferry::actors {
namespace {

// Two loopback endpoints on ports free right now.
std::pair<std::string, std::string> FreeTcpEndpoints() {
  std::string endpoints[2];
  int fds[2];
  for (int i = 0; i < 2; ++i) {
    fds[i] = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fds[i] >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    REQUIRE(::bind(fds[i], reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
    REQUIRE(::getsockname(fds[i], reinterpret_cast<sockaddr*>(&address), &length) == 0);
    endpoints[i] = "tcp://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  }
  for (int fd : fds) ::close(fd);
  return {endpoints[0], endpoints[1]};
}

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
  CHECK(blob->bytes == std::vector<uint8_t>(1000, 3));
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
