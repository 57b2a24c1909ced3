// Appends metrics records as JSON lines (one object per line, flushed).
//
//   {"time": 12.5, "updates": 4000, "env_steps": 51200, "eval_return": 481.2}
//
// Field order is kept. Used from one thread per writer.
#ifndef FERRY_CORE_METRICS_H_
#define FERRY_CORE_METRICS_H_

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace ferry::core {

class MetricsRecord {
 public:
  MetricsRecord& Add(const std::string& key, double value);
  MetricsRecord& Add(const std::string& key, const std::string& value);
  std::string ToJson() const;

 private:
  std::vector<std::pair<std::string, std::string>> fields_;  // Values already JSON-encoded.
};

class MetricsWriter {
 public:
  MetricsWriter() = default;
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  Status Open(const std::string& path);
  void Write(const MetricsRecord& record);

 private:
  std::FILE* file_ = nullptr;
};

// Quotes and escapes `text` as a JSON string.
std::string JsonString(const std::string& text);

}  // namespace ferry::core

#endif  // FERRY_CORE_METRICS_H_
