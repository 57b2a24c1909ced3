// Minimal logging: "2026-11-29T16:40:01.123 [replay-0] message" on stderr.
// Each process names itself once at start-up; lines are written whole, so
// processes sharing a terminal do not interleave mid-line.
#ifndef FERRY_CORE_LOG_H_
#define FERRY_CORE_LOG_H_

#include <string>

namespace ferry::core {

void SetLogName(const std::string& name);
void Log(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Seconds on a monotonic clock, for rates and deadlines.
double NowSeconds();

}  // namespace ferry::core

#endif  // FERRY_CORE_LOG_H_
