#include "core/metrics.h"

#include <cerrno>
#include <cmath>
#include <cstring>

namespace ferry::core {

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
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
  if (file_) std::fclose(file_);
}

Status MetricsWriter::Open(const std::string& path) {
  file_ = std::fopen(path.c_str(), "a");
  if (!file_) return Unavailable("cannot open metrics file " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

void MetricsWriter::Write(const MetricsRecord& record) {
  if (!file_) return;
  const std::string line = record.ToJson() + "\n";
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

}  // namespace ferry::core
