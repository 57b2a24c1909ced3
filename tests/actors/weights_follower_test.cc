#include "actors/weights_follower.h"

#include <torch/torch.h>
// After LibTorch: the glog it includes defines CHECK too, and doctest's must win.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "actors/vector_actor.h"
#include "core/log.h"
#include "models/q_network.h"
#include "paramserver/client.h"
#include "paramserver/server.h"
#include "tests/free_ports.h"

namespace ferry::actors {
namespace {

using testing::FreeTcpEndpoints;

constexpr int kObs = 4, kActions = 2;
const std::vector<int> kHidden = {16};

// The blob of a CartPole network whose weights differ per version.
std::vector<uint8_t> BlobOf(int64_t version) {
  models::QNetwork net(kObs, kActions, kHidden);
  std::vector<float> values(models::ParameterCount(*net));
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = 0.01f * static_cast<float>(i % 97) + static_cast<float>(version);
  }
  std::vector<uint8_t> blob(values.size() * sizeof(float));
  std::memcpy(blob.data(), values.data(), blob.size());
  return blob;
}

// The weights `net` holds, in a blob's layout, to compare with BlobOf.
std::vector<uint8_t> BlobHeld(models::FastMlp& net) {
  std::vector<uint8_t> blob;
  auto append = [&blob](const float* values, size_t count) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(values);
    blob.insert(blob.end(), bytes, bytes + count * sizeof(float));
  };
  for (int l = 0; l < net.num_layers(); ++l) {
    append(net.weight(l), static_cast<size_t>(net.layer_in(l)) * net.layer_out(l));
    append(net.bias(l), net.layer_out(l));
  }
  return blob;
}

std::unique_ptr<VectorActor> SmallActor() {
  VectorActorOptions options;
  options.env_id = "CartPole-v1";
  options.env_seeds = {1};
  options.epsilon = {0.1};
  options.hidden = kHidden;
  auto made = VectorActor::Create(options);
  REQUIRE(made.ok());
  return std::move(made).value();
}

// A ParamServer serving on its own thread, a learner-side publisher, and an
// actor whose PrepareWeights the followers run.
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
  void Publish(int64_t version, const std::vector<uint8_t>& blob) {
    publisher.Publish(version, blob.data(), blob.size());
  }
  // The actor's PrepareWeights, after `observe` has seen the weights it is about to fill.
  WeightsFollower::Prepare Prepare(std::function<void(const PreparedWeights&)> observe =
                                       [](const PreparedWeights&) {}) {
    return [this, observe](const paramserver::WeightsBlob& blob, PreparedWeights* into) {
      observe(*into);
      return actor->PrepareWeights(blob.version, blob.data(), blob.size(), into);
    };
  }
  // The first version Take returns within `seconds`.
  std::optional<PreparedWeights> TakeWithin(WeightsFollower& follower, double seconds) {
    const double start = core::NowSeconds();
    while (core::NowSeconds() - start < seconds) {
      auto taken = follower.Take();
      REQUIRE(taken.ok());
      if (*taken) return std::move(*taken);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return std::nullopt;
  }

  // Publishes versions from *next on, one every 10 ms, until `follower` hands one over (within
  // `seconds`), and returns it. A subscriber still connecting misses broadcasts (a version it
  // fetched instead may be its first), so a test that needs one delivered publishes until it is.
  std::optional<PreparedWeights> PublishUntilTaken(WeightsFollower& follower, int64_t* next,
                                                   double seconds) {
    const double start = core::NowSeconds();
    while (core::NowSeconds() - start < seconds) {
      Publish(*next, BlobOf(*next));
      ++*next;
      if (auto taken = TakeWithin(follower, 0.01)) return taken;
    }
    return std::nullopt;
  }

  zmq::context_t context{1};
  std::pair<std::string, std::string> endpoints;
  paramserver::ParamServer server;
  paramserver::WeightsPublisher publisher;
  std::unique_ptr<VectorActor> actor = SmallActor();
  std::atomic<bool> stop{false};
  std::thread serving;
};

TEST_CASE_FIXTURE(ServerFixture, "A follower started late fetches the latest version") {
  Publish(3, BlobOf(3));
  const double start = core::NowSeconds();
  while (server.latest_version() < 3 && core::NowSeconds() - start < 5) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(server.latest_version() == 3);
  WeightsFollower follower(context, endpoints.first, endpoints.second, Prepare());
  auto weights = TakeWithin(follower, 5.0);
  REQUIRE(weights.has_value());
  CHECK(weights->version == 3);
  CHECK(BlobHeld(*weights->net) == BlobOf(3));
  auto again = follower.Take();
  REQUIRE(again.ok());
  CHECK_FALSE(again->has_value());
}

TEST_CASE_FIXTURE(ServerFixture, "A follower hands over only the newest of the versions it got") {
  WeightsFollower follower(context, endpoints.first, endpoints.second, Prepare());
  // Before any publication there is nothing to take, and asking does not wait.
  CHECK_FALSE(follower.Take()->has_value());
  int64_t newest_taken = -1;
  const double start = core::NowSeconds();
  int64_t published = 0;
  while (newest_taken < 20 && core::NowSeconds() - start < 10) {
    if (published < 20) {
      ++published;
      Publish(published, BlobOf(published));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    auto taken = follower.Take();
    REQUIRE(taken.ok());
    if (*taken) {
      CHECK((*taken)->version > newest_taken);
      newest_taken = (*taken)->version;
      CHECK(BlobHeld(*(*taken)->net) == BlobOf(newest_taken));
      follower.Recycle(std::move(**taken));
    }
  }
  CHECK(newest_taken == 20);
}

TEST_CASE_FIXTURE(ServerFixture, "A follower fills recycled weights instead of allocating") {
  WeightsFollower follower(context, endpoints.first, endpoints.second, Prepare());
  Publish(1, BlobOf(1));
  auto first = TakeWithin(follower, 5.0);
  REQUIRE(first.has_value());
  const void* storage = first->net->weight(0);
  follower.Recycle(std::move(*first));
  int64_t next = 2;
  auto second = PublishUntilTaken(follower, &next, 5.0);
  REQUIRE(second.has_value());
  CHECK(second->version >= 2);
  CHECK(second->net->weight(0) == storage);
  CHECK(BlobHeld(*second->net) == BlobOf(second->version));
}

TEST_CASE_FIXTURE(ServerFixture,
                  "A follower outpacing its actor allocates only while every set is in use") {
  std::atomic<int> allocated{0};
  WeightsFollower follower(context, endpoints.first, endpoints.second,
                           Prepare([&allocated](const PreparedWeights& into) {
                             if (!into.net) ++allocated;
                           }));
  // Versions arrive every 2 ms; the actor takes one every 10 ms, keeps it until the next, then
  // hands it back, as AdoptWeights and Recycle do.
  std::optional<PreparedWeights> held;
  int taken_count = 0;
  const double start = core::NowSeconds();
  for (int64_t version = 1; version <= 60 && core::NowSeconds() - start < 10; ++version) {
    Publish(version, BlobOf(version));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (version % 5 != 0) continue;
    auto taken = follower.Take();
    REQUIRE(taken.ok());
    if (!*taken) continue;
    ++taken_count;
    CHECK(BlobHeld(*(*taken)->net) == BlobOf((*taken)->version));
    if (held) follower.Recycle(std::move(*held));
    held = std::move(**taken);
  }
  CHECK(taken_count >= 6);
  // A new set only when none is spare: the one held, the one in the slot, the one being filled,
  // and one the actor has taken but not yet handed back.
  CHECK(allocated.load() <= 4);
}

TEST_CASE_FIXTURE(ServerFixture,
                  "A follower prepares nothing while its version waits to be taken") {
  std::atomic<int> prepared{0};
  WeightsFollower follower(context, endpoints.first, endpoints.second,
                           Prepare([&prepared](const PreparedWeights&) { ++prepared; }));
  // Two versions handed over: the second came by broadcast, so the subscriber is connected.
  int64_t next = 1;
  for (int i = 0; i < 2; ++i) {
    auto taken = PublishUntilTaken(follower, &next, 5.0);
    REQUIRE(taken.has_value());
    follower.Recycle(std::move(*taken));
  }
  // The last publication may have landed after the version taken: empty the slot.
  while (auto extra = TakeWithin(follower, 0.1)) follower.Recycle(std::move(*extra));
  const int before = prepared.load();
  const int64_t held = next;
  Publish(held, BlobOf(held));
  const double start = core::NowSeconds();
  while (prepared.load() == before && core::NowSeconds() - start < 5) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(prepared.load() == before + 1);
  // `held` waits in the slot while 29 more arrive: none of them is prepared.
  const int64_t last = held + 29;
  for (int64_t version = held + 1; version <= last; ++version) {
    Publish(version, BlobOf(version));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  while (server.latest_version() < last && core::NowSeconds() - start < 5) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(server.latest_version() == last);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(prepared.load() == before + 1);
  auto first = follower.Take();
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  CHECK((*first)->version == held);
  // Each Take lets one version through, the newest that has arrived by then, so the last comes
  // within a few Takes, not 29.
  int takes = 1;
  int64_t newest = held;
  while (newest < last && core::NowSeconds() - start < 10) {
    auto taken = TakeWithin(follower, 1.0);
    if (!taken) continue;
    CHECK(taken->version > newest);
    newest = taken->version;
    ++takes;
  }
  CHECK(newest == last);
  CHECK(takes <= 3);
  CHECK(prepared.load() - before <= takes + 1);
}

TEST_CASE_FIXTURE(ServerFixture, "A blob of another architecture reaches the actor as an error") {
  WeightsFollower follower(context, endpoints.first, endpoints.second, Prepare());
  models::QNetwork wider(kObs, kActions, std::vector<int>{32});
  Publish(1, models::ToBlob(*wider));
  const double start = core::NowSeconds();
  Result<std::optional<PreparedWeights>> taken = follower.Take();
  while (taken.ok() && core::NowSeconds() - start < 5) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    taken = follower.Take();
  }
  REQUIRE_FALSE(taken.ok());
  CHECK(taken.status().message().find("different architecture") != std::string::npos);
}

}  // namespace
}  // namespace ferry::actors
