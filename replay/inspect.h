// `ferry inspect`: one report on a replay shard, live or from a snapshot file.
//
//   tcp://HOST:PORT -> StatsRequest, ~0.5 s, InspectRequest -> InspectReply -> report
//   snapshot file   -> ReadSnapshot -> Table::Restore -> ViewTable -> report
//   report          -> RenderText | RenderJson
//
// A live shard computes its TableView with the same ViewTable a snapshot goes
// through offline, so both sources give the same report for the same state,
// except for what a snapshot does not record (rates, shard id, rate limiter
// settings), which stays empty. Inspection is read-only: it draws its
// sampled items with its own RNG, so the shard's sampling counts and rate
// limiter are untouched. Used from one thread. Rendering lives in inspect_render.cc.
#ifndef FERRY_REPLAY_INSPECT_H_
#define FERRY_REPLAY_INSPECT_H_

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "core/experience.h"
#include "core/status.h"
#include "core/wire.h"
#include "replay/protocol.h"
#include "replay/selectors/interface.h"
#include "replay/snapshot.h"
#include "replay/table.h"

namespace ferry::replay {

struct InspectOptions {
  std::string target;          // tcp://HOST:PORT (a live shard) or a snapshot file.
  bool json = false;           // One JSON document per report instead of text.
  double watch_seconds = 0;    // > 0: a new report every this many seconds until stopped.
  int count = 0;               // With watch_seconds: stop after this many reports (0: never).
  uint32_t top_k = 5;          // Items listed at each end of the priority order.
  uint32_t sample_count = 0;   // Items drawn uniformly and decoded column by column.
  double timeout_seconds = 3;  // How long a live shard may take to answer.
  uint64_t seed = 0;           // Picks the sampled items.
};

// One stored item as a report lists it.
struct InspectItem {
  uint32_t slot = 0;
  uint32_t generation = 0;
  double mass = 0;  // As the selector keeps it: p^alpha when prioritized, else 1.
  uint32_t times_sampled = 0;
  int64_t policy_version = 0;  // 0 when the schema has no policy_version column.
  bool operator==(const InspectItem&) const = default;
};

// What a table's stored items show: computed by ViewTable where the table is.
struct TableView {
  int64_t size = 0;
  int64_t capacity = 0;
  double alpha = 0;
  double total_mass = 0;
  // Log-spaced bins over the masses from histogram_lo to histogram_hi (one bin
  // when they are equal, none when the table is empty).
  double histogram_lo = 0;
  double histogram_hi = 0;
  std::vector<uint64_t> histogram;
  PolicyStaleness staleness;
  std::vector<InspectItem> top;                    // Highest mass first; ties by slot.
  std::vector<InspectItem> bottom;                 // Lowest mass first; ties by slot.
  std::vector<InspectItem> sampled;                // Drawn uniformly without replacement, by slot.
  std::vector<std::vector<uint8_t>> sampled_rows;  // Per schema column, one row per sampled item.
};

// Reads `table` without changing it; top_k and sample_count are clipped to its size.
TableView ViewTable(const Table& table, uint32_t top_k, uint32_t sample_count, uint64_t seed);

struct InspectReport {
  std::string source;  // The endpoint or the snapshot file.
  bool live = false;
  std::optional<uint32_t> shard_id;         // Live only: a snapshot does not record it,
  std::optional<RateLimiterState> limiter;  // nor the rate limiter's settings.
  std::optional<int64_t> created_unix_ms;   // Snapshot only: when it was written.
  core::Schema schema;
  SelectorKind selector = SelectorKind::kPrioritized;
  int64_t inserts_total = 0;                 // Transitions ever stored.
  ShardCounters counters;                    // samples_total: items ever handed out.
  std::optional<double> inserts_per_second;  // Live only.
  std::optional<double> samples_per_second;
  std::map<uint32_t, int64_t> inserted_per_actor;
  TableView table;
};

// The InspectReply payload of `report` (a shard's), and back. Decoding checks
// every frame against the counts and the schema the reply carries.
std::vector<zmq::message_t> EncodeInspectReply(const InspectReport& report);
Result<InspectReport> DecodeInspectReply(const core::Message& reply, const std::string& source);

// A live shard's reports over one DEALER connection. Rates come from the
// previous Fetch, or on the first from a stats reading taken 0.5 s before.
class LiveInspector {
 public:
  LiveInspector(zmq::context_t& context, InspectOptions options);

  // Fails, naming the endpoint, when the shard does not answer within
  // options.timeout_seconds or answers with an error.
  Result<InspectReport> Fetch();

 private:
  struct Reading {
    double at = 0;  // core::NowSeconds when the reply came.
    int64_t inserts_total = 0;
    int64_t samples_total = 0;
  };

  Result<core::Message> Request(core::MessageType type, std::vector<zmq::message_t> payload,
                                core::MessageType reply_type);

  InspectOptions options_;
  zmq::socket_t socket_;
  bool connected_ = false;
  uint64_t next_sequence_ = 1;
  std::optional<Reading> last_;
};

// The report of the snapshot file options.target, as its shard would have given
// it when the snapshot was taken; fails, naming the file, on anything not a
// valid snapshot of this format version.
Result<InspectReport> ReadSnapshotReport(const InspectOptions& options);

// One column's value in one row, decoded by its dtype and shape: "7" or "[1, 2.5]".
// Text shows at most `max_elements` elements of an array; JSON shows all, with
// non-finite floats as null.
std::string FormatCell(const core::ColumnSpec& spec, const uint8_t* row, bool json,
                       size_t max_elements = 8);

std::string RenderText(const InspectReport& report);
std::string RenderJson(const InspectReport& report);  // One line.

// The whole command: reports on `out`, errors on stderr; 0 on success, 1 on an
// error. Watching stops after options.count reports or once `stop` is set.
int RunInspect(const InspectOptions& options, const std::atomic<bool>& stop,
               std::FILE* out = stdout);

}  // namespace ferry::replay

#endif  // FERRY_REPLAY_INSPECT_H_
