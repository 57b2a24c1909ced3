#include "core/log.h"

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace ferry::core {
namespace {
std::mutex& LogMutex() {
  static std::mutex mu;
  return mu;
}
std::string& LogName() {
  static std::string name = "ferry";
  return name;
}
}  // namespace

void SetLogName(const std::string& name) {
  std::lock_guard<std::mutex> lock(LogMutex());
  LogName() = name;
}

void Log(const char* format, ...) {
  char text[2048];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const int millis = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
  std::lock_guard<std::mutex> lock(LogMutex());
  std::fprintf(stderr, "%s.%03d [%s] %s\n", stamp, millis, LogName().c_str(), text);
  std::fflush(stderr);
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace ferry::core
