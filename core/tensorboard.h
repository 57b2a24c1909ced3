// Writes scalars as a TensorBoard event file, so `tensorboard --logdir RUN_DIR` shows a run.
//
// The format, written here without TensorFlow or protoc: a file of TFRecords
//
//   uint64 length | uint32 masked CRC32C of length | length bytes | uint32 masked CRC32C of them
//
// (little-endian; masked = rotate right 15, plus 0xa282ead8), each holding one serialized
// tensorflow.Event protobuf:
//
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; }
//
// The first record names the version ("brain.Event:2"), as TensorFlow's writers do. Records are
// flushed as they are written. Used from one thread.
#ifndef FERRY_CORE_TENSORBOARD_H_
#define FERRY_CORE_TENSORBOARD_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace ferry::core {

class TensorBoardWriter {
 public:
  TensorBoardWriter() = default;
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // Creates `dir` and a file events.out.tfevents.<seconds>.<host> in it.
  Status Open(const std::string& dir);
  // One event at `step` holding every (tag, value) pair.
  void WriteScalars(double wall_time, int64_t step,
                    const std::vector<std::pair<std::string, double>>& scalars);
  const std::string& path() const { return path_; }

 private:
  void WriteRecord(const std::string& data);

  std::FILE* file_ = nullptr;
  std::string path_;
};

// CRC32C masked as TFRecord stores it.
uint32_t MaskedCrc32c(const void* data, size_t size);

}  // namespace ferry::core

#endif  // FERRY_CORE_TENSORBOARD_H_
