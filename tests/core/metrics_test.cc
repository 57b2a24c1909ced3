#include "core/metrics.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace ferry::core {
namespace {

// A file path in the temp directory that is removed when the test ends.
class TempPath {
 public:
  explicit TempPath(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("ferry_metrics_test_" + std::to_string(::getpid()) + "_" + name)) {
    std::filesystem::remove(path_);
  }
  ~TempPath() { std::filesystem::remove(path_); }
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;

  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_CASE("JsonString quotes and escapes") {
  CHECK(JsonString("") == "\"\"");
  CHECK(JsonString("plain text") == "\"plain text\"");
  CHECK(JsonString("say \"hi\"") == "\"say \\\"hi\\\"\"");
  CHECK(JsonString("C:\\runs") == "\"C:\\\\runs\"");
  CHECK(JsonString("a\nb\tc") == "\"a\\nb\\tc\"");
  CHECK(JsonString(std::string("\x01\r\x1f", 3)) == "\"\\u0001\\u000d\\u001f\"");
  CHECK(JsonString(std::string("nul\0byte", 8)) == "\"nul\\u0000byte\"");
  // Printable ASCII and UTF-8 bytes pass through untouched.
  CHECK(JsonString("~ \x7f") == "\"~ \x7f\"");
  CHECK(JsonString("r\xC3\xA9sum\xC3\xA9") == "\"r\xC3\xA9sum\xC3\xA9\"");
}

TEST_CASE("MetricsRecord keeps field order and formats numbers") {
  MetricsRecord record;
  record.Add("time", 12.5).Add("updates", 4000).Add("env_steps", 51200).Add("eval_return", 481.2);
  CHECK(record.ToJson() ==
        "{\"time\": 12.5, \"updates\": 4000, \"env_steps\": 51200, \"eval_return\": 481.2}");

  MetricsRecord reversed;
  reversed.Add("b", 2).Add("a", 1);
  CHECK(reversed.ToJson() == "{\"b\": 2, \"a\": 1}");

  CHECK(MetricsRecord().ToJson() == "{}");
}

TEST_CASE("MetricsRecord numbers keep ten significant digits") {
  MetricsRecord record;
  record.Add("third", 1.0 / 3).Add("negative", -0.25).Add("big", 1e15).Add("tiny", 2.5e-7);
  CHECK(record.ToJson() ==
        "{\"third\": 0.3333333333, \"negative\": -0.25, \"big\": 1e+15, \"tiny\": 2.5e-07}");
}

TEST_CASE("MetricsRecord writes non-finite numbers as null") {
  MetricsRecord record;
  record.Add("nan", std::nan(""))
      .Add("inf", std::numeric_limits<double>::infinity())
      .Add("neg_inf", -std::numeric_limits<double>::infinity())
      .Add("zero", 0.0);
  CHECK(record.ToJson() == "{\"nan\": null, \"inf\": null, \"neg_inf\": null, \"zero\": 0}");
}

TEST_CASE("MetricsRecord escapes string values and keys") {
  MetricsRecord record;
  record.Add("env", std::string("CartPole \"v1\"\n")).Add("we\"ird", 1.0);
  CHECK(record.ToJson() == "{\"env\": \"CartPole \\\"v1\\\"\\n\", \"we\\\"ird\": 1}");
}

TEST_CASE("MetricsWriter appends one line per record") {
  TempPath path("append.jsonl");
  {
    MetricsWriter writer;
    REQUIRE(writer.Open(path.str()).ok());
    writer.Write(MetricsRecord().Add("updates", 1).Add("loss", 0.5));
    // Each line is flushed, so a reader sees it while the writer is still open.
    CHECK(ReadLines(path.str()) == std::vector<std::string>{"{\"updates\": 1, \"loss\": 0.5}"});
    writer.Write(MetricsRecord().Add("updates", 2).Add("loss", std::nan("")));
  }
  {
    MetricsWriter reopened;
    REQUIRE(reopened.Open(path.str()).ok());
    reopened.Write(MetricsRecord().Add("updates", 3));
  }
  CHECK(ReadLines(path.str()) == std::vector<std::string>{"{\"updates\": 1, \"loss\": 0.5}",
                                                          "{\"updates\": 2, \"loss\": null}",
                                                          "{\"updates\": 3}"});
}

TEST_CASE("MetricsWriter reports a path it cannot open") {
  const std::string path = "/nonexistent_ferry_dir/metrics.jsonl";
  MetricsWriter writer;
  const Status status = writer.Open(path);
  CHECK(status.code() == StatusCode::kUnavailable);
  CHECK(status.message().find(path) != std::string::npos);
  writer.Write(MetricsRecord().Add("updates", 1));  // A writer that is not open drops records.
}

}  // namespace
}  // namespace ferry::core
