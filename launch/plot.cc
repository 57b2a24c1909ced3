#include "launch/plot.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

extern char** environ;

namespace ferry::launch {
namespace {

namespace fs = std::filesystem;

// One record's axes and its values by key, as metrics.csv spreads them over rows.
struct Row {
  std::string time, env_steps;
  std::map<std::string, std::string> values;
};

// The rows of `path` grouped back into records (rows of a record share their axes and follow
// each other); a bad line is an error naming the file and line.
Result<std::vector<Row>> ReadMetrics(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return NotFound(path + " not found: is " + fs::path(path).parent_path().string() +
                    " a ferry run directory?");
  }
  std::vector<Row> rows;
  std::string line;
  std::string last_axes;
  for (int number = 1; std::getline(in, line); ++number) {
    if (number == 1) {
      if (line != "time,updates,env_steps,key,value") {
        return InvalidArgument(path + ":1: not a ferry metrics.csv header: '" + line + "'");
      }
      continue;
    }
    std::vector<std::string> cells;
    std::stringstream split(line);
    for (std::string cell; std::getline(split, cell, ',');) cells.push_back(cell);
    if (cells.size() != 5) {
      return InvalidArgument(path + ":" + std::to_string(number) +
                             ": expected 5 comma-separated "
                             "cells (time,updates,env_steps,key,value), got '" +
                             line + "'");
    }
    const std::string axes = cells[0] + "," + cells[1] + "," + cells[2];
    if (rows.empty() || axes != last_axes || rows.back().values.count(cells[3])) {
      rows.push_back({cells[0], cells[2], {}});
      last_axes = axes;
    }
    rows.back().values[cells[3]] = cells[4];
  }
  return rows;
}

// Writes the columns `keys` of the records that have all of them, after time and env_steps.
size_t WriteData(const std::string& path, const std::vector<Row>& rows,
                 const std::vector<std::string>& keys) {
  std::ofstream out(path);
  out << "# time env_steps";
  for (const auto& k : keys) out << " " << k;
  out << "\n";
  size_t written = 0;
  for (const Row& row : rows) {
    bool complete = !row.time.empty() && !row.env_steps.empty();
    for (const auto& k : keys) complete = complete && row.values.count(k);
    if (!complete) continue;
    out << row.time << " " << row.env_steps;
    for (const auto& k : keys) out << " " << row.values.at(k);
    out << "\n";
    ++written;
  }
  return written;
}

std::string Quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

Status RunGnuplot(const std::string& script) {
  std::vector<std::string> args = {"gnuplot", script};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "gnuplot", nullptr, nullptr, argv.data(), environ);
  if (spawned != 0) {
    return Unavailable(std::string("cannot start gnuplot (") + std::strerror(spawned) +
                       "); install it with: apt-get install gnuplot-nox");
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Unavailable("gnuplot failed on " + script + " (its message is above)");
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> Plot(const PlotRequest& request) {
  if (request.run_dirs.empty())
    return InvalidArgument("which run? e.g. ferry plot runs/cartpole-*");
  const std::string out_dir = request.out_dir.empty()
                                  ? (fs::path(request.run_dirs[0]) / "plots").string()
                                  : request.out_dir;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return Unavailable("cannot create " + out_dir + ": " + ec.message());

  // Per run: its name and its two data files.
  struct Series {
    std::string name, eval, throughput;
    size_t eval_points, throughput_points;
  };
  std::vector<Series> series;
  for (const std::string& dir : request.run_dirs) {
    auto rows = ReadMetrics((fs::path(dir) / "metrics.csv").string());
    if (!rows.ok()) return rows.status();
    std::string name = fs::path(dir).lexically_normal().filename().string();
    if (name.empty()) name = fs::path(dir).lexically_normal().parent_path().filename().string();
    Series s;
    s.name = name;
    s.eval =
        (fs::path(out_dir) / (std::to_string(series.size()) + "." + name + ".eval.dat")).string();
    s.throughput =
        (fs::path(out_dir) / (std::to_string(series.size()) + "." + name + ".throughput.dat"))
            .string();
    s.eval_points = WriteData(s.eval, *rows, {"eval_return"});
    s.throughput_points = WriteData(s.throughput, *rows, {"env_steps_per_s", "updates_per_s"});
    series.push_back(s);
  }

  const std::string script = (fs::path(out_dir) / "plot.gp").string();
  std::ofstream gp(script);
  gp << "set terminal pngcairo size 900,560 noenhanced\nset grid\nset key bottom right\n";
  const auto plot = [&](const std::string& png, const std::string& title, const std::string& x,
                        const std::string& y, bool throughput) {
    gp << "set output " << Quoted((fs::path(out_dir) / png).string()) << "\n";
    gp << "set title " << Quoted(title) << "\nset xlabel " << Quoted(x) << "\nset ylabel "
       << Quoted(y) << "\n";
    std::ostringstream curves;
    for (const Series& s : series) {
      const size_t points = throughput ? s.throughput_points : s.eval_points;
      if (points == 0) continue;
      if (curves.tellp() > 0) curves << ", ";
      if (throughput) {
        curves << Quoted(s.throughput) << " using 1:3 with lines title "
               << Quoted(s.name + " env steps/s") << ", " << Quoted(s.throughput)
               << " using 1:4 with lines title " << Quoted(s.name + " updates/s");
      } else {
        curves << Quoted(s.eval) << " using " << (x == "env steps" ? "2" : "1")
               << ":3 with linespoints title " << Quoted(s.name);
      }
    }
    if (curves.tellp() > 0) {
      gp << "plot " << curves.str() << "\n";
    } else {
      // A run that ended before its first record of this kind: an empty frame, since gnuplot
      // cannot autoscale a plot without points.
      gp << "set xrange [0:1]\nset yrange [0:1]\nplot NaN title 'no data yet'\nset autoscale\n";
    }
  };
  plot("return_vs_env_steps.png", "greedy evaluation return", "env steps", "mean return", false);
  plot("return_vs_time.png", "greedy evaluation return", "learner wall-clock (s)", "mean return",
       false);
  plot("throughput.png", "throughput", "learner wall-clock (s)", "per second", true);
  gp.close();
  if (!gp) return Unavailable("cannot write " + script);
  FERRY_RETURN_IF_ERROR(RunGnuplot(script));
  std::vector<std::string> pngs;
  for (const char* png : {"return_vs_env_steps.png", "return_vs_time.png", "throughput.png"}) {
    pngs.push_back((fs::path(out_dir) / png).string());
  }
  return pngs;
}

}  // namespace ferry::launch
