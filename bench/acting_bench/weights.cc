// The broadcast, server_memory, step_gap and follow sections (main.cc describes every line).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "actors/vector_actor.h"
#include "actors/weights_follower.h"
#include "bench/acting_bench/common.h"
#include "bench/bench.h"
#include "core/log.h"
#include "models/q_network.h"
#include "paramserver/client.h"
#include "paramserver/server.h"

namespace ferry::bench::acting_bench {
namespace {

// ---- broadcast ----------------------------------------------------------

// Two loopback TCP endpoints on ports free right now.
std::pair<std::string, std::string> FreeTcpEndpoints() {
  std::string endpoints[2];
  int fds[2];
  for (int i = 0; i < 2; ++i) {
    fds[i] = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (fds[i] < 0 || ::bind(fds[i], reinterpret_cast<sockaddr*>(&address), sizeof(address)) ||
        ::getsockname(fds[i], reinterpret_cast<sockaddr*>(&address), &length)) {
      Die("cannot find a free loopback port");
    }
    endpoints[i] = "tcp://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  }
  for (int fd : fds) ::close(fd);
  return {endpoints[0], endpoints[1]};
}

// How often an armed receiver thread polls, per receiver: 64 threads polling
// every 50 us would leave the two cores to the pollers, not the transfer.
constexpr double kPollPeriodPerReceiverS = 50e-6;
// The longest a version may take to reach every receiver before the bench
// gives up: generous on a loaded machine, where loopback still moves 10 MB/s.
double DeliveryDeadline(size_t bytes, int receivers) {
  return 10.0 + static_cast<double>(bytes) * receivers / 10e6;
}

// `count` threads, each with its own receiver made on its own thread. Armed
// with a version, each polls its receiver every poll_period_s() until it holds
// that version and notes when; the main thread waits for all of them.
class Receivers {
 public:
  // make(i) runs on thread i; the function it returns polls without blocking
  // and returns the newest version the receiver holds (-1 before any).
  using Maker = std::function<std::function<int64_t()>(int)>;

  Receivers(int count, const Maker& make)
      : poll_period_s_(kPollPeriodPerReceiverS * count), held_at_(count), done_(0) {
    for (int i = 0; i < count; ++i) {
      threads_.emplace_back([this, i, make] { Run(i, make(i)); });
    }
  }
  ~Receivers() {
    stop_.store(true);
    target_.fetch_add(1);
    target_.notify_all();
  }  // threads_ (std::jthread) join here.

  void Arm(int64_t version) {
    done_.store(0);
    target_.store(version);
    target_.notify_all();
  }
  // Seconds from `start` until each receiver held the armed version; empty
  // when they did not all get it within `timeout_s`.
  std::vector<double> Wait(double start, double timeout_s) {
    const int count = static_cast<int>(held_at_.size());
    while (done_.load() < count) {
      if (core::NowSeconds() - start > timeout_s) return {};
      Sleep(kPollPeriodPerReceiverS);
    }
    std::vector<double> latencies;
    for (const auto& at : held_at_) latencies.push_back(at.load() - start);
    return latencies;
  }
  double poll_period_s() const { return poll_period_s_; }

 private:
  void Run(int i, const std::function<int64_t()>& poll) {
    int64_t held = -1;
    while (!stop_.load()) {
      const int64_t target = target_.load();
      if (held >= target) {
        target_.wait(target);
        continue;
      }
      held = std::max(held, poll());
      if (held >= target) {
        held_at_[i].store(core::NowSeconds());
        done_.fetch_add(1);
      } else {
        Sleep(poll_period_s_);
      }
    }
  }

  const double poll_period_s_;
  std::vector<std::atomic<double>> held_at_;
  std::atomic<int> done_;
  std::atomic<int64_t> target_{-1};
  std::atomic<bool> stop_{false};
  std::vector<std::jthread> threads_;  // Last: joined before the state they use goes.
};

// A ParamServer on fresh loopback ports, following `upstream` as a relay when one is given,
// serving on its own thread until destroyed.
class ServingParamServer {
 public:
  ServingParamServer(zmq::context_t& context, uint64_t chunk_bytes,
                     const ServingParamServer* upstream = nullptr) {
    paramserver::ServerOptions options;
    std::tie(options.endpoint, options.broadcast_endpoint) = FreeTcpEndpoints();
    options.chunk_bytes = chunk_bytes;
    if (upstream != nullptr) {
      options.upstream_endpoint = upstream->endpoint();
      options.upstream_broadcast_endpoint = upstream->broadcast_endpoint();
    }
    endpoint_ = options.endpoint;
    broadcast_endpoint_ = options.broadcast_endpoint;
    server_ = std::make_unique<paramserver::ParamServer>(context, options);
    if (const Status bound = server_->Bind(); !bound.ok()) Die(bound.ToString());
    serving_ = std::jthread([this] { server_->Serve(stop_); });
  }
  ~ServingParamServer() { stop_.store(true); }  // serving_ joins first: declared last.
  ServingParamServer(const ServingParamServer&) = delete;
  ServingParamServer& operator=(const ServingParamServer&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  const std::string& broadcast_endpoint() const { return broadcast_endpoint_; }

 private:
  std::string endpoint_;
  std::string broadcast_endpoint_;
  std::unique_ptr<paramserver::ParamServer> server_;
  std::atomic<bool> stop_{false};
  std::jthread serving_;
};

// One topology's publish step and its receivers.
struct Route {
  std::function<void(int64_t version)> publish;
  Receivers* receivers;
};

// Publishes increasing versions until every receiver holds one (slow joiners
// connected), then returns the next version to use.
int64_t Join(const Route& route, int64_t version, double deadline_s) {
  Sleep(0.1);  // Let the TCP connections come up before the first try.
  for (int attempt = 0; attempt < 3; ++attempt) {
    route.receivers->Arm(version);
    const double sent = core::NowSeconds();
    route.publish(version++);
    if (!route.receivers->Wait(sent, deadline_s).empty()) return version;
  }
  Die("receivers did not connect within the deadline");
}

// A weight blob of `bytes` random bytes (the same ones every call).
std::vector<uint8_t> RandomBlob(size_t bytes) {
  std::vector<uint8_t> blob(bytes);
  std::mt19937_64 rng(8);
  for (auto& b : blob) b = static_cast<uint8_t>(rng());
  return blob;
}

// One ferry route: a WeightsPublisher (the caller's thread) -> a root ParamServer [-> relays]
// -> `subscribers` threads, blobs over `chunk_bytes` fetched in chunks. With `relays` > 0 the
// subscribers are spread over that many relay paramservers (`ferry paramserver --upstream`)
// that follow the root one: one more hop each.
class FerryTopology {
 public:
  FerryTopology(zmq::context_t& context, const std::vector<uint8_t>& blob, int subscribers,
                int relays, uint64_t chunk_bytes)
      : blob_(blob), root_(context, chunk_bytes), publisher_(context, root_.endpoint()) {
    std::vector<const ServingParamServer*> serving;
    if (relays == 0) serving.push_back(&root_);
    for (int r = 0; r < relays; ++r) {
      relays_.push_back(std::make_unique<ServingParamServer>(context, chunk_bytes, &root_));
      serving.push_back(relays_.back().get());
    }
    receivers_ = std::make_unique<Receivers>(subscribers, [&context, serving](int i) {
      const ServingParamServer& server = *serving[i % serving.size()];
      auto subscriber = std::make_shared<paramserver::WeightsSubscriber>(
          context, server.endpoint(), server.broadcast_endpoint());
      return [subscriber] {
        const auto blob = subscriber->Poll();
        if (blob) KeepAlive(blob->data());
        return subscriber->version();
      };
    });
  }

  Route route() {
    return Route{[this](int64_t v) { publisher_.Publish(v, blob_.data(), blob_.size()); },
                 receivers_.get()};
  }
  double poll_period_s() const { return receivers_->poll_period_s(); }

 private:
  const std::vector<uint8_t>& blob_;
  ServingParamServer root_;
  std::vector<std::unique_ptr<ServingParamServer>> relays_;
  paramserver::WeightsPublisher publisher_;
  std::unique_ptr<Receivers> receivers_;  // Last: its threads stop before the servers go.
};

// ferry with its default chunking against raw ZeroMQ, reps alternated; a blob that ferry
// fetches in chunks also goes through a second ferry route that sends every blob whole,
// when memory allows the second set of subscribers' copies.
void BroadcastBench(const Settings& s, size_t bytes, int subscribers, int relays = 0) {
  const double available =
      static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  // Each subscriber holds its own copy of the blob.
  const double copies = static_cast<double>(bytes) * subscribers;
  if (copies > available / 2) {
    JsonLine("broadcast")
        .Add("blob_bytes", static_cast<int64_t>(bytes))
        .Add("subscribers", subscribers)
        .Add("skipped", "a copy per subscriber exceeds half the free memory")
        .Print();
    return;
  }
  const bool chunked = bytes > paramserver::kChunkBytes;
  const bool compare_whole = chunked && 2 * copies <= available / 2;
  const std::vector<uint8_t> blob = RandomBlob(bytes);

  zmq::context_t context(2);
  std::vector<std::unique_ptr<FerryTopology>> ferry;  // Default chunking [, whole].
  ferry.push_back(std::make_unique<FerryTopology>(context, blob, subscribers, relays,
                                                  paramserver::kChunkBytes));
  if (compare_whole) {
    ferry.push_back(std::make_unique<FerryTopology>(context, blob, subscribers, relays,
                                                    paramserver::kMaxBlobBytes));
  }

  // Raw ZeroMQ: one PUB (this thread) -> SUBs; frame = version, then the bytes.
  const std::string raw_endpoint = FreeTcpEndpoints().first;
  zmq::socket_t pub(context, zmq::socket_type::pub);
  pub.set(zmq::sockopt::linger, 0);
  pub.bind(raw_endpoint);
  Receivers raw_receivers(subscribers, [&](int) {
    auto sub = std::make_shared<zmq::socket_t>(context, zmq::socket_type::sub);
    sub->set(zmq::sockopt::linger, 0);
    sub->set(zmq::sockopt::subscribe, "");
    sub->connect(raw_endpoint);
    return [sub, newest = int64_t{-1}]() mutable {
      zmq::message_t message;
      while (sub->recv(message, zmq::recv_flags::dontwait)) {
        std::memcpy(&newest, message.data(), sizeof(newest));
      }
      return newest;
    };
  });
  std::vector<Route> routes;
  for (const auto& topology : ferry) routes.push_back(topology->route());
  routes.push_back(Route{[&](int64_t v) {
                           zmq::message_t message(sizeof(v) + blob.size());
                           std::memcpy(message.data(), &v, sizeof(v));
                           std::memcpy(static_cast<uint8_t*>(message.data()) + sizeof(v),
                                       blob.data(), blob.size());
                           pub.send(message, zmq::send_flags::none);
                         },
                         &raw_receivers});
  const size_t raw = routes.size() - 1;

  const double deadline_s = DeliveryDeadline(bytes, subscribers);
  std::vector<int64_t> versions;
  for (const Route& route : routes) versions.push_back(Join(route, 1, deadline_s));
  // Each rep times every route; reps stop at `rounds` or once the time budget is spent.
  const double budget_s = s.quick ? 2.0 : 8.0;
  std::vector<std::vector<double>> all(routes.size()), median(routes.size()), ratios(raw);
  const double start = core::NowSeconds();
  for (int rep = 0; rep < s.rounds && (rep < 1 || core::NowSeconds() - start < budget_s); ++rep) {
    for (size_t r = 0; r < routes.size(); ++r) {
      routes[r].receivers->Arm(versions[r]);
      const double sent = core::NowSeconds();
      routes[r].publish(versions[r]++);
      const std::vector<double> latencies = routes[r].receivers->Wait(sent, deadline_s);
      if (latencies.empty()) Die("a broadcast missed the delivery deadline");
      all[r].push_back(*std::max_element(latencies.begin(), latencies.end()));
      median[r].push_back(Summarize(latencies).median);
    }
    for (size_t r = 0; r < raw; ++r) ratios[r].push_back(all[r].back() / all[raw].back());
  }
  JsonLine line("broadcast");
  line.Add("blob_bytes", static_cast<int64_t>(bytes))
      .Add("subscribers", subscribers)
      .Add("relays", relays)
      .Add("chunked", chunked)
      .Add("value", Summarize(all[0]).median * 1e3)
      .Add("unit", "ms from Publish until every subscriber holds the version (median of reps)")
      .Add("median_subscriber_ms", Summarize(median[0]).median * 1e3)
      .Add("baseline", "raw ZeroMQ PUB/SUB of the same bytes, loopback TCP")
      .Add("baseline_value", Summarize(all[raw]).median * 1e3)
      .Add("baseline_median_subscriber_ms", Summarize(median[raw]).median * 1e3)
      .Add("ratio", Summarize(ratios[0]).median)
      .Add("min", Summarize(all[0]).min * 1e3)
      .Add("max", Summarize(all[0]).max * 1e3);
  if (compare_whole) {
    line.Add("whole_value", Summarize(all[1]).median * 1e3)
        .Add("whole_median_subscriber_ms", Summarize(median[1]).median * 1e3)
        .Add("whole_ratio", Summarize(ratios[1]).median);
  }
  line.Add("reps", static_cast<int>(ratios[0].size()))
      .Add("poll_period_us", ferry[0]->poll_period_s() * 1e6)
      .Add("load1", Load1())
      .Print();
}

// A /proc/PID/status field in MB ("VmRSS", "VmHWM").
double ProcessMemoryMb(pid_t pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
  }
  Die("no " + field + " in /proc/" + std::to_string(pid) + "/status");
}

std::atomic<bool> g_child_stop{false};

// The root ParamServer in a child process of its own, so its memory can be read apart from the
// publisher's and the subscribers'; `versions` blobs of `bytes` go through it to `subscribers`.
void ServerMemoryBench(size_t bytes, int subscribers,
                       uint64_t chunk_bytes = paramserver::kChunkBytes, int versions = 3) {
  std::string endpoint, broadcast_endpoint;
  std::tie(endpoint, broadcast_endpoint) = FreeTcpEndpoints();
  const pid_t child = fork();
  if (child < 0) Die("fork failed");
  if (child == 0) {  // No ZeroMQ context is alive here: each bench made and dropped its own.
    std::signal(SIGTERM, [](int) { g_child_stop.store(true); });
    zmq::context_t context(1);
    paramserver::ServerOptions options;
    options.endpoint = endpoint;
    options.broadcast_endpoint = broadcast_endpoint;
    options.chunk_bytes = chunk_bytes;
    paramserver::ParamServer server(context, options);
    if (!server.Bind().ok()) _exit(1);
    server.Serve(g_child_stop);
    _exit(0);
  }
  const std::vector<uint8_t> blob = RandomBlob(bytes);
  double idle_mb = 0;
  {
    zmq::context_t context(2);
    paramserver::WeightsPublisher publisher(context, endpoint);
    Receivers receivers(subscribers, [&](int) {
      auto subscriber =
          std::make_shared<paramserver::WeightsSubscriber>(context, endpoint, broadcast_endpoint);
      return [subscriber] {
        subscriber->Poll();
        return subscriber->version();
      };
    });
    const double deadline_s = DeliveryDeadline(bytes, subscribers);
    // Every subscriber connected (the server holds no blob yet: a tiny one joins them).
    const std::vector<uint8_t> tiny(64);
    const Route join{[&](int64_t v) { publisher.Publish(v, tiny.data(), tiny.size()); },
                     &receivers};
    int64_t version = Join(join, 1, deadline_s);
    idle_mb = ProcessMemoryMb(child, "VmRSS");
    for (int i = 0; i < versions; ++i, ++version) {
      receivers.Arm(version);
      const double sent = core::NowSeconds();
      publisher.Publish(version, blob.data(), blob.size());
      if (receivers.Wait(sent, deadline_s).empty()) Die("a broadcast missed the delivery deadline");
    }
  }
  const double peak_mb = ProcessMemoryMb(child, "VmHWM");
  kill(child, SIGTERM);
  int status = 0;
  waitpid(child, &status, 0);
  const double blob_mb = static_cast<double>(bytes) / (1 << 20);
  JsonLine("server_memory")
      .Add("blob_bytes", static_cast<int64_t>(bytes))
      .Add("subscribers", subscribers)
      .Add("chunked", bytes > chunk_bytes)
      .Add("versions", versions)
      .Add("value", peak_mb - idle_mb)
      .Add("unit", "MB the paramserver process's peak resident memory grew by")
      .Add("baseline", "its resident memory before the first blob")
      .Add("baseline_value", idle_mb)
      .Add("blob_mb", blob_mb)
      .Add("ratio_to_blob", (peak_mb - idle_mb) / blob_mb)
      .Add("copy_per_subscriber_mb", blob_mb * subscribers)
      .Add("load1", Load1())
      .Print();
}

// A learner's thread: publishes `weights` to `endpoint` as versions 2, 3, ... every `period_s`
// until `stop` (looked at every 10 ms at least), counting them in `*published` if given.
std::jthread PublishEvery(zmq::context_t& context, const std::string& endpoint,
                          const std::vector<uint8_t>& weights, double period_s,
                          const std::atomic<bool>& stop,
                          std::atomic<int64_t>* published = nullptr) {
  return std::jthread([&context, endpoint, &weights, period_s, &stop, published] {
    paramserver::WeightsPublisher publisher(context, endpoint);
    for (int64_t version = 2; !stop.load(); ++version) {
      publisher.Publish(version, weights.data(), weights.size());
      if (published != nullptr) ++*published;
      for (double waited = 0; waited < period_s && !stop.load(); waited += 0.01) {
        Sleep(std::min(0.01, period_s - waited));
      }
    }
  });
}

// The gaps between an actor's steps (a 4-1536-1536-2 MLP, a 9.5 MB blob, 8
// CartPoles, versions taken from its WeightsFollower before every step, as
// RunActor does) over `seconds`, while a learner thread publishes a new
// version every `period_s` (never if 0).
struct GapStats {
  std::vector<double> gaps;
  int received = 0;
  double longest_ingest_s = 0;  // Take + AdoptWeights + Recycle on a step that got a version.
};

// Restricts the calling thread (and the threads it starts from then on) to `cpus`.
void PinThisThread(std::initializer_list<int> cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
    Die("cannot set CPU affinity");
}

// With `alone`, every thread but the acting one runs on CPU 0 (they are started from this
// thread while it is pinned there, ZeroMQ's I/O threads included) and the acting loop on CPU 1.
GapStats ActorGaps(double seconds, double period_s, bool alone) {
  if (alone) PinThisThread({0});
  const std::vector<int> hidden = {1536, 1536};
  torch::manual_seed(9);
  models::QNetwork net(kCartPoleObs, kCartPoleActions, hidden);
  const std::vector<uint8_t> weights = models::ToBlob(*net);
  auto actor = MakeActor(CartPoleActor(8, hidden), weights);

  zmq::context_t context(2);
  const ServingParamServer server(context, paramserver::kChunkBytes);
  std::atomic<bool> stop{false};
  actors::VectorActor& acting = *actor;
  actors::WeightsFollower follower(
      context, server.endpoint(), server.broadcast_endpoint(),
      [&acting](const paramserver::WeightsBlob& blob, actors::PreparedWeights* into) {
        return acting.PrepareWeights(blob.version, blob.data(), blob.size(), into);
      });
  std::jthread learner;
  if (period_s > 0) learner = PublishEvery(context, server.endpoint(), weights, period_s, stop);

  if (alone) PinThisThread({1});
  GapStats stats;
  const double start = core::NowSeconds();
  double last = start;
  while (last - start < seconds) {
    const double poll_start = core::NowSeconds();
    Result<std::optional<actors::PreparedWeights>> next = follower.Take();
    if (!next.ok()) Die(next.status().ToString());
    if (*next) {
      actor->AdoptWeights(**next);
      follower.Recycle(std::move(**next));
      ++stats.received;
      stats.longest_ingest_s = std::max(stats.longest_ingest_s, core::NowSeconds() - poll_start);
    }
    actor->Step();
    if (actor->batch_ready()) KeepAlive(actor->TakeBatch().priorities.data());
    const double now = core::NowSeconds();
    stats.gaps.push_back(now - last);
    last = now;
  }
  stop.store(true);
  if (alone) PinThisThread({0, 1});
  return stats;
}

void StepGapBench(const Settings& s, bool alone) {
  const double seconds = s.quick ? 0.5 : 3.0;
  const double period_s = 0.1;
  std::vector<double> quiet_max, busy_max, busy_p99, quiet_p99, ingest;
  int received = 0;
  for (int round = 0; round < (s.quick ? 1 : 3); ++round) {
    for (double period : {0.0, period_s}) {
      GapStats stats = ActorGaps(seconds, period, alone);
      std::sort(stats.gaps.begin(), stats.gaps.end());
      const double p99 = stats.gaps[stats.gaps.size() * 99 / 100];
      (period > 0 ? busy_max : quiet_max).push_back(stats.gaps.back());
      (period > 0 ? busy_p99 : quiet_p99).push_back(p99);
      if (period > 0) {
        received += stats.received;
        ingest.push_back(stats.longest_ingest_s);
      }
    }
  }
  JsonLine("step_gap")
      .Add("actor",
           "8 x CartPole-v1, MLP 4-1536-1536-2 (fast inference), versions prepared on a "
           "WeightsFollower thread, swapped in before every step")
      .Add("placement", alone ? "acting thread alone on CPU 1, every other thread on CPU 0"
                              : "all threads on both cores")
      .Add("blob_bytes", static_cast<int64_t>(sizeof(float)) *
                             ((4 * 1536 + 1536) + (1536 * 1536 + 1536) + (1536 * 2 + 2)))
      .Add("publish_period_ms", period_s * 1e3)
      .Add("versions_received", received)
      .Add("value", Summarize(busy_max).median * 1e3)
      .Add("unit",
           "ms, longest gap between steps while broadcasts are in flight "
           "(median over windows)")
      .Add("p99_ms", Summarize(busy_p99).median * 1e3)
      .Add("longest_ingest_ms", Summarize(ingest).max * 1e3)
      .Add("baseline", "the same loop with nothing published")
      .Add("baseline_value", Summarize(quiet_max).median * 1e3)
      .Add("baseline_p99_ms", Summarize(quiet_p99).median * 1e3)
      .Add("window_s", seconds)
      .Add("load1", Load1())
      .Print();
}

// ---- follow -------------------------------------------------------------

// The CPU that actors' WeightsFollower threads use while a learner publishes CartPole's
// 4-256-256-2 network every `publish_period_s`, with each of `followers` actors taking a version
// every `take_period_s`. Each follower has an actor of its own to prepare versions for.
struct FollowCost {
  double cpu_ms_per_s = 0;     // The follower threads' CPU, summed over followers.
  double prepared_per_s = 0;   // Versions prepared, summed over followers.
  double published_per_s = 0;  // Versions the learner published.
};

// A follower's thread, as its Prepare calls see it: the CPU clock of the thread that calls.
struct FollowerThread {
  std::mutex mu;
  std::optional<clockid_t> clock;  // Guarded by mu.
  std::atomic<int64_t> prepared{0};
  double CpuSeconds() {
    std::lock_guard<std::mutex> lock(mu);
    timespec t{};
    if (!clock || clock_gettime(*clock, &t) != 0) return 0;
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  }
};

FollowCost Follow(int followers, double publish_period_s, double take_period_s, double seconds) {
  const std::vector<int> hidden = {256, 256};
  torch::manual_seed(9);
  models::QNetwork net(kCartPoleObs, kCartPoleActions, hidden);
  const std::vector<uint8_t> weights = models::ToBlob(*net);
  zmq::context_t context(2);
  const ServingParamServer server(context, paramserver::kChunkBytes);
  std::vector<std::unique_ptr<actors::VectorActor>> acting;
  std::vector<std::unique_ptr<FollowerThread>> threads;
  std::vector<std::unique_ptr<actors::WeightsFollower>> following;
  for (int f = 0; f < followers; ++f) {
    acting.push_back(MakeActor(CartPoleActor(8, hidden), weights));
    threads.push_back(std::make_unique<FollowerThread>());
    actors::VectorActor& actor = *acting.back();
    FollowerThread& thread = *threads.back();
    following.push_back(std::make_unique<actors::WeightsFollower>(
        context, server.endpoint(), server.broadcast_endpoint(),
        [&actor, &thread](const paramserver::WeightsBlob& blob, actors::PreparedWeights* into) {
          {
            std::lock_guard<std::mutex> lock(thread.mu);
            if (!thread.clock) {
              clockid_t id;
              if (pthread_getcpuclockid(pthread_self(), &id) == 0) thread.clock = id;
            }
          }
          ++thread.prepared;
          return actor.PrepareWeights(blob.version, blob.data(), blob.size(), into);
        }));
  }
  std::atomic<bool> stop{false};
  std::atomic<int64_t> published{0};
  std::jthread learner =
      PublishEvery(context, server.endpoint(), weights, publish_period_s, stop, &published);
  std::vector<std::optional<actors::PreparedWeights>> held(followers);
  auto take_all = [&] {
    for (int f = 0; f < followers; ++f) {
      Result<std::optional<actors::PreparedWeights>> next = following[f]->Take();
      if (!next.ok()) Die(next.status().ToString());
      if (!*next) continue;
      if (held[f]) following[f]->Recycle(std::move(*held[f]));
      held[f] = std::move(**next);
    }
  };
  // Takes as an actor would, for `seconds` or until `done`.
  auto keep_taking = [&](double seconds, const std::function<bool()>& done) {
    for (const double start = core::NowSeconds();
         core::NowSeconds() - start < seconds && !done();) {
      take_all();
      Sleep(take_period_s);
    }
  };
  auto never = [] { return false; };
  // Until every follower has prepared a version (its clock is known), and half a second more.
  auto all_prepared = [&] {
    return std::all_of(threads.begin(), threads.end(),
                       [](const auto& t) { return t->prepared.load() > 0; });
  };
  keep_taking(10, all_prepared);
  if (!all_prepared()) Die("follow: a follower prepared no version within 10 s");
  keep_taking(0.5, never);
  auto totals = [&] {
    double cpu = 0;
    int64_t prepared = 0;
    for (const auto& t : threads) {
      cpu += t->CpuSeconds();
      prepared += t->prepared.load();
    }
    return std::make_tuple(cpu, prepared, published.load(), core::NowSeconds());
  };
  const auto [cpu0, prepared0, published0, t0] = totals();
  keep_taking(seconds, never);
  const auto [cpu1, prepared1, published1, t1] = totals();
  stop.store(true);
  const double elapsed = t1 - t0;
  return {(cpu1 - cpu0) * 1e3 / elapsed, static_cast<double>(prepared1 - prepared0) / elapsed,
          static_cast<double>(published1 - published0) / elapsed};
}

void FollowBench(const Settings& s, int followers) {
  const double seconds = s.quick ? 0.5 : 3.0;
  const double publish_period_s = 0.007;  // cartpole_zoo: ~1500 updates/s, a version every 10.
  const double take_period_s = 0.06;      // An actor of 8 envs among 8 actors in that run.
  const double eager_take_period_s = 0.001;
  std::vector<double> cpu, eager_cpu, prepared, eager_prepared, published;
  for (int round = 0; round < (s.quick ? 1 : 3); ++round) {
    const FollowCost paced = Follow(followers, publish_period_s, take_period_s, seconds);
    const FollowCost eager = Follow(followers, publish_period_s, eager_take_period_s, seconds);
    cpu.push_back(paced.cpu_ms_per_s);
    prepared.push_back(paced.prepared_per_s);
    eager_cpu.push_back(eager.cpu_ms_per_s);
    eager_prepared.push_back(eager.prepared_per_s);
    published.push_back(paced.published_per_s);
  }
  JsonLine("follow")
      .Add("followers", followers)
      .Add("network", "CartPole 4-256-256-2 (270 KB), fast inference")
      .Add("publish_period_ms", publish_period_s * 1e3)
      .Add("published_per_s", Summarize(published).median)
      .Add("take_period_ms", take_period_s * 1e3)
      .Add("value", Summarize(cpu).median)
      .Add("unit", "ms of CPU per second, all follower threads")
      .Add("prepared_per_s", Summarize(prepared).median)
      .Add("baseline", "the same followers taken every 1 ms: every version prepared")
      .Add("baseline_take_period_ms", eager_take_period_s * 1e3)
      .Add("baseline_value", Summarize(eager_cpu).median)
      .Add("baseline_prepared_per_s", Summarize(eager_prepared).median)
      .Add("window_s", seconds)
      .Add("load1", Load1())
      .Print();
}

}  // namespace

void BroadcastSection(const Settings& s) {
  for (size_t bytes : {size_t{100} << 10, size_t{10} << 20, size_t{100} << 20}) {
    for (int subscribers : {1, 16, 64}) BroadcastBench(s, bytes, subscribers);
  }
  BroadcastBench(s, size_t{10} << 20, 64, /*relays=*/4);
  for (uint64_t chunk_bytes : {paramserver::kChunkBytes, paramserver::kMaxBlobBytes}) {
    ServerMemoryBench(size_t{10} << 20, 16, chunk_bytes);
    ServerMemoryBench(size_t{10} << 20, 64, chunk_bytes);
    ServerMemoryBench(size_t{100} << 20, 16, chunk_bytes);
  }
}

void StepGapSection(const Settings& s) {
  StepGapBench(s, /*alone=*/false);
  if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) StepGapBench(s, /*alone=*/true);
}

void FollowSection(const Settings& s) {
  for (int followers : {2, 8}) FollowBench(s, followers);
}

}  // namespace ferry::bench::acting_bench
