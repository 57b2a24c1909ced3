#include "core/frame_pool.h"

#include <doctest/doctest.h>

#include <cstring>
#include <thread>

namespace ferry::core {
namespace {

constexpr size_t kBig = FramePool::kMinPooledBytes * 4;

TEST_CASE("a frame returned by ZeroMQ is handed out again, mapped and the same size") {
  FramePool pool(size_t{16} << 20);
  const void* first_data = nullptr;
  {
    zmq::message_t first = pool.Take(kBig);
    CHECK(first.size() == kBig);
    std::memset(first.data(), 7, first.size());
    first_data = first.data();
    CHECK(pool.idle_bytes() == 0);
  }
  CHECK(pool.idle_bytes() == kBig);
  zmq::message_t again = pool.Take(kBig - 100);
  CHECK(again.data() == first_data);
  CHECK(again.size() == kBig - 100);
  CHECK(pool.allocated() == 1);
  // Too large for the idle buffer, and one less than half its size, both get new buffers.
  zmq::message_t larger = pool.Take(kBig + 1);
  zmq::message_t smaller = pool.Take(FramePool::kMinPooledBytes);
  CHECK(pool.allocated() == 3);
}

TEST_CASE("small frames are plain messages and never pooled") {
  FramePool pool(size_t{16} << 20);
  {
    zmq::message_t small = pool.Take(100);
    CHECK(small.size() == 100);
  }
  CHECK(pool.idle_bytes() == 0);
  CHECK(pool.allocated() == 0);
}

TEST_CASE("idle buffers beyond the limit are freed") {
  FramePool pool(kBig * 2);
  { zmq::message_t a = pool.Take(kBig), b = pool.Take(kBig), c = pool.Take(kBig); }
  CHECK(pool.idle_bytes() == kBig * 2);
  CHECK(pool.allocated() == 3);
}

TEST_CASE("a frame sent over ZeroMQ returns from its I/O thread, also after the pool is gone") {
  zmq::context_t context(1);
  zmq::socket_t push(context, zmq::socket_type::push), pull(context, zmq::socket_type::pull);
  push.set(zmq::sockopt::linger, 0);
  pull.set(zmq::sockopt::rcvtimeo, 2000);
  pull.bind("tcp://127.0.0.1:*");
  push.connect(pull.get(zmq::sockopt::last_endpoint));
  auto pool = std::make_unique<FramePool>(size_t{16} << 20);
  zmq::message_t frame = pool->Take(kBig);
  std::memset(frame.data(), 3, kBig);
  REQUIRE(push.send(std::move(frame), zmq::send_flags::none));
  pool.reset();  // The message in flight keeps the pool's state alive.
  zmq::message_t received;
  REQUIRE(pull.recv(received));
  CHECK(received.size() == kBig);
  CHECK(static_cast<const uint8_t*>(received.data())[kBig - 1] == 3);
}

TEST_CASE("frames taken and returned from many threads are accounted exactly") {
  FramePool pool(size_t{64} << 20);
  std::vector<std::jthread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool] {
      for (int i = 0; i < 200; ++i) {
        zmq::message_t m = pool.Take(kBig);
        static_cast<uint8_t*>(m.data())[0] = 1;
      }
    });
  }
  threads.clear();
  CHECK(pool.allocated() >= 1);
  CHECK(pool.allocated() <= 4);
  CHECK(pool.idle_bytes() == static_cast<size_t>(pool.allocated()) * kBig);
}

}  // namespace
}  // namespace ferry::core
