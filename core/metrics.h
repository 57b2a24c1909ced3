// Appends metrics records to a run directory in three forms, each flushed per record:
//
//   metrics.jsonl   one JSON object per record, field order kept
//                   {"time": 12.5, "updates": 4000, "env_steps": 51200, "eval_return": 481.2}
//   metrics.csv     one row per numeric field ("long" form, for gnuplot and spreadsheets):
//                   time,updates,env_steps,key,value   (empty where the record lacks one)
//   tensorboard/    a TensorBoard event file (core/tensorboard.h): every other numeric field as
//                   a scalar, at step env_steps (updates where a record has no env_steps)
//
// Used from one thread per writer.
#ifndef FERRY_CORE_METRICS_H_
#define FERRY_CORE_METRICS_H_

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensorboard.h"

namespace ferry::core {

class MetricsRecord {
 public:
  MetricsRecord& Add(const std::string& key, double value);
  MetricsRecord& Add(const std::string& key, const std::string& value);
  std::string ToJson() const;
  // The numeric fields, in order.
  const std::vector<std::pair<std::string, double>>& numbers() const { return numbers_; }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;  // Values already JSON-encoded.
  std::vector<std::pair<std::string, double>> numbers_;
};

class MetricsWriter {
 public:
  MetricsWriter() = default;
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  // Appends to the files in `run_dir` (creating them).
  Status Open(const std::string& run_dir);
  void Write(const MetricsRecord& record);

 private:
  std::FILE* json_ = nullptr;
  std::FILE* csv_ = nullptr;
  TensorBoardWriter tensorboard_;
};

// Quotes and escapes `text` as a JSON string.
std::string JsonString(const std::string& text);

}  // namespace ferry::core

#endif  // FERRY_CORE_METRICS_H_
