#include "core/metrics.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace ferry::core {
namespace {

// A directory in the temp directory that is removed when the test ends.
class TempPath {
 public:
  explicit TempPath(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("ferry_metrics_test_" + std::to_string(::getpid()) + "_" + name)) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempPath() { std::filesystem::remove_all(path_); }
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
  TempPath dir("append");
  const std::string path = dir.str() + "/metrics.jsonl";
  {
    MetricsWriter writer;
    REQUIRE(writer.Open(dir.str()).ok());
    writer.Write(MetricsRecord().Add("updates", 1).Add("loss", 0.5));
    // Each line is flushed, so a reader sees it while the writer is still open.
    CHECK(ReadLines(path) == std::vector<std::string>{"{\"updates\": 1, \"loss\": 0.5}"});
    writer.Write(MetricsRecord().Add("updates", 2).Add("loss", std::nan("")));
  }
  {
    MetricsWriter reopened;
    REQUIRE(reopened.Open(dir.str()).ok());
    reopened.Write(MetricsRecord().Add("updates", 3));
  }
  CHECK(ReadLines(path) == std::vector<std::string>{"{\"updates\": 1, \"loss\": 0.5}",
                                                    "{\"updates\": 2, \"loss\": null}",
                                                    "{\"updates\": 3}"});
}

TEST_CASE("MetricsWriter writes one CSV row per numeric field, beside the record's axes") {
  TempPath dir("csv");
  {
    MetricsWriter writer;
    REQUIRE(writer.Open(dir.str()).ok());
    writer.Write(MetricsRecord()
                     .Add("time", 1.5)
                     .Add("updates", 250)
                     .Add("env_steps", 1635)
                     .Add("eval_return", 45.25)
                     .Add("end", std::string("target"))
                     .Add("loss", std::nan("")));
    writer.Write(MetricsRecord().Add("time", 2).Add("updates", 500).Add("lsdqn_rows", 4096));
  }
  {
    MetricsWriter reopened;  // The header is written once.
    REQUIRE(reopened.Open(dir.str()).ok());
    reopened.Write(MetricsRecord().Add("updates", 750).Add("loss", 0.125));
  }
  CHECK(ReadLines(dir.str() + "/metrics.csv") ==
        std::vector<std::string>{"time,updates,env_steps,key,value",
                                 "1.5,250,1635,eval_return,45.25", "2,500,,lsdqn_rows,4096",
                                 ",750,,loss,0.125"});
}

// A reader of TFRecord files of tensorflow.Event protos, as TensorBoard reads them: checks both
// masked CRCs of every record and decodes the fields ferry writes.
struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::vector<std::pair<std::string, float>> scalars;
};

uint64_t Varint(const std::string& s, size_t* at) {
  uint64_t value = 0;
  for (int shift = 0;; shift += 7) {
    REQUIRE(*at < s.size());
    const auto byte = static_cast<uint8_t>(s[(*at)++]);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return value;
  }
}

std::string Bytes(const std::string& s, size_t* at) {
  const uint64_t n = Varint(s, at);
  REQUIRE(*at + n <= s.size());
  const std::string out = s.substr(*at, n);
  *at += n;
  return out;
}

std::vector<Event> ReadEvents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<Event> events;
  size_t at = 0;
  while (at < file.size()) {
    REQUIRE(at + 12 <= file.size());
    uint64_t length = 0;
    uint32_t length_crc = 0, data_crc = 0;
    std::memcpy(&length, file.data() + at, 8);
    std::memcpy(&length_crc, file.data() + at + 8, 4);
    CHECK(length_crc == MaskedCrc32c(file.data() + at, 8));
    REQUIRE(at + 12 + length + 4 <= file.size());
    const std::string data = file.substr(at + 12, length);
    std::memcpy(&data_crc, file.data() + at + 12 + length, 4);
    CHECK(data_crc == MaskedCrc32c(data.data(), data.size()));
    at += 12 + length + 4;

    Event event;
    for (size_t p = 0; p < data.size();) {
      const uint64_t tag = Varint(data, &p);
      if (tag == (1 << 3 | 1)) {
        std::memcpy(&event.wall_time, data.data() + p, 8);
        p += 8;
      } else if (tag == (2 << 3 | 0)) {
        event.step = static_cast<int64_t>(Varint(data, &p));
      } else if (tag == (3 << 3 | 2)) {
        event.file_version = Bytes(data, &p);
      } else {
        REQUIRE(tag == (5 << 3 | 2));
        const std::string summary = Bytes(data, &p);
        for (size_t q = 0; q < summary.size();) {
          REQUIRE(Varint(summary, &q) == (1 << 3 | 2));
          const std::string value = Bytes(summary, &q);
          size_t r = 0;
          REQUIRE(Varint(value, &r) == (1 << 3 | 2));
          const std::string name = Bytes(value, &r);
          REQUIRE(Varint(value, &r) == (2 << 3 | 5));
          float number = 0;
          std::memcpy(&number, value.data() + r, 4);
          event.scalars.emplace_back(name, number);
        }
      }
    }
    events.push_back(event);
  }
  return events;
}

TEST_CASE("MetricsWriter writes a TensorBoard event file that decodes to the scalars") {
  TempPath dir("tensorboard");
  {
    MetricsWriter writer;
    REQUIRE(writer.Open(dir.str()).ok());
    writer.Write(MetricsRecord()
                     .Add("time", 1.5)
                     .Add("updates", 250)
                     .Add("env_steps", 1635)
                     .Add("eval_return", 45.25)
                     .Add("loss", std::nan("")));
    writer.Write(MetricsRecord().Add("updates", 500).Add("lsdqn_rows", 4096));
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir.str() + "/tensorboard")) {
    files.push_back(entry.path());
  }
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename().string().rfind("events.out.tfevents.", 0) == 0);
  const std::vector<Event> events = ReadEvents(files[0].string());
  REQUIRE(events.size() == 3);
  CHECK(events[0].file_version == "brain.Event:2");
  CHECK(events[0].wall_time > 1.6e9);  // Seconds since the epoch: after 2020.
  CHECK(events[1].step == 1635);        // env_steps where the record has it...
  CHECK(events[1].scalars == std::vector<std::pair<std::string, float>>{{"eval_return", 45.25f}});
  CHECK(events[2].step == 500);  // ...else updates.
  CHECK(events[2].scalars == std::vector<std::pair<std::string, float>>{{"lsdqn_rows", 4096.f}});
}

TEST_CASE("MetricsWriter reports a directory it cannot write") {
  const std::string dir = "/nonexistent_ferry_dir";
  MetricsWriter writer;
  const Status status = writer.Open(dir);
  CHECK(status.code() == StatusCode::kUnavailable);
  CHECK(status.message().find(dir + "/metrics.jsonl") != std::string::npos);
  writer.Write(MetricsRecord().Add("updates", 1));  // A writer that is not open drops records.
}

}  // namespace
}  // namespace ferry::core
