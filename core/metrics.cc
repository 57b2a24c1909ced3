#include "core/metrics.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

namespace ferry::core {

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

MetricsRecord& MetricsRecord::Add(const std::string& key, double value) {
  char buf[32];
  if (std::isfinite(value)) {
    std::snprintf(buf, sizeof(buf), "%.10g", value);
  } else {
    std::snprintf(buf, sizeof(buf), "null");  // JSON has no NaN or infinity.
  }
  fields_.emplace_back(key, buf);
  numbers_.emplace_back(key, value);
  return *this;
}

MetricsRecord& MetricsRecord::Add(const std::string& key, const std::string& value) {
  fields_.emplace_back(key, JsonString(value));
  return *this;
}

std::string MetricsRecord::ToJson() const {
  std::string out = "{";
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (i) out += ", ";
    out += JsonString(fields_[i].first) + ": " + fields_[i].second;
  }
  return out + "}";
}

MetricsWriter::~MetricsWriter() {
  for (std::FILE* f : {json_, csv_}) {
    if (f) std::fclose(f);
  }
}

Status MetricsWriter::Open(const std::string& run_dir) {
  const std::string json_path = run_dir + "/metrics.jsonl";
  const std::string csv_path = run_dir + "/metrics.csv";
  json_ = std::fopen(json_path.c_str(), "a");
  if (!json_)
    return Unavailable("cannot open metrics file " + json_path + ": " + std::strerror(errno));
  csv_ = std::fopen(csv_path.c_str(), "a");
  if (!csv_)
    return Unavailable("cannot open metrics file " + csv_path + ": " + std::strerror(errno));
  if (std::ftell(csv_) == 0) std::fputs("time,updates,env_steps,key,value\n", csv_);
  return tensorboard_.Open(run_dir + "/tensorboard");
}

void MetricsWriter::Write(const MetricsRecord& record) {
  if (!json_) return;
  const std::string line = record.ToJson() + "\n";
  std::fwrite(line.data(), 1, line.size(), json_);
  std::fflush(json_);

  // The axes: time, updates and env_steps, where the record has them.
  std::string axes[3];
  double step_updates = 0;
  double step_env = -1;
  std::vector<std::pair<std::string, double>> scalars;
  for (const auto& [key, value] : record.numbers()) {
    const int axis = key == "time" ? 0 : key == "updates" ? 1 : key == "env_steps" ? 2 : -1;
    if (axis < 0) {
      if (std::isfinite(value)) scalars.emplace_back(key, value);
      continue;
    }
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.10g", value);
    axes[axis] = buf;
    if (axis == 1) step_updates = value;
    if (axis == 2) step_env = value;
  }
  for (const auto& [key, value] : scalars) {
    std::fprintf(csv_, "%s,%s,%s,%s,%.10g\n", axes[0].c_str(), axes[1].c_str(), axes[2].c_str(),
                 key.c_str(), value);
  }
  std::fflush(csv_);
  const double wall_time =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  tensorboard_.WriteScalars(wall_time,
                            static_cast<int64_t>(step_env >= 0 ? step_env : step_updates), scalars);
}

}  // namespace ferry::core
