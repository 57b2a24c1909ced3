#include "core/frame_pool.h"

#include <utility>

namespace ferry::core {

FramePool::FramePool(size_t max_bytes) : state_(std::make_shared<State>(max_bytes)) {}

zmq::message_t FramePool::Take(size_t size) {
  if (size < kMinPooledBytes) return zmq::message_t(size);
  auto lease = std::make_unique<Lease>();
  lease->state = state_;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto& idle = state_->idle;
    for (size_t i = 0; i < idle.size(); ++i) {
      if (idle[i].capacity < size || idle[i].capacity / 2 > size) continue;
      lease->buffer = std::move(idle[i]);
      idle[i] = std::move(idle.back());
      idle.pop_back();
      state_->idle_bytes -= lease->buffer.capacity;
      break;
    }
    if (!lease->buffer.data) ++state_->allocated;
  }
  if (!lease->buffer.data) {
    lease->buffer.data.reset(new uint8_t[size]);
    lease->buffer.capacity = size;
  }
  void* data = lease->buffer.data.get();
  return zmq::message_t(data, size, &FramePool::Return, lease.release());
}

void FramePool::Return(void* /*data*/, void* hint) {
  std::unique_ptr<Lease> lease(static_cast<Lease*>(hint));
  State& state = *lease->state;
  std::lock_guard<std::mutex> lock(state.mu);
  if (state.idle_bytes + lease->buffer.capacity > state.max_bytes) return;  // Freed with lease.
  state.idle_bytes += lease->buffer.capacity;
  state.idle.push_back(std::move(lease->buffer));
}

size_t FramePool::idle_bytes() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->idle_bytes;
}

int64_t FramePool::allocated() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->allocated;
}

}  // namespace ferry::core
