// A bounded, closable queue between two threads (Reverb's support/queue.h).
//
// Push waits while the queue is full and Pop while it is empty, each up to a
// deadline; Close() wakes every waiter, after which Push fails and Pop drains
// what is left. Any thread may call any method.
#ifndef FERRY_CORE_QUEUE_H_
#define FERRY_CORE_QUEUE_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

namespace ferry::core {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(capacity) {}

  // False if the queue was closed or stayed full until the timeout; `value` is
  // moved from only when the push succeeds, so the caller can retry with it.
  bool Push(T&& value, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!not_full_.wait_for(lock, timeout, [&] { return closed_ || items_.size() < capacity_; }) ||
        closed_) {
      return false;
    }
    items_.push_back(std::move(value));
    not_empty_.notify_one();
    return true;
  }

  // Empty if the queue stayed empty until the timeout, or is closed and drained.
  std::optional<T> Pop(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!not_empty_.wait_for(lock, timeout, [&] { return closed_ || !items_.empty(); }) ||
        items_.empty()) {
      return std::nullopt;
    }
    T value = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return value;
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return items_.size();
  }

  bool closed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<T> items_;  // Guarded by mu_.
  bool closed_ = false;  // Guarded by mu_.
};

}  // namespace ferry::core

#endif  // FERRY_CORE_QUEUE_H_
