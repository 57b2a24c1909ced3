// Replay throughput, each figure beside baselines measured in the same run.
//
//   memcpy  copy bandwidth over buffers far larger than the caches
//   crc     the wire checksum, vs one crc32q stream and memcpy of the same buffer
//   table   Table::Sample / UpdatePriorities / Insert at 1M capacity
//             vs a textbook binary-tree replay and a no-tree memory-touch floor
//   shard   one ShardServer on loopback TCP: ReplayWriter inserts (1, 4, 16 actors) and
//           ReplaySampler samples (1, 2 learners) for 52 B, 2 KB and 56 KB rows
//             vs raw ZeroMQ moving the same frames with the same window, acked and not
//   shards  K = 1, 2, 4 shards: 4 writers spread over them, one sampler over all
//   compression  replay.compression lz4 vs none on Atari-like frames: bytes per
//           transition, Table and shard insert/sample rates
//
// Shards, raw servers and clients are threads of this process, each with its
// own ZeroMQ context, as separate processes would have. Table figures count
// this thread's CPU time; wire figures count wall time, and the whole
// process's CPU time per transition beside it (bench/bench.h says why).
//   usage: replay_bench [--quick] [--only=crc|table|shard|shards|compression]
//                       [--rows=cartpole|obs_1KB|atari]
// (--rows limits the shard section to one row class.)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "bench/bench.h"
#include "bench/binary_tree_replay.h"
#include "core/crc32c.h"
#include "core/experience.h"
#include "core/log.h"
#include "core/status.h"
#include "core/wire.h"
#include "replay/protocol.h"
#include "replay/sampler.h"
#include "replay/shard.h"
#include "replay/table.h"
#include "replay/writer.h"

namespace ferry::bench {
namespace {

constexpr double kAlpha = 0.6;
constexpr int64_t kFullCapacity = int64_t{1} << 20;  // Of the table benches and CartPole shards.
constexpr int kSampleBatch = 512;
constexpr int kWindow = 8;  // Unacked batches per writer and shard: WriterOptions' default.
// How long a raw client or server waits on its socket before checking its stop flag again.
constexpr std::chrono::milliseconds kPollSlice{10};

struct Settings {
  bool quick = false;
  int rounds = 7;                // Each figure is the median of this many timed windows.
  double window_s = 0.2;         // One timed window of a wire benchmark.
  double warmup_s = 0.08;        // Untimed run before it: connections, queues, caches.
  double table_window_s = 0.15;  // One timed window of a table or memcpy benchmark.
  int capacity_shift = 0;        // Every table and shard holds 2^-shift of its full capacity.
  std::string rows;              // Run the shard section for this row class only (--rows=).

  int64_t capacity(int64_t full) const { return full >> capacity_shift; }
};

// A smoke run: every code path, figures too noisy to quote.
Settings QuickSettings() {
  Settings s;
  s.quick = true;
  s.rounds = 3;
  s.window_s = 0.04;
  s.warmup_s = 0.04;
  s.table_window_s = 0.03;
  s.capacity_shift = 4;  // Page faults on gigabytes of fresh tables would take most of the run.
  return s;
}

core::Schema CartPoleSchema() {
  return core::TransitionSchema(/*obs_dim=*/4, /*discrete_actions=*/true, /*action_dim=*/1);
}

[[noreturn]] void Die(const std::string& what) {
  std::cerr << "replay_bench: " << what << std::endl;
  std::exit(1);
}

void AddSpread(JsonLine& line, const Spread& spread, const Settings& s, double window_s) {
  line.Add("min", spread.min)
      .Add("max", spread.max)
      .Add("rounds", s.rounds)
      .Add("window_s", window_s)
      .Add("load1", Load1());
}

std::vector<float> RandomPriorities(int64_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> priority(0.01f, 2.0f);
  std::vector<float> out(static_cast<size_t>(count));
  for (float& p : out) p = priority(rng);
  return out;
}

std::vector<uint8_t> RandomBytes(size_t count, std::mt19937_64& rng) {
  std::vector<uint8_t> out(count);
  for (size_t i = 0; i < count; i += 8) {
    const uint64_t word = rng();
    std::memcpy(out.data() + i, &word, std::min<size_t>(8, count - i));
  }
  return out;
}

// `count` rows of random bytes per column of a schema, with random raw priorities.
struct Rows {
  int count = 0;
  std::vector<std::vector<uint8_t>> columns;
  std::vector<float> priorities;

  std::vector<const uint8_t*> pointers() const {
    std::vector<const uint8_t*> p;
    for (const auto& c : columns) p.push_back(c.data());
    return p;
  }
};

Rows RandomRows(const core::Schema& schema, int count, std::mt19937_64& rng) {
  Rows rows;
  rows.count = count;
  for (const auto& c : schema.columns) {
    rows.columns.push_back(RandomBytes(count * c.row_bytes(), rng));
  }
  rows.priorities = RandomPriorities(count, rng);
  return rows;
}

// Returns the machine's copy bandwidth in GB per CPU second.
double MemcpyBench(const Settings& s) {
  constexpr size_t kBytes = size_t{64} << 20;
  std::vector<uint8_t> src(kBytes, 1);
  std::vector<uint8_t> dst(kBytes, 2);
  const Figure f = Alternate(s.rounds, {[&] {
                               return TimeOnThisThread(s.table_window_s, [&] {
                                 std::memcpy(dst.data(), src.data(), kBytes);
                                 KeepAlive(dst.data());
                                 return kBytes;
                               });
                             }})[0];
  JsonLine line("memcpy");
  line.Add("bytes", kBytes)
      .Add("value", f.cpu.median / 1e9)
      .Add("unit", "GB/s copied, per CPU second")
      .Add("wall_value", f.wall.median / 1e9)
      .Add("baseline", "none: the reference the wire benchmarks divide by");
  AddSpread(line, {f.cpu.median / 1e9, f.cpu.min / 1e9, f.cpu.max / 1e9}, s, s.table_window_s);
  line.Print();
  return f.cpu.median / 1e9;
}

// The wire checksum over one buffer, cache-resident (a 28 KB-observation
// insert batch is 450 KB) and not (64 MB), against one crc32q stream (the
// checksum before it ran three) and memcpy of the same bytes.
void CrcBench(const Settings& s) {
  std::mt19937_64 rng(6);
  for (size_t bytes : {size_t{256} << 10, size_t{64} << 20}) {
    const std::vector<uint8_t> src = RandomBytes(bytes, rng);
    std::vector<uint8_t> dst(bytes);
    uint32_t sink = 0;
    const double w = s.table_window_s;
    const auto f =
        Alternate(s.rounds, {[&] {
                               return TimeOnThisThread(w, [&] {
                                 sink ^= core::Crc32c(0, src.data(), bytes);
                                 return static_cast<int64_t>(bytes);
                               });
                             },
                             [&] {
                               return TimeOnThisThread(w, [&] {
                                 sink ^= core::internal::Crc32cOneStream(0, src.data(), bytes);
                                 return static_cast<int64_t>(bytes);
                               });
                             },
                             [&] {
                               return TimeOnThisThread(w, [&] {
                                 std::memcpy(dst.data(), src.data(), bytes);
                                 KeepAlive(dst.data());
                                 return static_cast<int64_t>(bytes);
                               });
                             }});
    KeepAlive(&sink);
    JsonLine line("crc32c");
    line.Add("bytes", bytes)
        .Add("value", f[0].cpu.median / 1e9)
        .Add("unit", "GB/s checksummed, per CPU second")
        .Add("baseline", "one crc32q stream")
        .Add("baseline_value", f[1].cpu.median / 1e9)
        .Add("ratio", PairedRatio(f[0], f[1], &Window::cpu_rate).median)
        .Add("ceiling", "memcpy of the same buffer")
        .Add("ceiling_value", f[2].cpu.median / 1e9)
        .Add("ceiling_ratio", PairedRatio(f[0], f[2], &Window::cpu_rate).median);
    AddSpread(line, {f[0].cpu.median / 1e9, f[0].cpu.min / 1e9, f[0].cpu.max / 1e9}, s, w);
    line.Print();
  }
}

// Times Table against the naive replay and the floor, and prints one line.
void TableLine(const Settings& s, const std::string& bench, int batch, const char* unit,
               const std::function<int64_t()>& table, const std::function<int64_t()>& naive,
               const std::function<int64_t()>& floor) {
  const double w = s.table_window_s;
  const auto f = Alternate(s.rounds, {[&] { return TimeOnThisThread(w, table); },
                                      [&] { return TimeOnThisThread(w, naive); },
                                      [&] { return TimeOnThisThread(w, floor); }});
  JsonLine line(bench);
  line.Add("capacity", s.capacity(kFullCapacity))
      .Add("row_bytes", CartPoleSchema().row_bytes())
      .Add("batch", batch)
      .Add("value", f[0].cpu.median)
      .Add("unit", unit)
      .Add("clock", "thread CPU time")
      .Add("wall_value", f[0].wall.median)
      .Add("baseline", "naive: binary sum+min trees, one tree walk per item")
      .Add("baseline_value", f[1].cpu.median)
      .Add("ratio", PairedRatio(f[0], f[1], &Window::cpu_rate).median)
      .Add("ceiling", "memory-touch floor: rows, generations, leaves, no tree, no pow")
      .Add("ceiling_value", f[2].cpu.median)
      .Add("ceiling_ratio", PairedRatio(f[0], f[2], &Window::cpu_rate).median);
  AddSpread(line, f[0].cpu, s, w);
  line.Print();
}

void TableBenches(const Settings& s) {
  const core::Schema schema = CartPoleSchema();
  std::mt19937_64 rng(1);
  const Rows rows = RandomRows(schema, /*count=*/1024, rng);
  const std::vector<const uint8_t*> columns = rows.pointers();
  const int64_t capacity = s.capacity(kFullCapacity);
  const std::vector<float> priorities = RandomPriorities(capacity, rng);
  replay::Table table(schema, capacity, kAlpha);
  BinaryTreeReplay naive(schema, capacity, kAlpha);
  for (int64_t done = 0; done < capacity; done += rows.count) {
    table.Insert(rows.count, columns, priorities.data() + done);
    naive.Insert(rows.count, columns, priorities.data() + done);
  }

  std::mt19937_64 rng_table(2), rng_naive(2), rng_floor(2);
  replay::SampleBatch out_table, out_naive, out_floor;
  TableLine(
      s, "table_sample", kSampleBatch, "keys/s",
      [&] {
        table.Sample(kSampleBatch, rng_table, &out_table);
        return kSampleBatch;
      },
      [&] {
        naive.Sample(kSampleBatch, rng_naive, &out_naive);
        return kSampleBatch;
      },
      [&] {
        naive.SampleFloor(kSampleBatch, rng_floor, &out_floor);
        return kSampleBatch;
      });

  // Keys as a learner sends them back: from earlier samples, still current in
  // both replays (they were filled alike), as many as the table holds, so the
  // updates do not find their slots in cache from the previous pass.
  const int64_t key_batches = capacity / kSampleBatch;
  std::vector<std::vector<replay::Key>> keys;
  std::vector<std::vector<float>> updates;
  for (int64_t i = 0; i < key_batches; ++i) {
    table.Sample(kSampleBatch, rng, &out_table);
    keys.push_back(out_table.keys);
    updates.push_back(RandomPriorities(kSampleBatch, rng));
  }
  FERRY_CHECK(table.UpdatePriorities(keys[0].data(), updates[0].data(), kSampleBatch) ==
              kSampleBatch);
  // Each candidate walks the key batches in turn, applying them with `apply`.
  auto updater = [&](auto apply) {
    return [&keys, &updates, key_batches, apply, next = int64_t{0}]() mutable {
      next = (next + 1) % key_batches;
      return apply(keys[next].data(), updates[next].data());
    };
  };
  TableLine(s, "table_update", kSampleBatch, "updates/s",
            updater([&](const replay::Key* k, const float* p) {
              return table.UpdatePriorities(k, p, kSampleBatch);
            }),
            updater([&](const replay::Key* k, const float* p) {
              return naive.UpdatePriorities(k, p, kSampleBatch);
            }),
            updater([&](const replay::Key* k, const float* p) {
              return naive.UpdateFloor(k, p, kSampleBatch);
            }));

  for (int batch : {64, 256, 1024}) {
    const float* p = rows.priorities.data();
    TableLine(
        s, "table_insert", batch, "rows/s",
        [&] {
          table.Insert(batch, columns, p);
          return batch;
        },
        [&] {
          naive.Insert(batch, columns, p);
          return batch;
        },
        [&] {
          naive.InsertFloor(batch, columns, p);
          return batch;
        });
  }
}

// One size of experience in the wire benchmarks.
struct RowClass {
  std::string name;
  core::Schema schema;
  int64_t obs_bytes;
  int64_t capacity;  // Rows per shard, allocated up front.
  int insert_batch;  // Rows per InsertBatch.
  int sample_batch;  // Rows per learner batch.
};

core::Schema ByteObsSchema(std::vector<int> obs_shape) {
  core::Schema s = core::TransitionSchema(/*obs_dim=*/1, /*discrete_actions=*/true,
                                          /*action_dim=*/1);
  for (int c : {core::kObs, core::kNextObs}) {
    s.columns[c].dtype = core::DType::kUint8;
    s.columns[c].shape = obs_shape;
  }
  return s;
}

std::vector<RowClass> RowClasses(const Settings& s) {
  return {
      {"cartpole", CartPoleSchema(), 16, s.capacity(kFullCapacity), 256, kSampleBatch},
      {"obs_1KB", ByteObsSchema({1024}), 1024, s.capacity(1 << 16), 64, kSampleBatch},
      {"atari", ByteObsSchema({84, 84, 4}), 84 * 84 * 4, s.capacity(4096), 8, 32},
  };
}

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

// A shard on a fresh loopback port with the rate limiter wide open, so inserts
// and samples never wait for each other.
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

// A ShardServer bound and serving on its own thread and ZeroMQ context, as a
// `ferry replay` process runs it; stopped and joined on destruction.
class ShardThread {
 public:
  explicit ShardThread(replay::ShardOptions options)
      : endpoint_(options.endpoint), server_(context_, std::move(options)) {
    const Status bound = server_.Bind();
    if (!bound.ok()) Die(bound.ToString());
    thread_ = std::jthread([this] { server_.Serve(stop_); });
  }
  ~ShardThread() { stop_ = true; }  // thread_, declared last, joins first.

  const std::string& endpoint() const { return endpoint_; }
  int64_t size() const { return server_.Stats().mass.size; }

 private:
  zmq::context_t context_{1};
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  replay::ShardServer server_;
  std::jthread thread_;
};

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

// A client thread's work: loop until `stop`, adding finished transitions to `done`.
using ClientBody = std::function<void(const std::atomic<bool>& stop, std::atomic<int64_t>& done)>;

// A candidate that starts `clients` threads of `body`, lets them warm up, and
// times one window: transitions (counted in `done`) per wall second and per
// CPU second of the whole process (clients, servers and ZeroMQ I/O threads).
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

uint32_t NextClientId() {
  static std::atomic<uint32_t> next{1};
  return next++;
}

// An actor: ReplayWriter batches round robin over the shards.
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

// A learner: ReplaySampler batches of `batch` rows, global over the shards.
ClientBody FerrySampler(std::vector<std::string> endpoints, const core::Schema& schema, int batch) {
  return [endpoints, &schema, batch](const std::atomic<bool>& stop, std::atomic<int64_t>& done) {
    zmq::context_t context(1);
    const uint32_t id = NextClientId();
    replay::ReplaySampler sampler(context, endpoints, schema, id, /*seed=*/id);
    while (!stop) {
      Result<replay::SampledBatch> sampled =
          sampler.Sample(batch, /*beta=*/0.4, /*timeout_seconds=*/10);
      if (!sampled.ok()) Die(sampled.status().ToString());
      done += sampled->count;
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
  AddSpread(line, ferry.wall, s, s.window_s);
  return line;
}

constexpr char kRawAcked[] = "raw zmq DEALER->ROUTER, same frames, acked, same window";
constexpr char kRawPushed[] = "raw zmq PUSH->PULL, same frames, unacked, hwm = window";
constexpr char kRawSampled[] = "raw zmq DEALER->ROUTER, same request and reply frames";
constexpr char kPlacement[] = "shard threads in one process, one ZeroMQ context each";

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

// Synthetic Atari observations: 4 stacked 84x84 frames, interleaved per pixel
// (shape {84, 84, 4}), of a banded background with eight 8x8 sprites that move
// one pixel per frame; next_obs is the same scene a step later. Random bytes
// would not compress, real frames (not available here) compress better or worse.
Rows AtariLikeRows(const core::Schema& schema, int count, std::mt19937_64& rng) {
  Rows rows = RandomRows(schema, count, rng);
  constexpr int kSide = 84, kStack = 4, kSprites = 8, kSpriteSide = 8;
  for (int r = 0; r < count; ++r) {
    int x[kSprites], y[kSprites];
    uint8_t shade[kSprites];
    for (int i = 0; i < kSprites; ++i) {
      x[i] = static_cast<int>(rng() % (kSide - kSpriteSide - 8));
      y[i] = static_cast<int>(rng() % (kSide - kSpriteSide));
      shade[i] = static_cast<uint8_t>(64 + rng() % 192);
    }
    for (int c : {core::kObs, core::kNextObs}) {
      uint8_t* obs = rows.columns[c].data() + static_cast<size_t>(r) * kSide * kSide * kStack;
      for (int py = 0; py < kSide; ++py) {
        for (int px = 0; px < kSide * kStack; ++px) obs[py * kSide * kStack + px] = (py / 12) * 8;
      }
      const int step = c == core::kNextObs ? 1 : 0;
      for (int f = 0; f < kStack; ++f) {
        for (int i = 0; i < kSprites; ++i) {
          for (int sy = 0; sy < kSpriteSide; ++sy) {
            for (int sx = 0; sx < kSpriteSide; ++sx) {
              const int px = x[i] + f + step + sx, py = y[i] + sy;
              obs[(py * kSide + px) * kStack + f] = shade[i];
            }
          }
        }
      }
    }
  }
  return rows;
}

// replay.compression: a Table and a shard storing Atari-like observations
// LZ4-compressed against the same uncompressed, in memory and throughput.
void CompressionBenches(const Settings& s) {
  const RowClass rc = RowClasses(s)[2];
  std::mt19937_64 rng(7);
  const Rows rows = AtariLikeRows(rc.schema, rc.insert_batch, rng);
  const std::vector<const uint8_t*> columns = rows.pointers();
  replay::Table plain(rc.schema, rc.capacity, kAlpha, replay::SelectorKind::kPrioritized,
                      replay::Compression::kNone);
  replay::Table lz4(rc.schema, rc.capacity, kAlpha, replay::SelectorKind::kPrioritized,
                    replay::Compression::kLz4);
  for (int64_t done = 0; done < rc.capacity; done += rc.insert_batch) {
    const Rows fresh = AtariLikeRows(rc.schema, rc.insert_batch, rng);
    plain.Insert(rc.insert_batch, fresh.pointers(), fresh.priorities.data());
    lz4.Insert(rc.insert_batch, fresh.pointers(), fresh.priorities.data());
  }
  const double row_bytes = static_cast<double>(rc.schema.row_bytes());
  for (auto* table : {&plain, &lz4}) {
    JsonLine("compression_memory")
        .Add("rows", rc.name)
        .Add("compression", replay::CompressionName(table->compression()))
        .Add("capacity", table->capacity())
        .Add("value", static_cast<double>(table->resident_bytes()) / table->capacity())
        .Add("unit", "resident bytes per transition (Table::resident_bytes / capacity)")
        .Add("row_bytes", rc.schema.row_bytes())
        .Add("ratio", static_cast<double>(table->resident_bytes()) / table->capacity() / row_bytes)
        .Print();
  }
  std::mt19937_64 rng_plain(8), rng_lz4(8);
  replay::SampleBatch out_plain, out_lz4;
  const double w = s.table_window_s;
  auto table_line = [&](const std::string& bench, const Figure& a, const Figure& b) {
    JsonLine line(bench);
    line.Add("rows", rc.name)
        .Add("value", a.cpu.median)
        .Add("unit", "transitions/s, per CPU second")
        .Add("clock", "thread CPU time")
        .Add("baseline", "the same Table uncompressed")
        .Add("baseline_value", b.cpu.median)
        .Add("ratio", PairedRatio(a, b, &Window::cpu_rate).median);
    AddSpread(line, a.cpu, s, w);
    line.Print();
  };
  const auto inserts =
      Alternate(s.rounds, {[&] {
                             return TimeOnThisThread(w, [&] {
                               lz4.Insert(rows.count, columns, rows.priorities.data());
                               return rows.count;
                             });
                           },
                           [&] {
                             return TimeOnThisThread(w, [&] {
                               plain.Insert(rows.count, columns, rows.priorities.data());
                               return rows.count;
                             });
                           }});
  table_line("compression_table_insert", inserts[0], inserts[1]);
  const auto samples =
      Alternate(s.rounds, {[&] {
                             return TimeOnThisThread(w, [&] {
                               lz4.Sample(rc.sample_batch, rng_lz4, &out_lz4);
                               return rc.sample_batch;
                             });
                           },
                           [&] {
                             return TimeOnThisThread(w, [&] {
                               plain.Sample(rc.sample_batch, rng_plain, &out_plain);
                               return rc.sample_batch;
                             });
                           }});
  table_line("compression_table_sample", samples[0], samples[1]);

  // Over the wire: 4 actors inserting, then 1 learner sampling, into a shard of each kind.
  replay::ShardOptions plain_options = BenchShardOptions(rc, /*shard_id=*/0, rc.capacity);
  replay::ShardOptions lz4_options = BenchShardOptions(rc, /*shard_id=*/1, rc.capacity);
  lz4_options.compression = replay::Compression::kLz4;
  const ShardThread plain_shard(plain_options), lz4_shard(lz4_options);
  std::atomic<int64_t> done{0};
  auto wire_line = [&](const std::string& bench, int clients, const Figure& a, const Figure& b) {
    const Spread ratio = PairedRatio(a, b, &Window::wall_rate);
    JsonLine line(bench);
    line.Add("rows", rc.name)
        .Add("clients", clients)
        .Add("value", a.wall.median)
        .Add("unit", "transitions/s")
        .Add("baseline", "the same shard uncompressed")
        .Add("baseline_value", b.wall.median)
        .Add("ratio", ratio.median)
        .Add("ratio_min", ratio.min)
        .Add("ratio_max", ratio.max)
        .Add("cpu_ns_per_transition", 1e9 / a.cpu.median)
        .Add("baseline_cpu_ns_per_transition", 1e9 / b.cpu.median);
    AddSpread(line, a.wall, s, s.window_s);
    line.Print();
  };
  const auto wire_inserts = Alternate(
      s.rounds, {Clients(s, 4, FerryInserter({lz4_shard.endpoint()}, rc.schema, rows), done),
                 Clients(s, 4, FerryInserter({plain_shard.endpoint()}, rc.schema, rows), done)});
  wire_line("compression_shard_insert", 4, wire_inserts[0], wire_inserts[1]);
  const auto wire_samples = Alternate(
      s.rounds,
      {Clients(s, 1, FerrySampler({lz4_shard.endpoint()}, rc.schema, rc.sample_batch), done),
       Clients(s, 1, FerrySampler({plain_shard.endpoint()}, rc.schema, rc.sample_batch), done)});
  wire_line("compression_shard_sample", 1, wire_samples[0], wire_samples[1]);
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
        s.rounds, {Clients(s, 1, FerrySampler(shard_endpoints, rc.schema, rc.sample_batch), done),
                   Clients(s, 1, RawSampler(replier_endpoints, rc.sample_batch), done)});
    if (k == 1) one_shard_sample = samples[0].wall.median;
    WireLine("shards_sample", rc, k, 1, rc.sample_batch, samples[0], kRawSampled, samples[1],
             memcpy_gbps, s)
        .Add("placement", kPlacement)
        .Add("vs_one_shard", samples[0].wall.median / one_shard_sample)
        .Print();
  }
}

int Main(int argc, char** argv) {
  Settings s;
  std::string only, rows;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      s = QuickSettings();
    } else if (arg == "--only=crc" || arg == "--only=table" || arg == "--only=shard" ||
               arg == "--only=shards" || arg == "--only=compression") {
      only = arg.substr(7);
    } else if (arg == "--rows=cartpole" || arg == "--rows=obs_1KB" || arg == "--rows=atari") {
      rows = arg.substr(7);
    } else {
      std::cerr << "usage: replay_bench [--quick] [--only=crc|table|shard|shards|compression]"
                   " [--rows=cartpole|obs_1KB|atari]\n";
      return 2;
    }
  }
  s.rows = rows;
  const double start = core::NowSeconds();
  PrintMachineLine(s.quick);
  const double memcpy_gbps = MemcpyBench(s);
  if (only.empty() || only == "crc") CrcBench(s);
  if (only.empty() || only == "table") TableBenches(s);
  if (only.empty() || only == "shard") ShardBenches(s, memcpy_gbps);
  if (only.empty() || only == "shards") MultiShardBenches(s, memcpy_gbps);
  if (only.empty() || only == "compression") CompressionBenches(s);
  JsonLine("done").Add("seconds", core::NowSeconds() - start).Add("load1", Load1()).Print();
  return 0;
}

}  // namespace
}  // namespace ferry::bench

int main(int argc, char** argv) { return ferry::bench::Main(argc, argv); }
