// ferry plot turns run directories' metrics.csv into PNG curves, and names bad input clearly.
#include "launch/plot.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/metrics.h"

namespace ferry::launch {
namespace {

namespace fs = std::filesystem;

fs::path TempDir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("ferry_plot_test_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A run directory whose learner wrote `evals` evaluations and as many progress records.
void FakeRun(const fs::path& dir, int evals) {
  fs::create_directories(dir);
  core::MetricsWriter writer;
  REQUIRE(writer.Open(dir.string()).ok());
  for (int i = 1; i <= evals; ++i) {
    writer.Write(core::MetricsRecord()
                     .Add("time", i * 1.0)
                     .Add("updates", i * 100)
                     .Add("env_steps", i * 1000)
                     .Add("eval_return", i * 10.0));
    writer.Write(core::MetricsRecord()
                     .Add("time", i + 0.5)
                     .Add("updates", i * 100 + 50)
                     .Add("env_steps", i * 1000 + 500)
                     .Add("updates_per_s", 600)
                     .Add("env_steps_per_s", 1200));
  }
}

std::string Read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST_CASE("two runs overlay in three PNGs, with their data beside them") {
  const fs::path root = TempDir("two");
  FakeRun(root / "seed-0", 3);
  FakeRun(root / "seed-1", 2);
  PlotRequest request;
  request.run_dirs = {(root / "seed-0").string(), (root / "seed-1").string()};
  request.out_dir = (root / "out").string();
  auto pngs = Plot(request);
  REQUIRE_MESSAGE(pngs.ok(), pngs.status().message());
  REQUIRE(pngs->size() == 3);
  for (const std::string& png : *pngs) {
    CAPTURE(png);
    const std::string bytes = Read(png);
    REQUIRE(bytes.size() > 1000);
    CHECK(bytes.substr(1, 3) == "PNG");
  }
  CHECK(Read(root / "out" / "0.seed-0.eval.dat") ==
        "# time env_steps eval_return\n1 1000 10\n2 2000 20\n3 3000 30\n");
  CHECK(Read(root / "out" / "1.seed-1.throughput.dat") ==
        "# time env_steps env_steps_per_s updates_per_s\n1.5 1500 1200 600\n2.5 2500 1200 600\n");
  fs::remove_all(root);
}

TEST_CASE("the default output is the first run's plots/ directory") {
  const fs::path root = TempDir("default");
  FakeRun(root / "run", 1);
  auto pngs = Plot({{(root / "run").string()}, ""});
  REQUIRE_MESSAGE(pngs.ok(), pngs.status().message());
  CHECK(fs::exists(root / "run" / "plots" / "return_vs_env_steps.png"));
  fs::remove_all(root);
}

TEST_CASE("a run that ended before its first progress record still plots") {
  const fs::path root = TempDir("short");
  fs::create_directories(root / "run");
  {
    core::MetricsWriter writer;
    REQUIRE(writer.Open((root / "run").string()).ok());
    writer.Write(core::MetricsRecord()
                     .Add("time", 1.0)
                     .Add("updates", 100)
                     .Add("env_steps", 1000)
                     .Add("eval_return", 10.0));
  }
  auto pngs = Plot({{(root / "run").string()}, (root / "out").string()});
  REQUIRE_MESSAGE(pngs.ok(), pngs.status().message());
  for (const std::string& png : *pngs) {
    CAPTURE(png);
    CHECK(Read(png).substr(1, 3) == "PNG");
  }
  CHECK(Read(root / "out" / "0.run.throughput.dat") ==
        "# time env_steps env_steps_per_s updates_per_s\n");
  fs::remove_all(root);
}

TEST_CASE("a directory without metrics and a damaged metrics.csv are named") {
  const fs::path root = TempDir("bad");
  auto missing = Plot({{(root / "nothing").string()}, (root / "out").string()});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find((root / "nothing" / "metrics.csv").string()) !=
        std::string::npos);

  FakeRun(root / "run", 2);
  // Header, then 3 rows per evaluation: the appended line is line 8.
  std::ofstream(root / "run" / "metrics.csv", std::ios::app) << "1,2,3\n";
  auto damaged = Plot({{(root / "run").string()}, (root / "out").string()});
  REQUIRE_FALSE(damaged.ok());
  CHECK(damaged.status().message().find("metrics.csv:8: expected 5") != std::string::npos);
  fs::remove_all(root);
}

}  // namespace
}  // namespace ferry::launch
