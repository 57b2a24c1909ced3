#include "replay/inspect.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <thread>
#include <utility>

#include "core/curve.h"
#include "core/log.h"
#include "core/wire.h"

namespace ferry::replay {

using core::Message;
using core::MessageType;

namespace {

constexpr uint32_t kHistogramBins = 16;
constexpr uint32_t kMaxHistogramBins = 1024;  // What a reply may carry.
constexpr double kRateInterval = 0.5;         // Seconds between the two readings of a rate.
constexpr int64_t kMaxRowElements = int64_t{1} << 28;  // Per column, in a reply's schema.
// InspectReply frames before the sampled rows (protocol.h lists them).
constexpr size_t kFixedReplyFrames = 10;

// The column of policy versions, or -1 where the schema has no int64 scalar one.
int PolicyVersionColumn(const core::Schema& schema) {
  const int c = schema.Find("policy_version");
  if (c < 0) return -1;
  const auto& spec = schema.columns[c];
  return spec.dtype == core::DType::kInt64 && spec.elements() == 1 ? c : -1;
}

// Nearest-rank quantile of `values`, which it reorders.
int64_t Quantile(std::vector<int64_t>& values, double q) {
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  const auto nth = values.begin() + static_cast<std::ptrdiff_t>(std::max<size_t>(rank, 1) - 1);
  std::nth_element(values.begin(), nth, values.end());
  return *nth;
}

PolicyStaleness Staleness(const std::vector<int64_t>& versions) {
  PolicyStaleness s;
  if (versions.empty()) return s;
  s.known = 1;
  s.max_version = *std::max_element(versions.begin(), versions.end());
  std::vector<int64_t> staleness;
  staleness.reserve(versions.size());
  double sum = 0;
  for (int64_t v : versions) {
    staleness.push_back(s.max_version - v);
    sum += static_cast<double>(staleness.back());
  }
  s.mean = sum / static_cast<double>(staleness.size());
  s.p50 = Quantile(staleness, 0.5);
  s.p90 = Quantile(staleness, 0.9);
  s.p99 = Quantile(staleness, 0.99);
  s.max = *std::max_element(staleness.begin(), staleness.end());
  return s;
}

void FillHistogram(const std::vector<double>& masses, TableView* view) {
  if (masses.empty()) return;
  const auto [lo, hi] = std::minmax_element(masses.begin(), masses.end());
  view->histogram_lo = *lo;
  view->histogram_hi = *hi;
  if (*lo == *hi) {
    view->histogram.assign(1, masses.size());
    return;
  }
  view->histogram.assign(kHistogramBins, 0);
  // Differences of logs: hi / lo itself can overflow (masses span 1e-300..1e290).
  const double log_lo = std::log(*lo);
  const double scale = kHistogramBins / (std::log(*hi) - log_lo);
  for (double m : masses) {
    const double bin = std::floor((std::log(m) - log_lo) * scale);
    ++view->histogram[std::clamp<int64_t>(static_cast<int64_t>(bin), 0, kHistogramBins - 1)];
  }
}

// Knuth's selection sampling: `count` distinct slots of [0, n) in ascending
// order, every subset equally likely, the same for the same seed on any build.
std::vector<int64_t> SampleSlots(int64_t n, int64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> slots;
  slots.reserve(count);
  for (int64_t slot = 0; slot < n && static_cast<int64_t>(slots.size()) < count; ++slot) {
    const double uniform = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
    const auto wanted = static_cast<double>(count - static_cast<int64_t>(slots.size()));
    if (static_cast<double>(n - slot) * uniform < wanted) slots.push_back(slot);
  }
  return slots;
}

template <typename T>
zmq::message_t Frame(const std::vector<T>& values) {
  return zmq::message_t(values.data(), values.size() * sizeof(T));
}

// Copies a frame of exactly `count` values of T into `out`.
template <typename T>
bool ReadFrame(const zmq::message_t& frame, size_t count, std::vector<T>* out) {
  if (frame.size() != count * sizeof(T)) return false;
  out->resize(count);
  if (count > 0) std::memcpy(out->data(), frame.data(), frame.size());
  return true;
}

Result<core::DType> ParseDType(const std::string& name) {
  for (core::DType t :
       {core::DType::kFloat32, core::DType::kInt32, core::DType::kInt64, core::DType::kUint8}) {
    if (name == core::DTypeName(t)) return t;
  }
  return InvalidArgument("unknown dtype '" + name + "'");
}

// The inverse of Schema::ToString: "obs:float32[4], action:int32[], ...".
Result<core::Schema> ParseSchema(const std::string& text) {
  core::Schema schema;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(", ", start);
    if (end == std::string::npos) end = text.size();
    const std::string column = text.substr(start, end - start);
    const size_t colon = column.find(':');
    const size_t open = column.find('[');
    if (column.empty() || colon == std::string::npos || open == std::string::npos || open < colon ||
        column.back() != ']') {
      return InvalidArgument("malformed schema column '" + column + "'");
    }
    core::ColumnSpec spec;
    spec.name = column.substr(0, colon);
    Result<core::DType> dtype = ParseDType(column.substr(colon + 1, open - colon - 1));
    if (!dtype.ok()) return dtype.status();
    spec.dtype = *dtype;
    const std::string dims = column.substr(open + 1, column.size() - open - 2);
    int64_t elements = 1;
    for (size_t d = 0; d < dims.size();) {
      size_t next = dims.find(',', d);
      if (next == std::string::npos) next = dims.size();
      char* parsed_end = nullptr;
      const long dim = std::strtol(dims.c_str() + d, &parsed_end, 10);
      elements *= dim > 0 && dim <= kMaxRowElements ? dim : kMaxRowElements + 1;
      if (parsed_end != dims.c_str() + next || elements > kMaxRowElements) {
        return InvalidArgument("malformed shape in schema column '" + column + "'");
      }
      spec.shape.push_back(static_cast<int>(dim));
      d = next + 1;
    }
    schema.columns.push_back(std::move(spec));
    start = end + 2;
  }
  return schema;
}

Result<InspectReport> SnapshotReport(const ShardSnapshot& snapshot, uint32_t top_k,
                                     uint32_t sample_count, uint64_t seed) {
  // The snapshot was a shard's table: restoring one runs the shard's own checks
  // and lets the report come from the ViewTable a live shard uses.
  Table table(snapshot.schema, snapshot.capacity, snapshot.alpha, snapshot.selector);
  std::vector<const uint8_t*> columns;
  for (const auto& column : snapshot.columns) columns.push_back(column.data());
  const Status restored =
      table.Restore(snapshot.size, snapshot.next_slot, columns, snapshot.generations.data(),
                    snapshot.times_sampled.data(), snapshot.masses.data());
  if (!restored.ok()) return DataLoss(snapshot.path + ": " + restored.message());
  InspectReport report;
  report.source = snapshot.path;
  report.created_unix_ms = snapshot.created_unix_ms;
  report.selector = snapshot.selector;
  report.schema = snapshot.schema;
  report.inserts_total = snapshot.limiter_inserts;
  report.counters = snapshot.counters;
  for (const auto& record : snapshot.dedup) {
    report.inserted_per_actor[record.actor] = record.inserted;
  }
  report.table = ViewTable(table, top_k, sample_count, seed);
  return report;
}

// Whether `target` names a live shard (a ZeroMQ endpoint) rather than a file.
bool IsEndpoint(const std::string& target) {
  return target.starts_with("tcp://") || target.starts_with("ipc://");
}

}  // namespace

TableView ViewTable(const Table& table, uint32_t top_k, uint32_t sample_count, uint64_t seed) {
  TableView view;
  view.size = table.size();
  view.capacity = table.capacity();
  view.alpha = table.alpha();
  view.total_mass = table.total_mass();
  // Stored items fill slots [0, size): the ring fills from slot 0 and never empties.
  const int64_t n = view.size;
  std::vector<double> masses(n);
  for (int64_t slot = 0; slot < n; ++slot) masses[slot] = table.mass(slot);
  const int version_column = PolicyVersionColumn(table.schema());
  std::vector<int64_t> versions;
  if (version_column >= 0) {
    versions.resize(n);
    table.ReadRows(version_column, 0, n, reinterpret_cast<uint8_t*>(versions.data()));
  }
  FillHistogram(masses, &view);
  view.staleness = Staleness(versions);

  auto item = [&](int64_t slot) {
    return InspectItem{static_cast<uint32_t>(slot), table.generation(slot), masses[slot],
                       table.times_sampled(slot), versions.empty() ? 0 : versions[slot]};
  };
  const int64_t k = std::min<int64_t>(top_k, n);
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto list = [&](auto before, std::vector<InspectItem>* items) {
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
      return before(masses[a], masses[b]) || (masses[a] == masses[b] && a < b);
    });
    for (int64_t i = 0; i < k; ++i) items->push_back(item(order[i]));
  };
  list(std::greater<double>(), &view.top);
  list(std::less<double>(), &view.bottom);

  const std::vector<int64_t> slots = SampleSlots(n, std::min<int64_t>(sample_count, n), seed);
  for (int64_t slot : slots) view.sampled.push_back(item(slot));
  for (size_t c = 0; c < table.schema().columns.size(); ++c) {
    const size_t row_bytes = table.schema().columns[c].row_bytes();
    std::vector<uint8_t>& rows = view.sampled_rows.emplace_back(slots.size() * row_bytes);
    for (size_t i = 0; i < slots.size(); ++i) {
      table.ReadRows(static_cast<int>(c), slots[i], 1, rows.data() + i * row_bytes);
    }
  }
  return view;
}

std::vector<zmq::message_t> EncodeInspectReply(const InspectReport& report) {
  const TableView& t = report.table;
  FERRY_CHECK(report.limiter.has_value());  // A live shard knows its settings.
  InspectReplyMeta meta;
  meta.schema_fingerprint = report.schema.Fingerprint();
  meta.selector = static_cast<uint8_t>(report.selector);
  meta.capacity = t.capacity;
  meta.size = t.size;
  meta.alpha = t.alpha;
  meta.total_mass = t.total_mass;
  meta.inserts_total = report.inserts_total;
  meta.samples_total = report.counters.samples_total;
  meta.samples_refused = report.counters.samples_refused;
  meta.updates_applied = report.counters.updates_applied;
  meta.updates_stale = report.counters.updates_stale;
  meta.duplicates_dropped = report.counters.duplicates_dropped;
  meta.bad_messages = report.counters.bad_messages;
  meta.limiter = *report.limiter;
  meta.histogram_lo = t.histogram_lo;
  meta.histogram_hi = t.histogram_hi;
  meta.histogram_bins = static_cast<uint32_t>(t.histogram.size());
  meta.staleness = t.staleness;
  meta.top_count = static_cast<uint32_t>(t.top.size());
  meta.bottom_count = static_cast<uint32_t>(t.bottom.size());
  meta.sample_count = static_cast<uint32_t>(t.sampled.size());
  meta.actor_count = static_cast<uint32_t>(report.inserted_per_actor.size());

  std::vector<uint32_t> slots, generations, times_sampled, actors;
  std::vector<double> masses;
  std::vector<int64_t> versions, inserted;
  for (const auto* items : {&t.top, &t.bottom, &t.sampled}) {
    for (const InspectItem& item : *items) {
      slots.push_back(item.slot);
      generations.push_back(item.generation);
      masses.push_back(item.mass);
      times_sampled.push_back(item.times_sampled);
      versions.push_back(item.policy_version);
    }
  }
  for (const auto& [actor, count] : report.inserted_per_actor) {
    actors.push_back(actor);
    inserted.push_back(count);
  }
  std::vector<zmq::message_t> payload;
  payload.push_back(core::EncodeMeta(meta));
  const std::string schema = report.schema.ToString();
  payload.emplace_back(schema.data(), schema.size());
  payload.push_back(Frame(t.histogram));
  payload.push_back(Frame(slots));
  payload.push_back(Frame(generations));
  payload.push_back(Frame(masses));
  payload.push_back(Frame(times_sampled));
  payload.push_back(Frame(versions));
  payload.push_back(Frame(actors));
  payload.push_back(Frame(inserted));
  for (const auto& rows : t.sampled_rows) payload.push_back(Frame(rows));
  return payload;
}

Result<InspectReport> DecodeInspectReply(const Message& reply, const std::string& source) {
  auto malformed = [&](const std::string& what) {
    return InvalidArgument("malformed InspectReply from " + source + ": " + what);
  };
  InspectReplyMeta meta;
  if (!core::DecodeMeta(reply, &meta).ok()) return malformed("metadata frame");
  if (reply.payload.size() < kFixedReplyFrames) return malformed("too few frames");
  const auto& f = reply.payload;
  Result<core::Schema> schema = ParseSchema(std::string(f[1].data<char>(), f[1].size()));
  if (!schema.ok()) return malformed(schema.status().message());
  if (schema->Fingerprint() != meta.schema_fingerprint) return malformed("schema fingerprint");
  if (f.size() != kFixedReplyFrames + schema->columns.size()) return malformed("frame count");
  if (meta.selector > static_cast<uint8_t>(SelectorKind::kLifo) ||
      meta.histogram_bins > kMaxHistogramBins || meta.top_count > kMaxInspectItems ||
      meta.bottom_count > kMaxInspectItems || meta.sample_count > kMaxInspectItems) {
    return malformed("counts out of range");
  }

  InspectReport report;
  report.source = source;
  report.live = true;
  report.shard_id = reply.header.sender;
  report.schema = std::move(schema).value();
  report.inserts_total = meta.inserts_total;
  report.selector = static_cast<SelectorKind>(meta.selector);
  report.counters.samples_total = meta.samples_total;
  report.counters.samples_refused = meta.samples_refused;
  report.counters.updates_applied = meta.updates_applied;
  report.counters.updates_stale = meta.updates_stale;
  report.counters.duplicates_dropped = meta.duplicates_dropped;
  report.counters.bad_messages = meta.bad_messages;
  report.limiter = meta.limiter;
  TableView& t = report.table;
  t.size = meta.size;
  t.capacity = meta.capacity;
  t.alpha = meta.alpha;
  t.total_mass = meta.total_mass;
  t.histogram_lo = meta.histogram_lo;
  t.histogram_hi = meta.histogram_hi;
  t.staleness = meta.staleness;

  const size_t items = size_t{meta.top_count} + meta.bottom_count + meta.sample_count;
  std::vector<uint32_t> slots, generations, times_sampled, actors;
  std::vector<double> masses;
  std::vector<int64_t> versions, inserted;
  if (!ReadFrame(f[2], meta.histogram_bins, &t.histogram) || !ReadFrame(f[3], items, &slots) ||
      !ReadFrame(f[4], items, &generations) || !ReadFrame(f[5], items, &masses) ||
      !ReadFrame(f[6], items, &times_sampled) || !ReadFrame(f[7], items, &versions) ||
      !ReadFrame(f[8], meta.actor_count, &actors) ||
      !ReadFrame(f[9], meta.actor_count, &inserted)) {
    return malformed("a frame's size does not match its count");
  }
  for (size_t i = 0; i < items; ++i) {
    const InspectItem item{slots[i], generations[i], masses[i], times_sampled[i], versions[i]};
    auto& list = i < meta.top_count                       ? t.top
                 : i < meta.top_count + meta.bottom_count ? t.bottom
                                                          : t.sampled;
    list.push_back(item);
  }
  for (size_t a = 0; a < actors.size(); ++a) report.inserted_per_actor[actors[a]] = inserted[a];
  for (size_t c = 0; c < report.schema.columns.size(); ++c) {
    const size_t row_bytes = report.schema.columns[c].row_bytes();
    if (f[kFixedReplyFrames + c].size() != meta.sample_count * row_bytes) {
      return malformed("column '" + report.schema.columns[c].name + "' has the wrong size");
    }
    const auto* data = f[kFixedReplyFrames + c].data<uint8_t>();
    t.sampled_rows.emplace_back(data, data + f[kFixedReplyFrames + c].size());
  }
  return report;
}

LiveInspector::LiveInspector(zmq::context_t& context, InspectOptions options)
    : options_(std::move(options)), socket_(context, zmq::socket_type::dealer) {
  socket_.set(zmq::sockopt::linger, core::kLingerMs);
  core::SecureClientSocket(socket_);
}

Result<Message> LiveInspector::Request(MessageType type, std::vector<zmq::message_t> payload,
                                       MessageType reply_type) {
  const std::string& endpoint = options_.target;
  if (!connected_) {
    try {
      socket_.connect(endpoint);
    } catch (const zmq::error_t& e) {
      return InvalidArgument("cannot connect to '" + endpoint + "': " + e.what() +
                             " (expected tcp://HOST:PORT)");
    }
    connected_ = true;
  }
  const uint64_t sequence = next_sequence_++;
  const double deadline = core::NowSeconds() + options_.timeout_seconds;
  // A shard that is down leaves the request queued here; nothing blocks.
  core::Send(socket_, type, /*sender=*/0, sequence, std::move(payload));
  while (true) {
    const double left = deadline - core::NowSeconds();
    if (left <= 0) {
      std::ostringstream message;
      message << "replay shard at " << endpoint << " did not answer within "
              << options_.timeout_seconds << " s; is it running there? (--timeout S waits longer)";
      return DeadlineExceeded(message.str());
    }
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    core::Poll(&item, 1, std::max(1, static_cast<int>(left * 1000)));
    if (!(item.revents & ZMQ_POLLIN)) continue;
    Result<Message> m = core::Decode(core::ReceiveFrames(socket_));
    if (!m.ok()) return InvalidArgument("bad reply from " + endpoint + ": " + m.status().message());
    if (m->header.sequence != sequence) continue;  // Answers a request that timed out.
    if (m->header.type == MessageType::kError) {
      return InvalidArgument("replay shard at " + endpoint + ": " + core::ErrorText(*m));
    }
    if (m->header.type != reply_type) {
      return InvalidArgument(std::string("replay shard at ") + endpoint + " answered with " +
                             core::MessageTypeName(m->header.type));
    }
    return m;
  }
}

Result<InspectReport> LiveInspector::Fetch() {
  if (!last_) {
    Result<Message> stats_reply = Request(MessageType::kStatsRequest, {}, MessageType::kStatsReply);
    if (!stats_reply.ok()) return stats_reply.status();
    StatsMeta stats;
    if (!core::DecodeMeta(*stats_reply, &stats).ok()) {
      return InvalidArgument("malformed StatsReply from " + options_.target);
    }
    last_ = Reading{core::NowSeconds(), stats.mass.inserted_total, stats.samples_total};
    std::this_thread::sleep_for(std::chrono::duration<double>(kRateInterval));
  }
  InspectRequestMeta request;
  request.top_k = options_.top_k;
  request.sample_count = options_.sample_count;
  request.seed = options_.seed;
  std::vector<zmq::message_t> payload;
  payload.push_back(core::EncodeMeta(request));
  Result<Message> reply =
      Request(MessageType::kInspectRequest, std::move(payload), MessageType::kInspectReply);
  if (!reply.ok()) return reply.status();
  const double now = core::NowSeconds();
  Result<InspectReport> report = DecodeInspectReply(*reply, options_.target);
  if (!report.ok()) return report;
  const double elapsed = now - last_->at;
  report->inserts_per_second = (report->inserts_total - last_->inserts_total) / elapsed;
  report->samples_per_second = (report->counters.samples_total - last_->samples_total) / elapsed;
  last_ = Reading{now, report->inserts_total, report->counters.samples_total};
  return report;
}

Result<InspectReport> ReadSnapshotReport(const InspectOptions& options) {
  Result<ShardSnapshot> snapshot = ReadSnapshot(options.target);
  if (!snapshot.ok()) {
    if (snapshot.status().code() != StatusCode::kNotFound) return snapshot.status();
    return NotFound(snapshot.status().message() + " (a live shard is named tcp://HOST:PORT)");
  }
  return SnapshotReport(*snapshot, options.top_k, options.sample_count, options.seed);
}

int RunInspect(const InspectOptions& options, const std::atomic<bool>& stop, std::FILE* out) {
  auto fail = [](const std::string& message) {
    std::fprintf(stderr, "ferry inspect: %s\n", message.c_str());
    return 1;
  };
  if (options.top_k > kMaxInspectItems || options.sample_count > kMaxInspectItems) {
    return fail("--top and --sample take at most " + std::to_string(kMaxInspectItems));
  }
  if (!(options.timeout_seconds > 0)) return fail("--timeout must be positive");
  zmq::context_t context(1);
  std::optional<LiveInspector> live;
  if (IsEndpoint(options.target)) live.emplace(context, options);
  const bool clear = options.watch_seconds > 0 && !options.json && isatty(fileno(out));
  for (int reports = 0;;) {
    Result<InspectReport> report = live ? live->Fetch() : ReadSnapshotReport(options);
    if (!report.ok()) return fail(report.status().message());
    std::string text = options.json ? RenderJson(*report) + "\n" : RenderText(*report);
    if (clear) {
      text = "\033[H\033[2J" + text;
    } else if (reports > 0 && !options.json) {
      text = "\n" + text;
    }
    std::fputs(text.c_str(), out);
    std::fflush(out);
    ++reports;
    if (options.watch_seconds <= 0 || (options.count > 0 && reports >= options.count)) return 0;
    const double next = core::NowSeconds() + options.watch_seconds;
    while (core::NowSeconds() < next) {
      if (stop.load()) return 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

}  // namespace ferry::replay
