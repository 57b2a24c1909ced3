#include "core/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <concepts>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/wire.h"

namespace ferry::core {
namespace {

// What a value must be ("must be >= 1"); empty when the value is acceptable.
using Requirement = std::string;

// ---- Scalars: YAML text <-> typed values.

// The shortest text that reads back as exactly `value`.
std::string FormatDouble(double value) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  FERRY_CHECK(ec == std::errc());
  return std::string(buf, end);
}

std::string Show(bool value) { return value ? "true" : "false"; }
std::string Show(double value) { return FormatDouble(value); }
std::string Show(const std::string& value) { return "'" + value + "'"; }
template <std::integral T>
std::string Show(T value) {
  return std::to_string(value);
}
std::string Show(const std::vector<int>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

// A node on one line, close to how the user wrote it.
std::string FlowText(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

// A node for "got ..." in messages.
std::string Describe(const YAML::Node& node) {
  if (node.IsNull()) return "null";
  if (node.IsScalar() && node.Tag() != "?") return "the quoted string '" + node.Scalar() + "'";
  return "'" + FlowText(node) + "'";
}

// Numbers and booleans must be plain scalars: a quoted "8" is a string.
bool IsPlainScalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() == "?"; }

// YAML allows a leading '+' that std::from_chars does not.
std::string_view WithoutPlus(std::string_view text) {
  if (text.size() > 1 && text[0] == '+' && text[1] != '-') text.remove_prefix(1);
  return text;
}

// Each Decode reads `node` into `out`, or leaves `out` alone and says what the value must be.
template <std::integral T>
Requirement Decode(const YAML::Node& node, T& out) {
  if (!IsPlainScalar(node)) return "must be an integer";
  const std::string_view text = WithoutPlus(node.Scalar());
  const char* end = text.data() + text.size();
  T value{};
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec == std::errc() && ptr == end) {
    out = value;
    return {};
  }
  const std::string_view digits = text.substr(!text.empty() && text[0] == '-');
  const bool integral = !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
  if (!integral) return "must be an integer";
  return "must be an integer in [" + std::to_string(std::numeric_limits<T>::min()) + ", " +
         std::to_string(std::numeric_limits<T>::max()) + "]";
}

Requirement Decode(const YAML::Node& node, bool& out) {
  static const std::set<std::string> kTrue = {"true", "True", "TRUE"};
  static const std::set<std::string> kFalse = {"false", "False", "FALSE"};
  if (IsPlainScalar(node) && kTrue.count(node.Scalar())) {
    out = true;
  } else if (IsPlainScalar(node) && kFalse.count(node.Scalar())) {
    out = false;
  } else {
    return "must be true or false";
  }
  return {};
}

Requirement Decode(const YAML::Node& node, double& out) {
  if (!IsPlainScalar(node)) return "must be a number";
  const std::string_view text = WithoutPlus(node.Scalar());
  const char* end = text.data() + text.size();
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ptr != end || ec == std::errc::invalid_argument) return "must be a number";
  if (ec != std::errc() || !std::isfinite(value)) return "must be a finite number";
  out = value;
  return {};
}

Requirement Decode(const YAML::Node& node, std::string& out) {
  if (!node.IsScalar()) return "must be a string";
  out = node.Scalar();
  return {};
}

Requirement Decode(const YAML::Node& node, std::vector<int>& out) {
  if (!node.IsSequence()) return "must be a list of integers";
  std::vector<int> values(node.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (!Decode(node[i], values[i]).empty()) return "must be a list of integers";
  }
  out = std::move(values);
  return {};
}

void Encode(YAML::Emitter& out, double value) { out << FormatDouble(value); }
void Encode(YAML::Emitter& out, const std::vector<int>& values) {
  out << YAML::Flow << YAML::BeginSeq;
  for (int v : values) out << v;
  out << YAML::EndSeq;
}
template <typename T>
void Encode(YAML::Emitter& out, const T& value) {
  out << value;
}

}  // namespace

std::vector<std::string> SplitHosts(const std::string& list) {
  std::vector<std::string> hosts;
  std::string host;
  for (char c : list + ",") {
    if (c == ',') {
      if (!host.empty()) hosts.push_back(host);
      host.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      host += c;
    }
  }
  return hosts;
}

namespace {

// ---- Value checks for the key table.

constexpr double kUnbounded = std::numeric_limits<double>::infinity();

// A numeric interval; an infinite upper bound means none.
struct Interval {
  double lo;
  double hi;
  bool lo_open;
  bool hi_open;
};

// Bounds are compared as doubles, which is exact for every bound in the table.
auto In(Interval iv) {
  return [iv](auto value) -> Requirement {
    const double x = static_cast<double>(value);
    const bool above_lo = iv.lo_open ? x > iv.lo : x >= iv.lo;
    const bool below_hi = iv.hi_open ? x < iv.hi : x <= iv.hi;
    if (above_lo && below_hi) return {};
    if (iv.hi == kUnbounded) return (iv.lo_open ? "must be > " : "must be >= ") + Show(iv.lo);
    return std::string("must be in ") + (iv.lo_open ? "(" : "[") + Show(iv.lo) + ", " +
           Show(iv.hi) + (iv.hi_open ? ")" : "]");
  };
}
auto AtLeast(double lo) { return In({lo, kUnbounded, false, true}); }
auto Above(double lo) { return In({lo, kUnbounded, true, true}); }
auto Within(double lo, double hi) { return In({lo, hi, false, false}); }
auto AboveUpTo(double lo, double hi) { return In({lo, hi, true, false}); }
auto AtLeastBelow(double lo, double hi) { return In({lo, hi, false, true}); }
auto Port() { return Within(1, 65535); }

Requirement NonEmpty(const std::string& value) {
  return value.empty() ? "must not be empty" : Requirement();
}

auto OneOf(std::vector<std::string> allowed) {
  return [allowed = std::move(allowed)](const std::string& value) -> Requirement {
    if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return {};
    std::string list;
    for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
    return "must be one of " + list;
  };
}

// The run name becomes a directory name under runs/, so it may not climb out of it.
Requirement SafeFileName(const std::string& value) {
  const bool safe_chars = std::all_of(value.begin(), value.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
  const bool special = value == "." || value == "..";
  if (!value.empty() && value.size() <= 200 && safe_chars && !special) return {};
  return "must be a file name of 1 to 200 letters, digits, '.', '_' or '-' (not '.' or '..')";
}

Requirement LayerSizes(const std::vector<int>& sizes) {
  if (!sizes.empty() && std::all_of(sizes.begin(), sizes.end(), [](int s) { return s >= 1; })) {
    return {};
  }
  return "must be a non-empty list of layer sizes, each >= 1";
}

// ---- The key table: every key, its place in Config, and its allowed values.

// One YAML key. Parsing, validation, suggestions and emission all walk the same table.
struct Field {
  std::string path;  // "seed" or "<section>.<key>".
  std::function<Requirement(const YAML::Node&, Config&)> read;
  std::function<Requirement(const Config&)> check;
  std::function<std::string(const Config&)> show;
  std::function<void(const Config&, YAML::Emitter&)> write;
};

template <typename T>
using CheckOf = std::function<Requirement(const T&)>;

// `get` maps a (const) Config& to the (const) member the key stands for.
template <typename T, typename Get>
Field MakeField(std::string path, Get get, CheckOf<T> check) {
  return Field{
      .path = std::move(path),
      .read = [get](const YAML::Node& node, Config& c) { return Decode(node, get(c)); },
      .check = [get, check](const Config& c) { return check ? check(get(c)) : Requirement(); },
      .show = [get](const Config& c) { return Show(get(c)); },
      .write = [get](const Config& c, YAML::Emitter& out) { Encode(out, get(c)); },
  };
}

template <typename T>
Field TopLevelKey(std::string path, T Config::*member,
                  std::type_identity_t<CheckOf<T>> check = {}) {
  auto get = [member](auto& c) -> decltype(auto) { return (c.*member); };
  return MakeField<T>(std::move(path), get, std::move(check));
}

template <typename S, typename T>
Field Key(std::string path, S Config::*section, T S::*member,
          std::type_identity_t<CheckOf<T>> check = {}) {
  auto get = [section, member](auto& c) -> decltype(auto) { return ((c.*section).*member); };
  return MakeField<T>(std::move(path), get, std::move(check));
}

// In the order ConfigToYaml writes them.
const std::vector<Field>& Fields() {
  using C = Config;
  static const auto* const kFields = new std::vector<Field>{
      TopLevelKey("seed", &C::seed),
      Key("run.name", &C::run, &RunOptions::name, SafeFileName),
      Key("run.dir", &C::run, &RunOptions::dir),
      Key("network.host", &C::network, &NetworkOptions::host, NonEmpty),
      Key("network.replay_hosts", &C::network, &NetworkOptions::replay_hosts),
      Key("network.paramserver_host", &C::network, &NetworkOptions::paramserver_host),
      Key("network.replay_port", &C::network, &NetworkOptions::replay_port, Port()),
      Key("network.paramserver_port", &C::network, &NetworkOptions::paramserver_port, Port()),
      Key("network.broadcast_port", &C::network, &NetworkOptions::broadcast_port, Port()),
      Key("network.weights_chunk_bytes", &C::network, &NetworkOptions::weights_chunk_bytes,
          Within(4096, 1 << 30)),
      Key("env.id", &C::env, &EnvOptions::id, NonEmpty),
      Key("replay.shards", &C::replay, &ReplayOptions::shards, AtLeast(1)),
      Key("replay.capacity", &C::replay, &ReplayOptions::capacity, AtLeast(1)),
      Key("replay.capacity_bytes", &C::replay, &ReplayOptions::capacity_bytes, AtLeast(0)),
      Key("replay.selector", &C::replay, &ReplayOptions::selector,
          OneOf({"prioritized", "uniform", "fifo", "lifo"})),
      Key("replay.alpha", &C::replay, &ReplayOptions::alpha, AtLeast(0)),
      Key("replay.beta", &C::replay, &ReplayOptions::beta, Within(0, 1)),
      Key("replay.priority_epsilon", &C::replay, &ReplayOptions::priority_epsilon, Above(0)),
      Key("replay.min_size_to_sample", &C::replay, &ReplayOptions::min_size_to_sample, AtLeast(1)),
      Key("replay.samples_per_insert", &C::replay, &ReplayOptions::samples_per_insert, Above(0)),
      Key("replay.samples_per_insert_tolerance", &C::replay,
          &ReplayOptions::samples_per_insert_tolerance, AtLeast(0)),
      Key("replay.snapshot_dir", &C::replay, &ReplayOptions::snapshot_dir),
      Key("replay.snapshot_period_seconds", &C::replay, &ReplayOptions::snapshot_period_seconds,
          AtLeast(0)),
      Key("replay.compression", &C::replay, &ReplayOptions::compression, OneOf({"none", "lz4"})),
      Key("actors.count", &C::actors, &ActorOptions::count, AtLeast(1)),
      Key("actors.envs_per_actor", &C::actors, &ActorOptions::envs_per_actor, AtLeast(1)),
      Key("actors.epsilon", &C::actors, &ActorOptions::epsilon, Within(0, 1)),
      Key("actors.epsilon_alpha", &C::actors, &ActorOptions::epsilon_alpha, AtLeast(0)),
      Key("actors.n_step", &C::actors, &ActorOptions::n_step, AtLeast(1)),
      Key("actors.insert_batch", &C::actors, &ActorOptions::insert_batch, AtLeast(1)),
      Key("actors.max_in_flight", &C::actors, &ActorOptions::max_in_flight, AtLeast(1)),
      Key("actors.retain_bytes", &C::actors, &ActorOptions::retain_bytes, AtLeast(0)),
      Key("model.hidden", &C::model, &ModelOptions::hidden, LayerSizes),
      Key("learner.ranks", &C::learner, &LearnerOptions::ranks, AtLeast(1)),
      Key("learner.batch_size", &C::learner, &LearnerOptions::batch_size, AtLeast(1)),
      Key("learner.batches_per_request", &C::learner, &LearnerOptions::batches_per_request,
          AtLeast(1)),
      Key("learner.learning_rate", &C::learner, &LearnerOptions::learning_rate, Above(0)),
      Key("learner.learning_rate_final_fraction", &C::learner,
          &LearnerOptions::learning_rate_final_fraction, AboveUpTo(0, 1)),
      Key("learner.gamma", &C::learner, &LearnerOptions::gamma, AboveUpTo(0, 1)),
      Key("learner.double_dqn", &C::learner, &LearnerOptions::double_dqn),
      Key("learner.huber_delta", &C::learner, &LearnerOptions::huber_delta, Above(0)),
      Key("learner.max_grad_norm", &C::learner, &LearnerOptions::max_grad_norm, Above(0)),
      Key("learner.target_update_period", &C::learner, &LearnerOptions::target_update_period,
          AtLeast(1)),
      Key("learner.publish_period", &C::learner, &LearnerOptions::publish_period, AtLeast(1)),
      Key("learner.eval_period", &C::learner, &LearnerOptions::eval_period, AtLeast(1)),
      Key("learner.eval_episodes", &C::learner, &LearnerOptions::eval_episodes, AtLeast(1)),
      Key("learner.final_eval_episodes", &C::learner, &LearnerOptions::final_eval_episodes,
          AtLeast(1)),
      Key("learner.device", &C::learner, &LearnerOptions::device, OneOf({"cpu", "cuda"})),
      Key("learner.checkpoint_period_seconds", &C::learner,
          &LearnerOptions::checkpoint_period_seconds, Above(0)),
      Key("learner.checksum_period", &C::learner, &LearnerOptions::checksum_period, AtLeast(1)),
      Key("learner.update_cpu", &C::learner, &LearnerOptions::update_cpu, AtLeast(-1)),
      Key("learner.target_ahead", &C::learner, &LearnerOptions::target_ahead),
      Key("learner.allreduce", &C::learner, &LearnerOptions::allreduce,
          OneOf({"auto", "mpi", "shared_memory"})),
      Key("learner.overlap_allreduce", &C::learner, &LearnerOptions::overlap_allreduce),
      Key("learner.bucket_bytes", &C::learner, &LearnerOptions::bucket_bytes, AtLeast(4)),
      Key("learner.policy_average", &C::learner, &LearnerOptions::policy_average,
          AtLeastBelow(0, 1)),
      Key("learner.lsdqn_period", &C::learner, &LearnerOptions::lsdqn_period, AtLeast(0)),
      Key("learner.lsdqn_samples", &C::learner, &LearnerOptions::lsdqn_samples, AtLeast(1)),
      Key("learner.lsdqn_lambda", &C::learner, &LearnerOptions::lsdqn_lambda, AtLeast(0)),
      Key("learner.lsdqn_solver", &C::learner, &LearnerOptions::lsdqn_solver,
          OneOf({"cholesky", "cg"})),
      Key("security.curve", &C::security, &SecurityOptions::curve),
      Key("security.server_key", &C::security, &SecurityOptions::server_key),
      Key("security.server_public_key", &C::security, &SecurityOptions::server_public_key),
      Key("security.client_key", &C::security, &SecurityOptions::client_key),
      Key("security.authorized_keys", &C::security, &SecurityOptions::authorized_keys),
      Key("stop.target_return", &C::stop, &StopOptions::target_return),
      Key("stop.min_seconds", &C::stop, &StopOptions::min_seconds, AtLeast(0)),
      Key("stop.max_env_steps", &C::stop, &StopOptions::max_env_steps, AtLeast(1)),
      Key("stop.max_seconds", &C::stop, &StopOptions::max_seconds, Above(0)),
  };
  return *kFields;
}

const Field* FindField(std::string_view path) {
  for (const Field& f : Fields()) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

// The names one level below `prefix` ("" for top level, "replay." for a section), in table order.
std::vector<std::string> ChildNames(std::string_view prefix) {
  std::vector<std::string> names;
  for (const Field& f : Fields()) {
    if (!f.path.starts_with(prefix)) continue;
    std::string name =
        f.path.substr(prefix.size(), f.path.find('.', prefix.size()) - prefix.size());
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

bool IsSection(std::string_view name) {
  return !FindField(name) && !ChildNames(std::string(name) + ".").empty();
}

// Keys that must agree with each other; checked after every key passed its own check.
struct CrossCheck {
  std::vector<std::string> paths;  // The error points at the first of these the user set.
  std::function<std::string(const Config&)> problem;  // Empty when the keys agree.
};

// Shard k listens on replay_port + k, so no other port may fall in that range.
std::string ClashWithReplayPorts(const std::string& path, int port, const Config& c) {
  const int64_t first = c.network.replay_port;
  const int64_t last = first + c.replay.shards - 1;
  if (port < first || port > last) return {};
  return "'" + path + "' (" + Show(port) + ") must not be one of the replay shard ports " +
         Show(first) + ".." + Show(last) + " ('network.replay_port' + k for k < 'replay.shards')";
}

const std::vector<CrossCheck>& CrossChecks() {
  static const auto* const kChecks = new std::vector<CrossCheck>{
      {{"learner.batch_size", "learner.ranks"},
       [](const Config& c) -> std::string {
         if (c.learner.batch_size >= c.learner.ranks) return {};
         return "'learner.batch_size' (" + Show(c.learner.batch_size) +
                ") must be >= 'learner.ranks' (" + Show(c.learner.ranks) +
                ") so that every rank gets part of each batch";
       }},
      {{"learner.batch_size", "learner.batches_per_request"},
       [](const Config& c) -> std::string {
         const int64_t rows = int64_t{c.learner.batch_size} * c.learner.batches_per_request;
         if (rows <= kMaxBatchRows) return {};
         return "'learner.batch_size' (" + Show(c.learner.batch_size) +
                ") times 'learner.batches_per_request' (" + Show(c.learner.batches_per_request) +
                ") must be <= " + Show(kMaxBatchRows) +
                ", the most rows a replay shard samples at once";
       }},
      {{"replay.min_size_to_sample", "replay.capacity"},
       [](const Config& c) -> std::string {
         if (c.replay.min_size_to_sample <= c.replay.capacity) return {};
         return "'replay.min_size_to_sample' (" + Show(c.replay.min_size_to_sample) +
                ") must be <= 'replay.capacity' (" + Show(c.replay.capacity) +
                "), or no shard ever holds enough to sample";
       }},
      {{"replay.capacity_bytes", "replay.compression"},
       [](const Config& c) -> std::string {
         if (c.replay.capacity_bytes == 0 || c.replay.compression == "none") return {};
         return "'replay.capacity_bytes' (" + Show(c.replay.capacity_bytes) +
                ") cannot size a table whose rows are compressed ('replay.compression' is " +
                c.replay.compression +
                "): they have no fixed size; give 'replay.capacity' in transitions instead "
                "(ferry inspect shows the bytes they take)";
       }},
      {{"network.replay_port", "replay.shards"},
       [](const Config& c) -> std::string {
         const int64_t last = int64_t{c.network.replay_port} + c.replay.shards - 1;
         if (last <= 65535) return {};
         return "the last replay shard port, 'network.replay_port' + 'replay.shards' - 1 = " +
                Show(last) + ", must be <= 65535";
       }},
      {{"network.broadcast_port", "network.paramserver_port"},
       [](const Config& c) -> std::string {
         if (c.network.broadcast_port != c.network.paramserver_port) return {};
         return "'network.broadcast_port' and 'network.paramserver_port' must differ, both are " +
                Show(c.network.broadcast_port);
       }},
      {{"network.paramserver_port", "network.replay_port", "replay.shards"},
       [](const Config& c) {
         return ClashWithReplayPorts("network.paramserver_port", c.network.paramserver_port, c);
       }},
      {{"network.broadcast_port", "network.replay_port", "replay.shards"},
       [](const Config& c) {
         return ClashWithReplayPorts("network.broadcast_port", c.network.broadcast_port, c);
       }},
      {{"network.replay_hosts", "replay.shards"},
       [](const Config& c) -> std::string {
         const size_t hosts = SplitHosts(c.network.replay_hosts).size();
         if (hosts <= 1 || hosts == static_cast<size_t>(c.replay.shards)) return {};
         return "'network.replay_hosts' lists " + Show(static_cast<int64_t>(hosts)) +
                " hosts; give one for every shard or one for all ('replay.shards' is " +
                Show(c.replay.shards) + ")";
       }},
      {{"security.curve", "security.server_key", "security.server_public_key",
        "security.client_key", "security.authorized_keys"},
       [](const Config& c) -> std::string {
         if (!c.security.curve) return {};
         const SecurityOptions& s = c.security;
         for (const auto& [path, value] :
              {std::pair{"security.server_key", &s.server_key},
               std::pair{"security.server_public_key", &s.server_public_key},
               std::pair{"security.client_key", &s.client_key},
               std::pair{"security.authorized_keys", &s.authorized_keys}}) {
           if (value->empty()) {
             return std::string("'security.curve' is true but '") + path +
                    "' is empty (make keys with: ferry keygen PREFIX)";
           }
         }
         return {};
       }},
  };
  return *kChecks;
}

// ---- Suggestions for misspelt keys.

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The nearest candidate, when it is near enough to be what `name` meant.
std::optional<std::string> Closest(std::string_view name,
                                   const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (const std::string& candidate : candidates) {
    const size_t d = EditDistance(name, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  if (!best || 2 * best_distance > name.size()) return std::nullopt;
  return best;
}

std::string UnknownKey(const std::string& path, const std::optional<std::string>& suggestion) {
  std::string message = "unknown key '" + path + "'";
  if (suggestion) message += " (did you mean '" + *suggestion + "'?)";
  return message;
}

std::vector<std::string> AllPaths() {
  std::vector<std::string> paths;
  for (const Field& f : Fields()) paths.push_back(f.path);
  return paths;
}

std::string NotAMapping(const std::string& section, const YAML::Node& node) {
  return "'" + section + "' must be a mapping of " + section + " keys, got " + Describe(node);
}

// ---- Reading: YAML text + overrides -> validated Config.

// Turns one YAML document and its overrides into a validated Config; use once per document.
class ConfigReader {
 public:
  explicit ConfigReader(std::string source) : source_(std::move(source)) {}

  Result<Config> Read(const std::string& yaml_text, const std::vector<std::string>& overrides);

 private:
  Status Load(const std::string& yaml_text);
  Status ApplyOverride(const std::string& assignment);
  // Reads every key of `map`, whose keys are the names below `prefix`.
  Status ReadMap(const YAML::Node& map, const std::string& prefix);
  Status Validate() const;

  // "file:line:col", or the override that set `path`; the plain source when neither is known.
  std::string Where(const std::string& path, const YAML::Mark& mark) const;
  std::string Where(const std::string& path) const;
  // The node holding `path`; undefined when the document leaves the key out. Never assign to a
  // yaml-cpp Node that aliases the tree: assignment writes through to it.
  YAML::Node Lookup(const std::string& path) const;
  bool IsSet(const std::string& path) const;
  std::string At(const YAML::Mark& mark) const;
  Status Error(const std::string& where, const std::string& message) const {
    return InvalidArgument(where + ": " + message);
  }

  const std::string source_;
  YAML::Node root_;
  std::map<std::string, std::string> overrides_;  // Key path -> the last override that set it.
  Config config_;
};

Result<Config> ConfigReader::Read(const std::string& yaml_text,
                                  const std::vector<std::string>& overrides) {
  try {
    FERRY_RETURN_IF_ERROR(Load(yaml_text));
    for (const std::string& assignment : overrides) {
      FERRY_RETURN_IF_ERROR(ApplyOverride(assignment));
    }
    FERRY_RETURN_IF_ERROR(ReadMap(root_, ""));
    FERRY_RETURN_IF_ERROR(Validate());
  } catch (const YAML::Exception& e) {
    return Error(At(e.mark), "cannot read the config: " + e.msg);
  }
  return config_;
}

Status ConfigReader::Load(const std::string& yaml_text) {
  try {
    root_ = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    return Error(At(e.mark), "YAML syntax error: " + e.msg);
  }
  if (root_.IsNull()) root_ = YAML::Node(YAML::NodeType::Map);
  if (!root_.IsMap()) {
    const std::string expected = "the document must be a mapping of sections (run, replay, ...)";
    return Error(At(root_.Mark()), expected + ", got " + Describe(root_));
  }
  return Status::Ok();
}

Status ConfigReader::ApplyOverride(const std::string& assignment) {
  const std::string where = "--set " + assignment;
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos) {
    return Error(where, "an override must look like key.path=value, e.g. replay.alpha=0.5");
  }
  const std::string path = assignment.substr(0, eq);
  if (!FindField(path)) return Error(where, UnknownKey(path, Closest(path, AllPaths())));
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::ParserException& e) {
    return Error(where, "the value is not valid YAML: " + e.msg);
  }
  const size_t dot = path.find('.');
  if (dot == std::string::npos) {
    root_[path] = value;
  } else {
    const std::string section = path.substr(0, dot);
    const YAML::Node existing = std::as_const(root_)[section];
    if (existing && !existing.IsMap() && !existing.IsNull()) {
      return Error(At(existing.Mark()), NotAMapping(section, existing));
    }
    root_[section][path.substr(dot + 1)] = value;
  }
  overrides_[path] = assignment;
  return Status::Ok();
}

Status ConfigReader::ReadMap(const YAML::Node& map, const std::string& prefix) {
  std::set<std::string> seen;
  for (const auto& entry : map) {
    const YAML::Node& key = entry.first;
    const YAML::Node& value = entry.second;
    const std::string name = FlowText(key);
    const std::string path = prefix + name;
    if (!seen.insert(name).second) return Error(At(key.Mark()), "duplicate key '" + path + "'");
    if (const Field* field = FindField(path)) {
      const Requirement requirement = field->read(value, config_);
      if (!requirement.empty()) {
        return Error(Where(path, value.Mark().is_null() ? key.Mark() : value.Mark()),
                     "'" + path + "' " + requirement + ", got " + Describe(value));
      }
    } else if (prefix.empty() && IsSection(name)) {
      if (!value.IsMap() && !value.IsNull()) return Error(At(key.Mark()), NotAMapping(name, value));
      if (value.IsMap()) FERRY_RETURN_IF_ERROR(ReadMap(value, name + "."));
    } else {
      const std::optional<std::string> near = Closest(name, ChildNames(prefix));
      return Error(At(key.Mark()),
                   UnknownKey(path, near ? std::optional(prefix + *near) : std::nullopt));
    }
  }
  return Status::Ok();
}

Status ConfigReader::Validate() const {
  for (const Field& field : Fields()) {
    const Requirement requirement = field.check(config_);
    if (!requirement.empty()) {
      return Error(Where(field.path),
                   "'" + field.path + "' " + requirement + ", got " + field.show(config_));
    }
  }
  for (const CrossCheck& cross : CrossChecks()) {
    const std::string problem = cross.problem(config_);
    if (problem.empty()) continue;
    const auto set = std::find_if(cross.paths.begin(), cross.paths.end(),
                                  [this](const std::string& p) { return IsSet(p); });
    return Error(set == cross.paths.end() ? source_ : Where(*set), problem);
  }
  return Status::Ok();
}

std::string ConfigReader::Where(const std::string& path, const YAML::Mark& mark) const {
  const auto it = overrides_.find(path);
  return it == overrides_.end() ? At(mark) : "--set " + it->second;
}

std::string ConfigReader::Where(const std::string& path) const {
  const YAML::Node node = Lookup(path);
  return Where(path, node ? node.Mark() : YAML::Mark::null_mark());
}

YAML::Node ConfigReader::Lookup(const std::string& path) const {
  const YAML::Node& root = root_;
  const size_t dot = path.find('.');
  if (dot == std::string::npos) return root[path];
  const YAML::Node section = root[path.substr(0, dot)];
  if (!section || !section.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  return section[path.substr(dot + 1)];
}

bool ConfigReader::IsSet(const std::string& path) const {
  return overrides_.count(path) > 0 || Lookup(path).IsDefined();
}

std::string ConfigReader::At(const YAML::Mark& mark) const {
  if (mark.is_null()) return source_;
  return source_ + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

}  // namespace

Result<Config> ParseConfig(const std::string& yaml_text, const std::string& source,
                           const std::vector<std::string>& overrides) {
  return ConfigReader(source).Read(yaml_text, overrides);
}

Result<Config> LoadConfig(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path, std::ios::binary);
  std::string text;
  char buffer[4096];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) text.append(buffer, in.gcount());
  if (!in.is_open() || in.bad()) {
    return NotFound("cannot read config file '" + path + "': " + std::strerror(errno));
  }
  return ParseConfig(text, path, overrides);
}

std::string ConfigToYaml(const Config& config) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const std::string& name : ChildNames("")) {
    out << YAML::Key << name << YAML::Value;
    if (const Field* field = FindField(name)) {
      field->write(config, out);
      continue;
    }
    out << YAML::BeginMap;
    for (const std::string& key : ChildNames(name + ".")) {
      out << YAML::Key << key << YAML::Value;
      FindField(name + "." + key)->write(config, out);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  FERRY_CHECK(out.good());
  return std::string(out.c_str()) + "\n";
}

}  // namespace ferry::core
