// What every benchmark in bench/ shares: JSON lines, timed windows, and the
// alternation that keeps a figure and its baseline under the same conditions.
//
//   Alternate(rounds, {candidate, baseline, ...}) -> each timed once per round
//                                                 -> median (and spread) per candidate
//   PairedRatio(candidate, baseline, rate)        -> median of the per-round ratios
//
// A timed window counts items against two clocks: wall time, and CPU time (the
// calling thread's for single-threaded work, the whole process's for pipelines
// of threads). On a shared machine the wall rate drops with the share of the
// cores a benchmark gets; CPU time per item is what the code itself costs.
// Header-only, since each bench/*.cc builds into its own binary.
#ifndef FERRY_BENCH_BENCH_H_
#define FERRY_BENCH_BENCH_H_

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "core/log.h"

namespace ferry::bench {

// One JSON object on one line, fields in the order added.
class JsonLine {
 public:
  explicit JsonLine(const std::string& bench) { Add("bench", bench); }

  JsonLine& Add(const std::string& key, const std::string& value) {
    Field(key) << '"';
    for (char c : value) out_ << (c == '"' || c == '\\' ? '\'' : c);
    out_ << '"';
    return *this;
  }
  JsonLine& Add(const std::string& key, const char* value) { return Add(key, std::string(value)); }
  JsonLine& Add(const std::string& key, bool value) {
    Field(key) << (value ? "true" : "false");
    return *this;
  }
  template <std::integral T>
  JsonLine& Add(const std::string& key, T value) {
    Field(key) << value;
    return *this;
  }
  JsonLine& Add(const std::string& key, double value) {
    char text[32];
    if (!std::isfinite(value)) {
      std::snprintf(text, sizeof(text), "null");
    } else if (std::fabs(value) >= 100) {
      std::snprintf(text, sizeof(text), "%.0f", value);
    } else {
      std::snprintf(text, sizeof(text), "%.4g", value);
    }
    Field(key) << text;
    return *this;
  }
  void Print() { std::cout << out_.str() << "}" << std::endl; }

 private:
  std::ostream& Field(const std::string& key) {
    out_ << (out_.tellp() == 0 ? "{" : ", ") << '"' << key << "\": ";
    return out_;
  }
  std::ostringstream out_;
};

inline double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

inline double ProcessCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

inline double Load1() {
  double load[1] = {-1};
  getloadavg(load, 1);
  return load[0];
}

inline void Sleep(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// Keeps the compiler from dropping stores nobody reads.
inline void KeepAlive(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

// One timed window: items per wall-clock second and per CPU second.
struct Window {
  double wall_rate = 0;
  double cpu_rate = 0;
};

struct Spread {
  double median = 0;
  double min = 0;
  double max = 0;
};

// The fields every timed figure ends with: its spread over the rounds, how many rounds of how
// long a window, and the load average when it was measured.
inline void AddWindowSummary(JsonLine& line, const Spread& spread, int rounds, double window_s) {
  line.Add("min", spread.min)
      .Add("max", spread.max)
      .Add("rounds", rounds)
      .Add("window_s", window_s)
      .Add("load1", Load1());
}

inline Spread Summarize(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const double median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return {median, values.front(), values.back()};
}

struct Figure {
  Spread wall;
  Spread cpu;
  std::vector<Window> windows;  // One per round, in order.
};

// Times every candidate once per round, `rounds` rounds, so that load from
// other processes falls on all of them alike.
inline std::vector<Figure> Alternate(int rounds,
                                     const std::vector<std::function<Window()>>& candidates) {
  std::vector<std::vector<double>> wall(candidates.size()), cpu(candidates.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t c = 0; c < candidates.size(); ++c) {
      const Window w = candidates[c]();
      wall[c].push_back(w.wall_rate);
      cpu[c].push_back(w.cpu_rate);
    }
  }
  std::vector<Figure> figures;
  for (size_t c = 0; c < candidates.size(); ++c) {
    Figure f{Summarize(wall[c]), Summarize(cpu[c]), {}};
    for (int r = 0; r < rounds; ++r) f.windows.push_back({wall[c][r], cpu[c][r]});
    figures.push_back(std::move(f));
  }
  return figures;
}

// a / b round by round for one rate (&Window::wall_rate or &Window::cpu_rate).
// The two windows of a round lie seconds apart, so a change of load during the
// run mostly cancels out of each ratio; their median is the ratio to quote. A
// round whose baseline did nothing in its window says nothing and is skipped;
// with no round left every field is NaN.
inline Spread PairedRatio(const Figure& a, const Figure& b, double Window::*rate) {
  std::vector<double> ratios;
  for (size_t r = 0; r < a.windows.size() && r < b.windows.size(); ++r) {
    if (b.windows[r].*rate > 0) ratios.push_back(a.windows[r].*rate / b.windows[r].*rate);
  }
  if (ratios.empty()) return {NAN, NAN, NAN};
  return Summarize(std::move(ratios));
}

// Calls `op`, which returns how many items it handled, over and over on this
// thread for `seconds`; its CPU rate counts this thread's CPU time.
inline Window TimeOnThisThread(double seconds, const std::function<int64_t()>& op) {
  int64_t items = 0;
  const double start = core::NowSeconds();
  const double cpu_start = ThreadCpuSeconds();
  double elapsed = 0;
  do {
    items += op();
    elapsed = core::NowSeconds() - start;
  } while (elapsed < seconds);
  const double n = static_cast<double>(items);
  return {n / elapsed, n / (ThreadCpuSeconds() - cpu_start)};
}

// The machine a run measured, and how loaded it was when the run started.
inline void PrintMachineLine(bool quick) {
  std::string cpu = "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  utsname uts{};
  uname(&uts);
  const auto [major, minor, patch] = zmq::version();
  double load[3] = {-1, -1, -1};
  getloadavg(load, 3);
  JsonLine("machine")
      .Add("cpu", cpu)
      .Add("cores", static_cast<int>(std::thread::hardware_concurrency()))
      .Add("mem_gib", static_cast<double>(sysconf(_SC_PHYS_PAGES)) *
                          static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 30))
      .Add("kernel", uts.release)
#ifdef __clang__
      .Add("compiler", "clang " __clang_version__)
#else
      .Add("compiler", "g++ " __VERSION__)
#endif
      .Add("libzmq",
           std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch))
      .Add("quick", quick)
      .Add("load1", load[0])
      .Add("load5", load[1])
      .Add("load15", load[2])
      .Print();
}

}  // namespace ferry::bench

#endif  // FERRY_BENCH_BENCH_H_
