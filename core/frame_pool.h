// Reusable buffers for large outgoing ZeroMQ frames.
//
//   Take(size) -> a zmq::message_t over a pooled buffer (or a new one)
//   ZeroMQ sends it, then calls the free function from its I/O thread
//             -> the buffer goes back to the pool while the pool is under max_bytes
//
// A fresh multi-megabyte buffer costs a page fault per 4 KiB page the first
// time it is written (about 1.6 us each on a paravirtualised VM: 0.7 ms for the
// 1.8 MB reply to a sample of 32 Atari transitions, four times the gather that
// fills it), and glibc hands freed memory of that size back to the kernel. A
// pooled buffer is already mapped. The pool's state lives as long as the last
// message over one of its buffers, so the owner may go first. Frames under
// kMinPooledBytes are plain messages (malloc serves those from warm memory).
// Any thread may call any method.
#ifndef FERRY_CORE_FRAME_POOL_H_
#define FERRY_CORE_FRAME_POOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>
#include <zmq.hpp>

namespace ferry::core {

class FramePool {
 public:
  static constexpr size_t kMinPooledBytes = size_t{64} << 10;

  // Keeps at most max_bytes of idle buffers; a buffer returned beyond that is freed.
  explicit FramePool(size_t max_bytes);

  // A message of `size` bytes, contents undefined. From kMinPooledBytes on it
  // reuses an idle buffer of at least `size` and at most twice `size` bytes.
  zmq::message_t Take(size_t size);

  // Idle bytes held, and buffers ever allocated (for tests and stats).
  size_t idle_bytes() const;
  int64_t allocated() const;

 private:
  struct Buffer {
    std::unique_ptr<uint8_t[]> data;
    size_t capacity = 0;
  };
  struct State {
    explicit State(size_t max) : max_bytes(max) {}
    const size_t max_bytes;
    mutable std::mutex mu;
    std::vector<Buffer> idle;  // Guarded by mu.
    size_t idle_bytes = 0;     // Guarded by mu.
    int64_t allocated = 0;     // Guarded by mu.
  };
  // What ZeroMQ's free function receives: the buffer and the pool it returns to.
  struct Lease {
    std::shared_ptr<State> state;
    Buffer buffer;
  };
  static void Return(void* data, void* hint);

  std::shared_ptr<State> state_;
};

}  // namespace ferry::core

#endif  // FERRY_CORE_FRAME_POOL_H_
