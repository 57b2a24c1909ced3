#include "replay/inspect.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "core/crc32c.h"
#include "core/log.h"
#include "core/wire.h"
#include "replay/protocol.h"
#include "replay/shard.h"
#include "replay/snapshot.h"
#include "replay/table.h"
#include "tests/replay/shard_fixture.h"

namespace ferry::replay {
namespace {

using core::MessageType;
using testing::RawClient;
using testing::ShardThread;
using testing::TestSchema;
using testing::TestShardOptions;

// Inserts rows first_id..first_id+count-1 from `actor`, row id i with priority i + 1.
void InsertRows(RawClient& client, uint32_t actor, uint64_t sequence, int64_t first_id, int count) {
  std::vector<zmq::message_t> payload =
      testing::InsertPayload(TestSchema(), first_id, count, /*priority=*/0);
  std::vector<float> priorities(count);
  for (int i = 0; i < count; ++i) priorities[i] = static_cast<float>(first_id + i + 1);
  payload.back() = zmq::message_t(priorities.data(), priorities.size() * sizeof(float));
  client.Send(MessageType::kInsertBatch, sequence, std::move(payload), actor);
  Result<core::Message> ack = client.Receive();
  REQUIRE_MESSAGE(ack.ok(), ack.status().message());
  REQUIRE(ack->header.type == MessageType::kInsertAck);
}

// Rows 0..29: actor 7 sends ids 0..9, actor 9 ids 10..29. Row id i sits in slot i,
// has priority i + 1 and policy version i.
void InsertThirtyRows(RawClient& client) {
  InsertRows(client, /*actor=*/7, /*sequence=*/0, /*first_id=*/0, /*count=*/10);
  InsertRows(client, /*actor=*/9, /*sequence=*/0, /*first_id=*/10, /*count=*/20);
}

InspectOptions Options(const std::string& target, uint32_t top_k = 5, uint32_t sample_count = 0) {
  InspectOptions options;
  options.target = target;
  options.top_k = top_k;
  options.sample_count = sample_count;
  options.seed = 3;
  return options;
}

InspectReport Live(zmq::context_t& context, const InspectOptions& options) {
  LiveInspector inspector(context, options);
  Result<InspectReport> report = inspector.Fetch();
  REQUIRE_MESSAGE(report.ok(), report.status().message());
  return std::move(report).value();
}

// A strict check of JSON syntax (RFC 8259), enough to trust the renderer.
class JsonSyntax {
 public:
  static bool Valid(const std::string& text) {
    JsonSyntax p(text);
    return p.Value() && (p.Space(), p.i_ == text.size());
  }

 private:
  explicit JsonSyntax(const std::string& s) : s_(s) {}
  void Space() {
    while (i_ < s_.size() && std::strchr(" \t\r\n", s_[i_])) ++i_;
  }
  bool Eat(char c) {
    Space();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  bool Value() {
    Space();
    if (Eat('{')) return Container('}', /*object=*/true);
    if (Eat('[')) return Container(']', /*object=*/false);
    if (i_ < s_.size() && s_[i_] == '"') return String();
    for (const char* word : {"true", "false", "null"}) {
      if (s_.compare(i_, std::strlen(word), word) == 0) return i_ += std::strlen(word), true;
    }
    static const std::regex number(R"(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)");
    std::smatch match;
    if (!std::regex_search(s_.cbegin() + i_, s_.cend(), match, number,
                           std::regex_constants::match_continuous)) {
      return false;
    }
    i_ += match.length();
    return true;
  }
  bool Container(char close, bool object) {
    if (Eat(close)) return true;
    do {
      if (object && !(Space(), String() && Eat(':'))) return false;
      if (!Value()) return false;
    } while (Eat(','));
    return Eat(close);
  }
  bool String() {
    if (i_ >= s_.size() || s_[i_] != '"') return false;
    for (++i_; i_ < s_.size() && s_[i_] != '"'; ++i_) {
      if (static_cast<unsigned char>(s_[i_]) < 0x20) return false;
      if (s_[i_] == '\\') ++i_;
    }
    return i_ < s_.size() && s_[i_++] == '"';
  }

  const std::string& s_;
  size_t i_ = 0;
};

// The number that follows `key` ("\"size\":") in a JSON document.
double JsonNumber(const std::string& json, const std::string& key) {
  const size_t at = json.find(key);
  REQUIRE_MESSAGE(at != std::string::npos, key);
  return std::strtod(json.c_str() + at + key.size(), nullptr);
}

// Everything written to `file` so far.
std::string Contents(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) text.append(buffer, n);
  return text;
}

std::filesystem::path TempDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ferry-inspect-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A shard that restores from options.snapshot_dir and writes a snapshot there when it stops.
class SnapshottingShard {
 public:
  SnapshottingShard(zmq::context_t& context, ShardOptions options)
      : endpoint_(options.endpoint), server_(context, std::move(options)) {
    const Status bound = server_.Bind();
    REQUIRE_MESSAGE(bound.ok(), bound.message());
    const Status restored = server_.Restore();
    REQUIRE_MESSAGE(restored.ok(), restored.message());
    thread_ = std::thread([this] { server_.Serve(stop_); });
  }
  ~SnapshottingShard() {
    stop_ = true;
    thread_.join();
  }
  SnapshottingShard(const SnapshottingShard&) = delete;
  SnapshottingShard& operator=(const SnapshottingShard&) = delete;

  const std::string& endpoint() const { return endpoint_; }

 private:
  std::string endpoint_;
  ShardServer server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST_CASE("inspect reports a live shard's size, priorities, actors and staleness") {
  zmq::context_t context;
  ShardThread shard(context, TestShardOptions());
  RawClient client(context, shard.endpoint());
  InsertThirtyRows(client);

  const InspectReport r = Live(context, Options(shard.endpoint()));
  CHECK(r.live);
  CHECK(r.shard_id == 0u);
  CHECK(r.selector == SelectorKind::kPrioritized);
  CHECK(r.schema == TestSchema());
  CHECK(r.table.size == 30);
  CHECK(r.table.capacity == 1024);
  CHECK(r.inserts_total == 30);
  CHECK(r.counters.samples_total == 0);
  CHECK(r.table.total_mass == doctest::Approx(30 * 31 / 2));
  REQUIRE(r.inserts_per_second.has_value());
  CHECK(*r.inserts_per_second == 0);
  REQUIRE(r.limiter.has_value());
  CHECK(r.limiter->can_sample);
  CHECK(r.inserted_per_actor == std::map<uint32_t, int64_t>{{7, 10}, {9, 20}});

  REQUIRE(r.table.top.size() == 5);
  REQUIRE(r.table.bottom.size() == 5);
  for (uint32_t i = 0; i < 5; ++i) {
    CHECK(r.table.top[i].slot == 29 - i);
    CHECK(r.table.top[i].mass == 30.0 - i);  // alpha 1: mass == priority.
    CHECK(r.table.top[i].policy_version == 29 - i);
    CHECK(r.table.top[i].generation == 1u);
    CHECK(r.table.bottom[i].slot == i);
    CHECK(r.table.bottom[i].mass == 1.0 + i);
  }

  CHECK(r.table.histogram_lo == 1.0);
  CHECK(r.table.histogram_hi == 30.0);
  uint64_t histogram_total = 0;
  for (uint64_t count : r.table.histogram) histogram_total += count;
  CHECK(histogram_total == 30);
  CHECK(r.table.histogram.front() >= 1);
  CHECK(r.table.histogram.back() >= 1);

  // Staleness 29 - i for i in 0..29: every value 0..29 once.
  const PolicyStaleness& s = r.table.staleness;
  CHECK(s.known);
  CHECK(s.max_version == 29);
  CHECK(s.mean == doctest::Approx(14.5));
  CHECK(s.p50 == 14);
  CHECK(s.p90 == 26);
  CHECK(s.p99 == 29);
  CHECK(s.max == 29);
}

TEST_CASE("inspect --sample decodes the stored rows column by column") {
  zmq::context_t context;
  ShardThread shard(context, TestShardOptions());
  RawClient client(context, shard.endpoint());
  InsertThirtyRows(client);

  const InspectReport r = Live(context, Options(shard.endpoint(), /*top_k=*/0, /*sample=*/6));
  CHECK(r.table.top.empty());
  REQUIRE(r.table.sampled.size() == 6);
  REQUIRE(r.table.sampled_rows.size() == TestSchema().columns.size());
  const auto& columns = r.schema.columns;
  for (size_t i = 0; i < r.table.sampled.size(); ++i) {
    const InspectItem& item = r.table.sampled[i];
    if (i > 0) CHECK(item.slot > r.table.sampled[i - 1].slot);
    const std::string id = std::to_string(item.slot);  // Row id == slot.
    auto cell = [&](int c, bool json) {
      return FormatCell(columns[c], r.table.sampled_rows[c].data() + i * columns[c].row_bytes(),
                        json);
    };
    CHECK(cell(core::kObs, false) == "[" + id + ", " + id + ", " + id + ", " + id + "]");
    CHECK(cell(core::kAction, false) == id);
    CHECK(cell(core::kReward, false) == id);
    CHECK(cell(core::kDiscount, false) == id);
    CHECK(cell(core::kNextObs, true) == "[" + id + ", " + id + ", " + id + ", " + id + "]");
    CHECK(cell(core::kPolicyVersion, false) == id);
    CHECK(item.policy_version == item.slot);
    CHECK(item.mass == item.slot + 1.0);
    CHECK(item.times_sampled == 0u);
  }

  // The same seed picks the same items; the text shows each column.
  const InspectReport again = Live(context, Options(shard.endpoint(), 0, 6));
  CHECK(again.table.sampled == r.table.sampled);
  const std::string text = RenderText(r);
  CHECK(text.find("sample of 6 (uniform") != std::string::npos);
  const std::string first = std::to_string(r.table.sampled[0].slot);
  CHECK(text.find("obs            [" + first + ", " + first) != std::string::npos);
}

TEST_CASE("an InspectReply decodes to the report it encodes and refuses a damaged one") {
  Table table(TestSchema(), /*capacity=*/64, /*alpha=*/0.5);
  const auto columns = testing::MakeColumns(TestSchema(), /*first_id=*/0, /*count=*/10);
  std::vector<const uint8_t*> rows;
  for (const auto& column : columns) rows.push_back(column.data());
  std::vector<float> priorities(10);
  for (int i = 0; i < 10; ++i) priorities[i] = static_cast<float>(i + 1);
  table.Insert(10, rows, priorities.data());

  InspectReport report;
  report.source = "tcp://127.0.0.1:1";
  report.live = true;
  report.shard_id = 3;
  report.schema = TestSchema();
  report.inserts_total = 10;
  report.limiter = RateLimiterState{};
  report.inserted_per_actor = {{1, 10}};
  report.table = ViewTable(table, /*top_k=*/2, /*sample_count=*/3, /*seed=*/0);
  REQUIRE(report.table.top.size() == 2);
  CHECK(report.table.top[0].mass == doctest::Approx(std::sqrt(10.0)));
  core::Message message;
  message.header.sender = 3;
  message.payload = EncodeInspectReply(report);
  Result<InspectReport> decoded = DecodeInspectReply(message, report.source);
  REQUIRE_MESSAGE(decoded.ok(), decoded.status().message());
  CHECK(RenderJson(*decoded) == RenderJson(report));
  // alpha 0.5: the priority shown is mass^2, the inserted one.
  CHECK(RenderJson(report).find("\"top\":[{\"slot\":9,\"generation\":1,\"priority\":10") !=
        std::string::npos);

  for (size_t f = 0; f < message.payload.size(); ++f) {
    if (message.payload[f].size() == 0) continue;
    core::Message damaged;
    for (size_t g = 0; g < message.payload.size(); ++g) {
      const auto& frame = message.payload[g];
      damaged.payload.emplace_back(frame.data(), frame.size() - (g == f ? 1 : 0));
    }
    Result<InspectReport> refused = DecodeInspectReply(damaged, report.source);
    CHECK_MESSAGE(!refused.ok(), "frame ", f);
    if (!refused.ok()) CHECK(refused.status().message().find(report.source) != std::string::npos);
  }
}

TEST_CASE("FormatCell shows at most max_elements in text and everything in JSON") {
  const core::ColumnSpec frame{"frame", core::DType::kUint8, {2, 5}};
  std::vector<uint8_t> row(10);
  for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<uint8_t>(250 + i % 6);
  CHECK(FormatCell(frame, row.data(), /*json=*/false, 3) == "[250, 251, 252, ... 10 values]");
  CHECK(FormatCell(frame, row.data(), /*json=*/true, 3) ==
        "[250, 251, 252, 253, 254, 255, 250, 251, 252, 253]");
  const core::ColumnSpec value{"value", core::DType::kFloat32, {}};
  const float nan = std::nanf("");
  CHECK(FormatCell(value, reinterpret_cast<const uint8_t*>(&nan), /*json=*/true) == "null");
  const float half = 0.5f;
  CHECK(FormatCell(value, reinterpret_cast<const uint8_t*>(&half), /*json=*/false) == "0.5");
}

TEST_CASE("inspect leaves the shard's counts, limiter and sampling state unchanged") {
  zmq::context_t context;
  ShardThread shard(context, TestShardOptions());
  RawClient client(context, shard.endpoint());
  InsertThirtyRows(client);
  client.Send(MessageType::kSampleRequest, 1, testing::SamplePayload(TestSchema(), 8));
  Result<core::Message> sampled = client.Receive();
  REQUIRE(sampled.ok());
  REQUIRE(sampled->header.type == MessageType::kSampleReply);

  const StatsMeta before = client.Stats();
  const InspectReport first = Live(context, Options(shard.endpoint(), 30, 30));
  const InspectReport second = Live(context, Options(shard.endpoint(), 30, 30));
  const StatsMeta after = client.Stats();

  // The rate limiter's whole state is these two totals.
  CHECK(after.samples_total == 8);
  CHECK(after.samples_total == before.samples_total);
  CHECK(after.samples_refused == before.samples_refused);
  CHECK(after.bad_messages == before.bad_messages);
  CHECK(after.mass.size == before.mass.size);
  CHECK(after.mass.total_mass == before.mass.total_mass);
  CHECK(after.mass.inserted_total == before.mass.inserted_total);
  CHECK(first.counters.samples_total == 8);
  CHECK(*first.samples_per_second == 0);
  // Every item's times_sampled counts the real sample only, not the inspections.
  CHECK(second.table.sampled == first.table.sampled);
  uint32_t times_sampled = 0;
  for (const InspectItem& item : second.table.top) times_sampled += item.times_sampled;
  CHECK(times_sampled == 8);
}

TEST_CASE("inspect rates follow the inserts between two readings") {
  zmq::context_t context;
  ShardThread shard(context, TestShardOptions());
  RawClient client(context, shard.endpoint());
  LiveInspector inspector(context, Options(shard.endpoint()));
  REQUIRE(inspector.Fetch().ok());
  InsertThirtyRows(client);
  Result<InspectReport> report = inspector.Fetch();
  REQUIRE(report.ok());
  CHECK(*report->inserts_per_second > 0);
  CHECK(*report->samples_per_second == 0);
}

TEST_CASE("inspect JSON is valid and shows the text's numbers") {
  zmq::context_t context;
  ShardThread shard(context, TestShardOptions());
  RawClient client(context, shard.endpoint());
  InsertThirtyRows(client);
  const InspectReport r = Live(context, Options(shard.endpoint(), 3, 2));
  const std::string json = RenderJson(r);
  const std::string text = RenderText(r);
  INFO(json);
  INFO(text);
  CHECK(JsonSyntax::Valid(json));
  CHECK(json.find('\n') == std::string::npos);
  for (const char* key : {"\"source\":", "\"live\":true", "\"shard\":0",
                          "\"selector\":", "\"schema\":", "\"bytes\":", "\"rate_limiter\":{",
                          "\"counters\":{", "\"staleness\":{", "\"histogram\":{", "\"top\":[",
                          "\"bottom\":[", "\"sampled_items\":[", "\"columns\":{\"obs\":["}) {
    CHECK_MESSAGE(json.find(key) != std::string::npos, key);
  }
  CHECK(JsonNumber(json, "\"size\":") == 30);
  CHECK(JsonNumber(json, "\"capacity\":") == 1024);
  CHECK(JsonNumber(json, "\"inserts\":{\"total\":") == 30);
  CHECK(json.find("\"inserted_per_actor\":{\"7\":10,\"9\":20}") != std::string::npos);
  CHECK(JsonNumber(json, "\"max_version\":") == 29);
  CHECK(JsonNumber(json, "\"top\":[{\"slot\":") == 29);
  CHECK(JsonNumber(json, "\"bottom\":[{\"slot\":") == 0);
  CHECK(text.find("30 / 1024 items") != std::string::npos);
  CHECK(text.find("inserts       30 total") != std::string::npos);
  CHECK(text.find("actor inserts 7: 10 9: 20") != std::string::npos);
  CHECK(text.find("max version 29") != std::string::npos);
  CHECK(text.find("top 3 by priority") != std::string::npos);
  CHECK(text.find("priority histogram") != std::string::npos);
}

TEST_CASE("inspect an empty shard and a uniform one") {
  zmq::context_t context;
  ShardOptions options = TestShardOptions();
  options.selector = SelectorKind::kUniform;
  ShardThread shard(context, options);
  const InspectReport empty = Live(context, Options(shard.endpoint(), 5, 5));
  CHECK(empty.table.size == 0);
  CHECK(empty.table.histogram.empty());
  CHECK(empty.table.top.empty());
  CHECK(!empty.table.staleness.known);
  CHECK(!empty.limiter->can_sample);
  CHECK(JsonSyntax::Valid(RenderJson(empty)));
  CHECK(RenderJson(empty).find("\"staleness\":null") != std::string::npos);
  CHECK(RenderText(empty).find("staleness     -") != std::string::npos);

  RawClient client(context, shard.endpoint());
  InsertThirtyRows(client);
  const InspectReport uniform = Live(context, Options(shard.endpoint(), 1, 0));
  CHECK(uniform.selector == SelectorKind::kUniform);
  CHECK(uniform.table.histogram == std::vector<uint64_t>{30});
  const std::string json = RenderJson(uniform);
  CHECK(json.find("\"quantity\":\"mass\"") != std::string::npos);
  CHECK(json.find("\"priority\":null") != std::string::npos);
}

TEST_CASE("inspect --watch prints one report per refresh, up to --count") {
  zmq::context_t context;
  ShardThread shard(context, TestShardOptions());
  InspectOptions options = Options(shard.endpoint());
  options.json = true;
  options.watch_seconds = 0.05;
  options.count = 3;
  std::FILE* out = std::tmpfile();
  REQUIRE(out != nullptr);
  const std::atomic<bool> stop{false};
  CHECK(RunInspect(options, stop, out) == 0);
  const std::string written = Contents(out);
  std::fclose(out);
  std::vector<std::string> lines;
  for (size_t start = 0, end; (end = written.find('\n', start)) != std::string::npos;
       start = end + 1) {
    lines.push_back(written.substr(start, end - start));
  }
  REQUIRE(lines.size() == 3);
  for (const std::string& line : lines) {
    CHECK(JsonSyntax::Valid(line));
    CHECK(line.find("\"per_second\":0") != std::string::npos);
  }

  // Text reports to a file follow each other; a set stop flag ends the watch.
  options.json = false;
  options.count = 0;
  const std::atomic<bool> stopped{true};
  out = std::tmpfile();
  CHECK(RunInspect(options, stopped, out) == 0);
  CHECK(Contents(out).find("replay shard 0 at " + shard.endpoint()) == 0);
  std::fclose(out);
}

TEST_CASE("inspect fails clearly on an unreachable endpoint") {
  zmq::context_t context;
  const std::string endpoint = testing::LoopbackEndpoint(testing::FreePort());
  InspectOptions options = Options(endpoint);
  options.timeout_seconds = 0.3;
  const double start = core::NowSeconds();
  LiveInspector inspector(context, options);
  Result<InspectReport> report = inspector.Fetch();
  const double elapsed = core::NowSeconds() - start;
  REQUIRE(!report.ok());
  CHECK(report.status().code() == StatusCode::kDeadlineExceeded);
  CHECK(report.status().message().find(endpoint) != std::string::npos);
  CHECK(elapsed >= 0.25);
  CHECK(elapsed < 2.0);

  const std::atomic<bool> stop{false};
  CHECK(RunInspect(options, stop) == 1);
  options.target = "tcp://no-such-host-name:";
  CHECK(RunInspect(options, stop) == 1);
}

TEST_CASE("a shard refuses a malformed InspectRequest and counts it") {
  zmq::context_t context;
  ShardThread shard(context, TestShardOptions());
  RawClient client(context, shard.endpoint());
  auto refused = [&](std::vector<zmq::message_t> payload) {
    client.Send(MessageType::kInspectRequest, 5, std::move(payload));
    Result<core::Message> reply = client.Receive();
    REQUIRE(reply.ok());
    return reply->header.type == MessageType::kError;
  };
  InspectRequestMeta too_many;
  too_many.top_k = kMaxInspectItems + 1;
  std::vector<zmq::message_t> payload;
  payload.push_back(core::EncodeMeta(too_many));
  CHECK(refused(std::move(payload)));
  InspectRequestMeta ok;
  payload.clear();
  payload.push_back(core::EncodeMeta(ok));
  payload.emplace_back(4);
  CHECK(refused(std::move(payload)));
  CHECK(refused({}));
  CHECK(client.Stats().bad_messages == 3);
}

TEST_CASE("inspect refuses files that are not snapshots, naming them") {
  const auto dir = TempDir("files");
  const std::string text_file = (dir / "notes.txt").string();
  std::ofstream(text_file) << "not a snapshot\n";
  Result<InspectReport> report = ReadSnapshotReport(Options(text_file));
  REQUIRE(!report.ok());
  CHECK(report.status().message().find(text_file) != std::string::npos);

  const std::string missing = (dir / "missing.snap").string();
  report = ReadSnapshotReport(Options(missing));
  REQUIRE(!report.ok());
  CHECK(report.status().message().find(missing) != std::string::npos);
  CHECK(report.status().message().find("tcp://HOST:PORT") != std::string::npos);

  const std::atomic<bool> stop{false};
  CHECK(RunInspect(Options(text_file), stop) == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a snapshot's report equals the live report of the same state") {
  zmq::context_t context;
  const auto dir = TempDir("snapshot");
  ShardOptions options = TestShardOptions();
  options.snapshot_dir = dir.string();
  InspectReport live;
  {
    SnapshottingShard shard(context, options);
    RawClient client(context, shard.endpoint());
    InsertThirtyRows(client);
    client.Send(MessageType::kSampleRequest, 1, testing::SamplePayload(TestSchema(), 5));
    REQUIRE(client.Receive().ok());
    live = Live(context, Options(shard.endpoint(), 4, 7));
  }  // Stopping the shard writes its snapshot.
  Result<SnapshotListing> listing = ListSnapshots(dir.string(), options.shard_id);
  REQUIRE(listing.ok());
  REQUIRE(listing->snapshots.size() == 1);
  const std::string path = listing->snapshots[0].path;
  Result<InspectReport> offline = ReadSnapshotReport(Options(path, 4, 7));
  REQUIRE_MESSAGE(offline.ok(), offline.status().message());
  CHECK(!offline->live);
  CHECK(offline->source == path);
  CHECK(offline->created_unix_ms.has_value());
  CHECK(!offline->inserts_per_second.has_value());
  CHECK(!offline->limiter.has_value());
  CHECK(RenderText(*offline).find("inserts       30 total, -/s") != std::string::npos);
  CHECK(RenderJson(*offline).find("\"per_second\":null") != std::string::npos);

  // What a snapshot does not record aside, the two render the same.
  live.source = offline->source;
  live.live = false;
  live.shard_id.reset();
  live.limiter.reset();
  live.inserts_per_second.reset();
  live.samples_per_second.reset();
  live.created_unix_ms = offline->created_unix_ms;
  CHECK(offline->counters.samples_total == 5);
  CHECK(offline->table.sampled == live.table.sampled);
  CHECK(offline->table.sampled_rows == live.table.sampled_rows);
  CHECK(RenderJson(*offline) == RenderJson(live));
  CHECK(RenderText(*offline) == RenderText(live));

  // A snapshot of another format version is refused, naming the file.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const uint32_t version = kSnapshotFormatVersion + 1;
  std::memcpy(bytes.data() + 8, &version, sizeof(version));
  const uint32_t crc = core::Crc32c(0, bytes.data(), 32);
  std::memcpy(bytes.data() + 32, &crc, sizeof(crc));
  const std::string other_version = (dir / "other-version.snap").string();
  std::ofstream(other_version, std::ios::binary) << bytes;
  Result<InspectReport> refused = ReadSnapshotReport(Options(other_version));
  REQUIRE(!refused.ok());
  CHECK(refused.status().message().find(other_version) != std::string::npos);
  CHECK(refused.status().message().find("version") != std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ferry::replay
