// RenderText and RenderJson: one InspectReport, as a terminal report or a JSON document.
#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstring>
#include <ctime>

#include "replay/inspect.h"

namespace ferry::replay {

namespace {

constexpr int kHistogramWidth = 40;  // Characters of the longest bar.

// Whether masses are p^alpha with alpha > 0, so priorities can be recovered from them.
bool PrioritiesKept(const InspectReport& r) {
  return r.selector == SelectorKind::kPrioritized && r.table.alpha > 0;
}

std::optional<double> Priority(const InspectReport& r, double mass) {
  if (!PrioritiesKept(r)) return std::nullopt;
  return std::pow(mass, 1.0 / r.table.alpha);
}

std::string Printf(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string Printf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list measure;
  va_copy(measure, args);
  const int length = std::vsnprintf(nullptr, 0, format, measure);
  va_end(measure);
  std::string text(static_cast<size_t>(std::max(length, 0)), '\0');
  std::vsnprintf(text.data(), text.size() + 1, format, args);
  va_end(args);
  return text;
}

std::string Number(double v) { return Printf("%.6g", v); }

std::string OptionalNumber(std::optional<double> v) { return v ? Number(*v) : "-"; }

std::string Bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  return unit == 0 ? Printf("%.0f B", bytes) : Printf("%.1f %s", bytes, units[unit]);
}

std::string UtcTime(int64_t unix_ms) {
  const std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// A JSON document written front to back; commas are placed for the caller.
class JsonWriter {
 public:
  JsonWriter& Open(char bracket) {
    Separate();
    out_ += bracket;
    first_.push_back(true);
    return *this;
  }
  JsonWriter& Close(char bracket) {
    out_ += bracket;
    first_.pop_back();
    return *this;
  }
  JsonWriter& Key(const std::string& key) {
    Separate();
    String(key);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& Int(int64_t v) { return Raw(std::to_string(v)); }
  JsonWriter& Double(double v) {
    if (!std::isfinite(v)) return Raw("null");
    char text[32];  // The shortest form that reads back as `v`.
    return Raw(std::string(text, std::to_chars(text, text + sizeof(text), v).ptr));
  }
  JsonWriter& Double(std::optional<double> v) { return v ? Double(*v) : Raw("null"); }
  JsonWriter& Int(std::optional<int64_t> v) { return v ? Int(*v) : Raw("null"); }
  JsonWriter& Bool(bool v) { return Raw(v ? "true" : "false"); }
  JsonWriter& Str(const std::string& v) {
    Separate();
    String(v);
    return *this;
  }
  // A value already in JSON form.
  JsonWriter& Raw(const std::string& json) {
    Separate();
    out_ += json;
    return *this;
  }
  const std::string& str() const { return out_; }

 private:
  void Separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
  }
  void String(const std::string& v) {
    out_ += '"';
    for (unsigned char ch : v) {
      if (ch == '"' || ch == '\\') {
        out_ += '\\';
        out_ += static_cast<char>(ch);
      } else if (ch < 0x20) {
        out_ += Printf("\\u%04x", ch);
      } else {
        out_ += static_cast<char>(ch);
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> first_;  // Per open bracket: nothing written inside it yet.
  bool after_key_ = false;
};

std::string ItemVersion(const InspectReport& r, const InspectItem& item) {
  return r.table.staleness.known ? std::to_string(item.policy_version) : "-";
}

// Sampled items (`with_columns`) carry their rows: item i is row i of table.sampled_rows.
void JsonItems(const InspectReport& r, const std::vector<InspectItem>& items, bool with_columns,
               JsonWriter& json) {
  const bool versions = r.table.staleness.known;
  json.Open('[');
  for (size_t i = 0; i < items.size(); ++i) {
    const InspectItem& item = items[i];
    json.Open('{');
    json.Key("slot").Int(item.slot).Key("generation").Int(item.generation);
    json.Key("priority").Double(Priority(r, item.mass)).Key("mass").Double(item.mass);
    json.Key("policy_version")
        .Int(versions ? std::optional<int64_t>(item.policy_version) : std::nullopt);
    json.Key("times_sampled").Int(item.times_sampled);
    if (with_columns) {
      json.Key("columns").Open('{');
      for (size_t c = 0; c < r.schema.columns.size(); ++c) {
        const auto& spec = r.schema.columns[c];
        const uint8_t* row = r.table.sampled_rows[c].data() + i * spec.row_bytes();
        json.Key(spec.name).Raw(FormatCell(spec, row, /*json=*/true));
      }
      json.Close('}');
    }
    json.Close('}');
  }
  json.Close(']');
}

// The histogram's bin edges as priorities, or as masses where those are not kept.
std::vector<double> HistogramEdges(const InspectReport& r) {
  const TableView& t = r.table;
  std::vector<double> edges;
  const size_t bins = t.histogram.size();
  if (bins == 0) return edges;
  const double log_lo = std::log(t.histogram_lo);
  const double log_hi = std::log(t.histogram_hi);
  for (size_t i = 0; i <= bins; ++i) {
    // The outer edges exactly, so they show the extreme items' priorities unrounded.
    const double mass = i == 0      ? t.histogram_lo
                        : i == bins ? t.histogram_hi
                                    : std::exp(log_lo + (log_hi - log_lo) * i / bins);
    edges.push_back(Priority(r, mass).value_or(mass));
  }
  return edges;
}

void TextItems(const InspectReport& r, const std::vector<InspectItem>& items, std::string& out) {
  out += Printf("  %10s %10s %12s %12s %10s %8s\n", "slot", "generation", "priority", "mass",
                "version", "sampled");
  for (const InspectItem& item : items) {
    out += Printf("  %10" PRIu32 " %10" PRIu32 " %12s %12s %10s %8" PRIu32 "\n", item.slot,
                  item.generation, OptionalNumber(Priority(r, item.mass)).c_str(),
                  Number(item.mass).c_str(), ItemVersion(r, item).c_str(), item.times_sampled);
  }
}

}  // namespace

std::string FormatCell(const core::ColumnSpec& spec, const uint8_t* row, bool json,
                       size_t max_elements) {
  const size_t n = spec.elements();
  const size_t shown = json ? n : std::min(n, max_elements);
  auto element = [&](size_t e) -> std::string {
    const uint8_t* p = row + e * core::DTypeSize(spec.dtype);
    switch (spec.dtype) {
      case core::DType::kFloat32: {
        float v;
        std::memcpy(&v, p, sizeof(v));
        if (!json) return Printf("%.6g", v);
        return std::isfinite(v) ? Printf("%.9g", v) : "null";  // %.9g: the float exactly.
      }
      case core::DType::kInt32: {
        int32_t v;
        std::memcpy(&v, p, sizeof(v));
        return std::to_string(v);
      }
      case core::DType::kInt64: {
        int64_t v;
        std::memcpy(&v, p, sizeof(v));
        return std::to_string(v);
      }
      case core::DType::kUint8:
        return std::to_string(*p);
    }
    return "?";
  };
  if (spec.shape.empty()) return element(0);
  std::string out = "[";
  for (size_t e = 0; e < shown; ++e) out += (e ? ", " : "") + element(e);
  if (shown < n) out += Printf(", ... %zu values", n);
  return out + "]";
}

std::string RenderText(const InspectReport& r) {
  const TableView& t = r.table;
  const size_t row_bytes = r.schema.row_bytes();
  std::string out;
  if (r.live) {
    out +=
        Printf("replay shard %" PRIu32 " at %s (live)\n", r.shard_id.value_or(0), r.source.c_str());
  } else {
    out += Printf("replay snapshot %s (written %s)\n", r.source.c_str(),
                  r.created_unix_ms ? UtcTime(*r.created_unix_ms).c_str() : "-");
  }
  out += "schema        " + r.schema.ToString() + "\n";
  out += Printf("size          %" PRId64 " / %" PRId64 " items (%.1f%%), %s of %s\n", t.size,
                t.capacity, t.capacity > 0 ? 100.0 * t.size / t.capacity : 0.0,
                Bytes(static_cast<double>(t.size) * row_bytes).c_str(),
                Bytes(static_cast<double>(t.capacity) * row_bytes).c_str());
  out += Printf("inserts       %" PRId64 " total, %s/s\n", r.inserts_total,
                OptionalNumber(r.inserts_per_second).c_str());
  out += Printf("samples       %" PRId64 " total, %s/s\n", r.counters.samples_total,
                OptionalNumber(r.samples_per_second).c_str());
  if (r.limiter) {
    const RateLimiterState& l = *r.limiter;
    out += Printf("rate limiter  %s samples/insert +- %s, min size %" PRId64
                  ": can insert %s, can sample %s, %" PRId64 " inserts waiting\n",
                  Number(l.samples_per_insert).c_str(), Number(l.tolerance).c_str(),
                  l.min_size_to_sample, l.can_insert ? "yes" : "no", l.can_sample ? "yes" : "no",
                  l.inserts_waiting);
  } else {
    out += "rate limiter  -\n";
  }
  const ShardCounters& c = r.counters;
  out += Printf("counters      %" PRId64 " samples refused, %" PRId64 " updates applied, %" PRId64
                " stale, %" PRId64 " duplicates dropped, %" PRId64 " bad messages\n",
                c.samples_refused, c.updates_applied, c.updates_stale, c.duplicates_dropped,
                c.bad_messages);
  out += "actor inserts";
  for (const auto& [actor, count] : r.inserted_per_actor) {
    out += Printf(" %" PRIu32 ": %" PRId64, actor, count);
  }
  out += r.inserted_per_actor.empty() ? " -\n" : "\n";
  const PolicyStaleness& s = t.staleness;
  if (s.known) {
    out += Printf("staleness     max version %" PRId64 "; max - version: mean %s, p50 %" PRId64
                  ", p90 %" PRId64 ", p99 %" PRId64 ", max %" PRId64 "\n",
                  s.max_version, Number(s.mean).c_str(), s.p50, s.p90, s.p99, s.max);
  } else {
    out += "staleness     -\n";
  }
  out += Printf("selector      %s, alpha %s, total mass %s\n", SelectorKindName(r.selector),
                Number(t.alpha).c_str(), Number(t.total_mass).c_str());

  if (!t.histogram.empty()) {
    const std::vector<double> edges = HistogramEdges(r);
    out += Printf("\n%s histogram (%zu log-spaced bins)\n", PrioritiesKept(r) ? "priority" : "mass",
                  t.histogram.size());
    const uint64_t most = *std::max_element(t.histogram.begin(), t.histogram.end());
    for (size_t b = 0; b < t.histogram.size(); ++b) {
      const auto width = static_cast<size_t>(std::lround(
          kHistogramWidth * static_cast<double>(t.histogram[b]) / static_cast<double>(most)));
      out += Printf("  [%10s, %10s%c  %-*s %" PRIu64 "\n", Number(edges[b]).c_str(),
                    Number(edges[b + 1]).c_str(), b + 1 == t.histogram.size() ? ']' : ')',
                    kHistogramWidth, std::string(width, '#').c_str(), t.histogram[b]);
    }
  }
  if (!t.top.empty()) {
    out += Printf("\ntop %zu by priority\n", t.top.size());
    TextItems(r, t.top, out);
    out += Printf("\nbottom %zu by priority\n", t.bottom.size());
    TextItems(r, t.bottom, out);
  }
  if (!t.sampled.empty()) {
    out += Printf("\nsample of %zu (uniform, without replacement)\n", t.sampled.size());
    for (size_t i = 0; i < t.sampled.size(); ++i) {
      const InspectItem& item = t.sampled[i];
      out += Printf("  slot %" PRIu32 "  generation %" PRIu32
                    "  priority %s  version %s  sampled %" PRIu32 "\n",
                    item.slot, item.generation, OptionalNumber(Priority(r, item.mass)).c_str(),
                    ItemVersion(r, item).c_str(), item.times_sampled);
      for (size_t col = 0; col < r.schema.columns.size(); ++col) {
        const auto& spec = r.schema.columns[col];
        const uint8_t* row = t.sampled_rows[col].data() + i * spec.row_bytes();
        out += Printf("    %-14s %s\n", spec.name.c_str(),
                      FormatCell(spec, row, /*json=*/false).c_str());
      }
    }
  }
  return out;
}

std::string RenderJson(const InspectReport& r) {
  const TableView& t = r.table;
  const auto row_bytes = static_cast<int64_t>(r.schema.row_bytes());
  JsonWriter json;
  json.Open('{');
  json.Key("source").Str(r.source).Key("live").Bool(r.live);
  json.Key("shard").Int(r.shard_id).Key("selector").Str(SelectorKindName(r.selector));
  json.Key("created_unix_ms").Int(r.created_unix_ms);
  json.Key("schema").Str(r.schema.ToString());
  json.Key("size").Int(t.size).Key("capacity").Int(t.capacity);
  json.Key("bytes").Int(t.size * row_bytes).Key("capacity_bytes").Int(t.capacity * row_bytes);
  json.Key("inserts").Open('{').Key("total").Int(r.inserts_total);
  json.Key("per_second").Double(r.inserts_per_second).Close('}');
  json.Key("samples").Open('{').Key("total").Int(r.counters.samples_total);
  json.Key("per_second").Double(r.samples_per_second).Close('}');
  json.Key("rate_limiter");
  if (r.limiter) {
    const RateLimiterState& l = *r.limiter;
    json.Open('{');
    json.Key("samples_per_insert").Double(l.samples_per_insert);
    json.Key("tolerance").Double(l.tolerance);
    json.Key("min_size_to_sample").Int(l.min_size_to_sample);
    json.Key("can_insert").Bool(l.can_insert).Key("can_sample").Bool(l.can_sample);
    json.Key("inserts_waiting").Int(l.inserts_waiting);
    json.Close('}');
  } else {
    json.Raw("null");
  }
  const ShardCounters& c = r.counters;
  json.Key("counters").Open('{');
  json.Key("samples_refused").Int(c.samples_refused);
  json.Key("updates_applied").Int(c.updates_applied).Key("updates_stale").Int(c.updates_stale);
  json.Key("duplicates_dropped").Int(c.duplicates_dropped);
  json.Key("bad_messages").Int(c.bad_messages);
  json.Close('}');
  json.Key("inserted_per_actor").Open('{');
  for (const auto& [actor, count] : r.inserted_per_actor)
    json.Key(std::to_string(actor)).Int(count);
  json.Close('}');
  json.Key("staleness");
  if (t.staleness.known) {
    const PolicyStaleness& s = t.staleness;
    json.Open('{').Key("max_version").Int(s.max_version).Key("mean").Double(s.mean);
    json.Key("p50").Int(s.p50).Key("p90").Int(s.p90).Key("p99").Int(s.p99).Key("max").Int(s.max);
    json.Close('}');
  } else {
    json.Raw("null");
  }
  json.Key("alpha").Double(t.alpha).Key("total_mass").Double(t.total_mass);
  json.Key("histogram").Open('{').Key("quantity").Str(PrioritiesKept(r) ? "priority" : "mass");
  json.Key("edges").Open('[');
  for (double edge : HistogramEdges(r)) json.Double(edge);
  json.Close(']').Key("counts").Open('[');
  for (uint64_t count : t.histogram) json.Int(static_cast<int64_t>(count));
  json.Close(']').Close('}');
  json.Key("top");
  JsonItems(r, t.top, /*with_columns=*/false, json);
  json.Key("bottom");
  JsonItems(r, t.bottom, /*with_columns=*/false, json);
  json.Key("sampled_items");
  JsonItems(r, t.sampled, /*with_columns=*/true, json);
  json.Close('}');
  return json.str();
}

}  // namespace ferry::replay
