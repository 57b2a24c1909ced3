// Status and Result<T>: how ferry's modules report failure at their edges.
//
// A Status is either OK or carries a code and a message a user can act on
// (what went wrong, where: config key path, endpoint or file, and what to do).
// Result<T> holds either a value or a non-OK Status. Library exceptions are
// caught in the thin adapters that call those libraries and turned into these.
#ifndef FERRY_CORE_STATUS_H_
#define FERRY_CORE_STATUS_H_

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace ferry {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kDataLoss,
  kUnavailable,
  kDeadlineExceeded,
  kResourceExhausted,
  kInternal,
};

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// The exit status of a process that cannot run with its configuration (sysexits' EX_CONFIG):
// `ferry run` stops the run instead of restarting that process into the same error.
inline constexpr int kConfigErrorExit = 78;
// A role's exit status for the error that ended it: kConfigErrorExit for an
// InvalidArgument (a configuration it cannot run with), otherwise 1.
int ExitCodeFor(const Status& status);

template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

namespace internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* expr);
}  // namespace internal

}  // namespace ferry

// Invariants that only a bug can break: abort loudly with the location.
#define FERRY_CHECK(cond)                                                   \
  do {                                                                      \
    if (!(cond)) ::ferry::internal::CheckFailed(__FILE__, __LINE__, #cond); \
  } while (0)

// Returns early from the calling function when `expr` yields a non-OK Status.
#define FERRY_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::ferry::Status ferry_status_ = (expr);        \
    if (!ferry_status_.ok()) return ferry_status_; \
  } while (0)

#endif  // FERRY_CORE_STATUS_H_
