// The wire sections: one shard over loopback ZeroMQ (inserts from 1, 4 and 16
// actors, samples for 1 and 2 learners, three row sizes) and K = 1, 2, 4
// shards, each against raw ZeroMQ moving the same frames.
#include "bench/replay_bench/wire.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <set>
#include <zmq_addon.hpp>

#include "core/status.h"
#include "core/wire.h"
#include "replay/protocol.h"
#include "replay/sampler.h"
#include "replay/writer.h"

namespace ferry::bench::replay_bench {
namespace {

constexpr int kWindow = 8;  // Unacked batches per writer and shard: WriterOptions' default.
// How long a raw client or server waits on its socket before checking its stop flag again.
constexpr std::chrono::milliseconds kPollSlice{10};

// Frame sizes of the messages replay/protocol.h defines, as core::Send lays them out.
std::vector<size_t> InsertFrames(const core::Schema& schema, int rows) {
  std::vector<size_t> sizes{core::kHeaderBytes, core::MetaBytes<replay::InsertMeta>()};
  for (const auto& c : schema.columns) sizes.push_back(rows * c.row_bytes());
  sizes.push_back(rows * sizeof(float));
  return sizes;
}

std::vector<size_t> AckFrames() {
  return {core::kHeaderBytes, core::MetaBytes<replay::InsertAckMeta>()};
}

std::vector<size_t> SampleRequestFrames() {
  return {core::kHeaderBytes, core::MetaBytes<replay::SampleRequestMeta>()};
}

std::vector<size_t> SampleReplyFrames(const core::Schema& schema, int rows) {
  std::vector<size_t> sizes{core::kHeaderBytes, core::MetaBytes<replay::SampleReplyMeta>(),
                            rows * sizeof(replay::Key), rows * sizeof(double),
                            rows * sizeof(uint32_t)};
  for (const auto& c : schema.columns) sizes.push_back(rows * c.row_bytes());
  return sizes;
}

// A raw message with frames of these sizes, copied from random bytes as a
// sender copies its data into ZeroMQ messages.
std::vector<zmq::message_t> RawMessage(const std::vector<size_t>& sizes) {
  static const std::vector<uint8_t> bytes = [] {
    std::mt19937_64 rng(3);
    return RandomBytes(size_t{4} << 20, rng);
  }();
  std::vector<zmq::message_t> frames;
  for (size_t size : sizes) {
    FERRY_CHECK(size <= bytes.size());
    frames.emplace_back(bytes.data(), size);
  }
  return frames;
}

// A loopback TCP port nothing listens on, never handed out twice.
int FreePort() {
  static std::set<int> handed_out;
  while (true) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    const bool ok = fd >= 0 &&
                    ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
    if (fd >= 0) ::close(fd);
    if (!ok) Die("cannot find a free loopback port");
    if (handed_out.insert(ntohs(address.sin_port)).second) return ntohs(address.sin_port);
  }
}

// What a shard is measured against: a socket on its own thread and context
// that only moves frames. kAck answers each message with InsertAck-sized
// frames; kPull sends nothing and counts `rows` into `received` per message;
// kSample answers a request for n rows with SampleReply-sized frames.
class RawServer {
 public:
  enum class Mode { kAck, kPull, kSample };

  RawServer(Mode mode, const core::Schema& schema, int rows, std::atomic<int64_t>* received)
      : mode_(mode),
        schema_(schema),
        rows_(rows),
        received_(received),
        socket_(context_, mode == Mode::kPull ? zmq::socket_type::pull : zmq::socket_type::router) {
    socket_.set(zmq::sockopt::linger, 0);
    if (mode == Mode::kPull) socket_.set(zmq::sockopt::rcvhwm, kWindow);
    socket_.bind("tcp://127.0.0.1:*");
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
    thread_ = std::jthread([this] { Serve(); });
  }
  ~RawServer() { stop_ = true; }  // thread_, declared last, joins first.

  const std::string& endpoint() const { return endpoint_; }

 private:
  void Serve() {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    std::vector<zmq::message_t> frames;
    while (!stop_) {
      zmq::poll(&item, 1, kPollSlice);
      if (!(item.revents & ZMQ_POLLIN)) continue;
      while (true) {
        frames.clear();
        if (!zmq::recv_multipart(socket_, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
          break;
        }
        if (mode_ == Mode::kPull) {
          *received_ += rows_;
          continue;
        }
        std::vector<zmq::message_t> reply;
        reply.push_back(std::move(frames[0]));  // Routing id.
        uint32_t count = 0;
        if (mode_ == Mode::kSample) std::memcpy(&count, frames.back().data(), sizeof(count));
        for (auto& f :
             RawMessage(mode_ == Mode::kAck ? AckFrames() : SampleReplyFrames(schema_, count))) {
          reply.push_back(std::move(f));
        }
        zmq::send_multipart(socket_, reply);
      }
    }
  }

  Mode mode_;
  core::Schema schema_;
  int rows_;
  std::atomic<int64_t>* received_;
  zmq::context_t context_{1};
  zmq::socket_t socket_;
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  std::jthread thread_;
};

uint32_t NextClientId() {
  static std::atomic<uint32_t> next{1};
  return next++;
}

// The same frames over DEALER -> ROUTER, round robin over servers with room,
// each message acked, at most kWindow unacked per server.
ClientBody RawAckedInserter(std::vector<std::string> endpoints, std::vector<size_t> frames,
                            int rows) {
  return [endpoints, frames, rows](const std::atomic<bool>& stop, std::atomic<int64_t>& done) {
    zmq::context_t context(1);
    std::vector<zmq::socket_t> sockets;
    std::vector<zmq::pollitem_t> items;
    for (const auto& endpoint : endpoints) {
      sockets.emplace_back(context, zmq::socket_type::dealer);
      sockets.back().set(zmq::sockopt::linger, 0);
      sockets.back().connect(endpoint);
    }
    for (auto& socket : sockets) items.push_back({socket.handle(), 0, ZMQ_POLLIN, 0});
    std::vector<int> unacked(sockets.size(), 0);
    size_t next = 0;
    std::vector<zmq::message_t> ack;
    while (!stop) {
      bool sent = false;
      for (size_t i = 0; i < sockets.size() && !sent; ++i) {
        const size_t k = (next + i) % sockets.size();
        if (unacked[k] >= kWindow) continue;
        zmq::send_multipart(sockets[k], RawMessage(frames));
        ++unacked[k];
        next = k + 1;
        sent = true;
      }
      zmq::poll(items, sent ? std::chrono::milliseconds(0) : kPollSlice);
      for (size_t k = 0; k < sockets.size(); ++k) {
        ack.clear();
        while (
            zmq::recv_multipart(sockets[k], std::back_inserter(ack), zmq::recv_flags::dontwait)) {
          --unacked[k];
          done += rows;
          ack.clear();
        }
      }
    }
  };
}

// The same frames over PUSH -> PULL with no acks, high-water marks of kWindow;
// the PULL side counts them.
ClientBody RawPusher(std::vector<std::string> endpoints, std::vector<size_t> frames) {
  return [endpoints, frames](const std::atomic<bool>& stop, std::atomic<int64_t>&) {
    zmq::context_t context(1);
    zmq::socket_t push(context, zmq::socket_type::push);
    push.set(zmq::sockopt::linger, 0);
    push.set(zmq::sockopt::sndhwm, kWindow);
    for (const auto& endpoint : endpoints) push.connect(endpoint);
    zmq::pollitem_t item{push.handle(), 0, ZMQ_POLLOUT, 0};
    while (!stop) {
      zmq::poll(&item, 1, kPollSlice);
      if (item.revents & ZMQ_POLLOUT) {
        (void)zmq::send_multipart(push, RawMessage(frames), zmq::send_flags::dontwait);
      }
    }
  };
}

// The same exchange over DEALER -> ROUTER: a request to every server for its
// share, then every reply, one batch in flight as in ReplaySampler.
ClientBody RawSampler(std::vector<std::string> endpoints, int batch) {
  return [endpoints, batch](const std::atomic<bool>& stop, std::atomic<int64_t>& done) {
    zmq::context_t context(1);
    std::vector<zmq::socket_t> sockets;
    for (const auto& endpoint : endpoints) {
      sockets.emplace_back(context, zmq::socket_type::dealer);
      sockets.back().set(zmq::sockopt::linger, 0);
      sockets.back().connect(endpoint);
    }
    const int k = static_cast<int>(sockets.size());
    std::vector<zmq::message_t> reply;
    while (!stop) {
      for (int i = 0; i < k; ++i) {
        std::vector<zmq::message_t> request = RawMessage(SampleRequestFrames());
        const uint32_t share = batch / k + (i < batch % k ? 1 : 0);
        std::memcpy(request.back().data(), &share, sizeof(share));
        zmq::send_multipart(sockets[i], request);
      }
      for (auto& socket : sockets) {
        zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
        while (!stop && !(item.revents & ZMQ_POLLIN)) {
          zmq::poll(&item, 1, kPollSlice);
        }
        reply.clear();
        if (item.revents & ZMQ_POLLIN) (void)zmq::recv_multipart(socket, std::back_inserter(reply));
      }
      if (!stop) done += batch;
    }
  };
}

// A wire measurement line: ferry against the raw-ZeroMQ baseline, in wall
// time and in CPU time per transition, and against memcpy per CPU second.
JsonLine WireLine(const std::string& bench, const RowClass& rows, int shards, int clients,
                  int batch, const Figure& ferry, const std::string& baseline, const Figure& raw,
                  double memcpy_gbps, const Settings& s) {
  const double row_bytes = static_cast<double>(rows.schema.row_bytes());
  const Spread ratio = PairedRatio(ferry, raw, &Window::wall_rate);
  JsonLine line(bench);
  line.Add("rows", rows.name)
      .Add("obs_bytes", rows.obs_bytes)
      .Add("row_bytes", rows.schema.row_bytes())
      .Add("batch", batch)
      .Add("clients", clients)
      .Add("shards", shards)
      .Add("value", ferry.wall.median)
      .Add("unit", "transitions/s")
      .Add("mb_per_s", ferry.wall.median * row_bytes / 1e6)
      .Add("baseline", baseline)
      .Add("baseline_value", raw.wall.median)
      .Add("ratio", ratio.median)
      .Add("ratio_min", ratio.min)
      .Add("ratio_max", ratio.max)
      .Add("cpu_ns_per_transition", 1e9 / ferry.cpu.median)
      .Add("baseline_cpu_ns_per_transition", 1e9 / raw.cpu.median)
      .Add("cpu_ratio", PairedRatio(ferry, raw, &Window::cpu_rate).median)
      .Add("memcpy_ratio", ferry.cpu.median * row_bytes / (memcpy_gbps * 1e9));
  AddWindowSummary(line, ferry.wall, s.rounds, s.window_s);
  return line;
}

constexpr char kRawAcked[] = "raw zmq DEALER->ROUTER, same frames, acked, same window";
constexpr char kRawPushed[] = "raw zmq PUSH->PULL, same frames, unacked, hwm = window";
constexpr char kRawSampled[] = "raw zmq DEALER->ROUTER, same request and reply frames";
constexpr char kPlacement[] = "shard threads in one process, one ZeroMQ context each";

}  // namespace

replay::ShardOptions BenchShardOptions(const RowClass& rows, uint32_t shard_id, int64_t capacity) {
  replay::ShardOptions o;
  o.shard_id = shard_id;
  o.endpoint = "tcp://127.0.0.1:" + std::to_string(FreePort());
  o.schema = rows.schema;
  o.capacity = capacity;
  o.alpha = kAlpha;
  o.min_size_to_sample = 1;
  o.samples_per_insert = 1.0;
  o.samples_per_insert_tolerance = 1e18;
  o.seed = shard_id + 1;
  return o;
}

std::function<Window()> Clients(const Settings& s, int clients, ClientBody body,
                                std::atomic<int64_t>& done) {
  return [&s, clients, body = std::move(body), &done] {
    std::atomic<bool> stop{false};
    std::vector<std::jthread> threads;
    for (int i = 0; i < clients; ++i) threads.emplace_back([&] { body(stop, done); });
    Sleep(s.warmup_s);
    const int64_t before = done.load();
    const double start = core::NowSeconds();
    const double cpu_start = ProcessCpuSeconds();
    Sleep(s.window_s);
    const double n = static_cast<double>(done.load() - before);
    const Window w{n / (core::NowSeconds() - start), n / (ProcessCpuSeconds() - cpu_start)};
    stop = true;
    threads.clear();
    return w;
  };
}

ClientBody FerryInserter(std::vector<std::string> endpoints, const core::Schema& schema,
                         const Rows& rows) {
  return [endpoints, &schema, &rows](const std::atomic<bool>& stop, std::atomic<int64_t>& done) {
    zmq::context_t context(1);
    replay::WriterOptions options;
    options.actor_id = NextClientId();  // Fresh, so the shard's dedup starts over.
    options.epoch = 1;
    options.max_in_flight = kWindow;
    replay::ReplayWriter writer(context, endpoints, schema, options);
    int64_t reported = 0;
    while (!stop) {
      // Fresh vectors each time, as an actor hands over each batch it built.
      if (!writer.Write(rows.count, rows.columns, rows.priorities, stop).ok()) break;
      done += writer.acked_transitions() - reported;
      reported = writer.acked_transitions();
    }
  };
}

ClientBody FerrySampler(std::vector<std::string> endpoints, const core::Schema& schema, int batch,
                        int batches_per_request) {
  return [endpoints, &schema, batch, batches_per_request](const std::atomic<bool>& stop,
                                                          std::atomic<int64_t>& done) {
    zmq::context_t context(1);
    const uint32_t id = NextClientId();
    replay::ReplaySampler sampler(context, endpoints, schema, id, /*seed=*/id);
    while (!stop) {
      Result<replay::SampledBatch> sampled =
          sampler.Sample(batch * batches_per_request, /*beta=*/0.4, /*timeout_seconds=*/10);
      if (!sampled.ok()) Die(sampled.status().ToString());
      for (const auto& part : replay::Deal(std::move(*sampled), batches_per_request)) {
        done += part.count;
      }
    }
  };
}

void ShardBenches(const Settings& s, double memcpy_gbps) {
  std::mt19937_64 rng(4);
  for (const RowClass& rc : RowClasses(s)) {
    if (!s.rows.empty() && rc.name != s.rows) continue;
    const ShardThread shard(BenchShardOptions(rc, /*shard_id=*/0, rc.capacity));
    std::atomic<int64_t> done{0}, pulled{0};
    const RawServer acker(RawServer::Mode::kAck, rc.schema, rc.insert_batch, nullptr);
    const RawServer puller(RawServer::Mode::kPull, rc.schema, rc.insert_batch, &pulled);
    const RawServer replier(RawServer::Mode::kSample, rc.schema, 0, nullptr);
    const Rows rows = RandomRows(rc.schema, rc.insert_batch, rng);
    const std::vector<size_t> frames = InsertFrames(rc.schema, rc.insert_batch);
    for (int n : {1, 4, 16}) {
      const auto f = Alternate(
          s.rounds,
          {Clients(s, n, FerryInserter({shard.endpoint()}, rc.schema, rows), done),
           Clients(s, n, RawAckedInserter({acker.endpoint()}, frames, rc.insert_batch), done),
           Clients(s, n, RawPusher({puller.endpoint()}, frames), pulled)});
      WireLine("shard_insert", rc, 1, n, rc.insert_batch, f[0], kRawAcked, f[1], memcpy_gbps, s)
          .Add("ceiling", kRawPushed)
          .Add("ceiling_value", f[2].wall.median)
          .Add("ceiling_ratio", PairedRatio(f[0], f[2], &Window::wall_rate).median)
          .Print();
    }
    for (int n : {1, 2}) {
      const auto f = Alternate(
          s.rounds,
          {Clients(s, n, FerrySampler({shard.endpoint()}, rc.schema, rc.sample_batch), done),
           Clients(s, n, RawSampler({replier.endpoint()}, rc.sample_batch), done)});
      WireLine("shard_sample", rc, 1, n, rc.sample_batch, f[0], kRawSampled, f[1], memcpy_gbps, s)
          .Add("shard_rows", shard.size())
          .Print();
    }
  }
}

void MultiShardBenches(const Settings& s, double memcpy_gbps) {
  constexpr int kActors = 4;
  const RowClass rc = RowClasses(s)[0];
  std::mt19937_64 rng(5);
  const Rows rows = RandomRows(rc.schema, rc.insert_batch, rng);
  const std::vector<size_t> frames = InsertFrames(rc.schema, rc.insert_batch);
  double one_shard_insert = 0;
  double one_shard_sample = 0;
  for (int k : {1, 2, 4}) {
    std::vector<std::unique_ptr<ShardThread>> shards;
    std::vector<std::unique_ptr<RawServer>> raw;
    std::vector<std::string> shard_endpoints, acker_endpoints, replier_endpoints;
    for (int i = 0; i < k; ++i) {
      shards.push_back(std::make_unique<ShardThread>(BenchShardOptions(rc, i, rc.capacity / k)));
      shard_endpoints.push_back(shards.back()->endpoint());
      raw.push_back(
          std::make_unique<RawServer>(RawServer::Mode::kAck, rc.schema, rc.insert_batch, nullptr));
      acker_endpoints.push_back(raw.back()->endpoint());
      raw.push_back(std::make_unique<RawServer>(RawServer::Mode::kSample, rc.schema, 0, nullptr));
      replier_endpoints.push_back(raw.back()->endpoint());
    }
    std::atomic<int64_t> done{0};
    const auto inserts = Alternate(
        s.rounds,
        {Clients(s, kActors, FerryInserter(shard_endpoints, rc.schema, rows), done),
         Clients(s, kActors, RawAckedInserter(acker_endpoints, frames, rc.insert_batch), done)});
    if (k == 1) one_shard_insert = inserts[0].wall.median;
    WireLine("shards_insert", rc, k, kActors, rc.insert_batch, inserts[0], kRawAcked, inserts[1],
             memcpy_gbps, s)
        .Add("placement", kPlacement)
        .Add("vs_one_shard", inserts[0].wall.median / one_shard_insert)
        .Print();

    const auto samples = Alternate(
        s.rounds,
        {Clients(s, 1, FerrySampler(shard_endpoints, rc.schema, rc.sample_batch), done),
         Clients(s, 1, RawSampler(replier_endpoints, rc.sample_batch), done),
         Clients(s, 1, FerrySampler(shard_endpoints, rc.schema, rc.sample_batch, 4), done)});
    if (k == 1) one_shard_sample = samples[0].wall.median;
    WireLine("shards_sample", rc, k, 1, rc.sample_batch, samples[0], kRawSampled, samples[1],
             memcpy_gbps, s)
        .Add("placement", kPlacement)
        .Add("vs_one_shard", samples[0].wall.median / one_shard_sample)
        .Add("batches_per_request_4", samples[2].wall.median)
        .Add("batches_per_request_4_ratio",
             PairedRatio(samples[2], samples[0], &Window::wall_rate).median)
        .Add("batches_per_request_4_cpu_ratio",
             PairedRatio(samples[2], samples[0], &Window::cpu_rate).median)
        .Print();
  }
}

}  // namespace ferry::bench::replay_bench
