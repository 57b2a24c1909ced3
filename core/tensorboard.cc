#include "core/tensorboard.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/crc32c.h"

namespace ferry::core {
namespace {

// Protobuf wire types.
constexpr int kVarint = 0;
constexpr int kFixed64 = 1;
constexpr int kLengthDelimited = 2;
constexpr int kFixed32 = 5;

void PutVarint(std::string* out, uint64_t value) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void PutTag(std::string* out, int field, int wire_type) {
  PutVarint(out, static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type));
}

template <typename T>
void PutFixed(std::string* out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // Little-endian, as protobuf and TFRecord want.
  out->append(bytes, sizeof(T));
}

void PutBytes(std::string* out, int field, const std::string& bytes) {
  PutTag(out, field, kLengthDelimited);
  PutVarint(out, bytes.size());
  out->append(bytes);
}

std::string EventHeader(double wall_time, int64_t step) {
  std::string event;
  PutTag(&event, 1, kFixed64);
  PutFixed(&event, wall_time);
  PutTag(&event, 2, kVarint);
  PutVarint(&event, static_cast<uint64_t>(step));
  return event;
}

}  // namespace

uint32_t MaskedCrc32c(const void* data, size_t size) {
  const uint32_t crc = Crc32c(0, data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_) std::fclose(file_);
}

Status TensorBoardWriter::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Unavailable("cannot create TensorBoard directory " + dir + ": " + ec.message());
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  path_ = dir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(now)) + "." + host;
  file_ = std::fopen(path_.c_str(), "ab");
  if (!file_) return Unavailable("cannot open " + path_ + ": " + std::strerror(errno));
  std::string event = EventHeader(now, 0);
  PutBytes(&event, 3, "brain.Event:2");
  WriteRecord(event);
  return Status::Ok();
}

void TensorBoardWriter::WriteScalars(double wall_time, int64_t step,
                                     const std::vector<std::pair<std::string, double>>& scalars) {
  if (!file_) return;
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string entry;
    PutBytes(&entry, 1, tag);
    PutTag(&entry, 2, kFixed32);
    PutFixed(&entry, static_cast<float>(value));
    PutBytes(&summary, 1, entry);
  }
  std::string event = EventHeader(wall_time, step);
  PutBytes(&event, 5, summary);
  WriteRecord(event);
}

void TensorBoardWriter::WriteRecord(const std::string& data) {
  std::string record;
  const uint64_t length = data.size();
  PutFixed(&record, length);
  PutFixed(&record, MaskedCrc32c(&length, sizeof(length)));
  record += data;
  PutFixed(&record, MaskedCrc32c(data.data(), data.size()));
  std::fwrite(record.data(), 1, record.size(), file_);
  std::fflush(file_);
}

}  // namespace ferry::core
