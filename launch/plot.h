// `ferry plot RUN_DIR...`: PNG learning curves of one or more runs, drawn by gnuplot.
//
//   RUN_DIR/metrics.csv (core/metrics.h) -> OUT/<run>.eval.dat, <run>.throughput.dat
//   -> OUT/plot.gp -> gnuplot -> OUT/return_vs_env_steps.png, return_vs_time.png,
//      throughput.png
//
// OUT defaults to the first run's plots/. Every run is one curve, named by its directory, so
// the seeds of an experiment overlay in one figure. The data files and the script stay beside
// the PNGs, for anyone who wants to restyle them.
#ifndef FERRY_LAUNCH_PLOT_H_
#define FERRY_LAUNCH_PLOT_H_

#include <string>
#include <vector>

#include "core/status.h"

namespace ferry::launch {

struct PlotRequest {
  std::vector<std::string> run_dirs;
  std::string out_dir;  // Empty: <run_dirs[0]>/plots.
};

// The PNG files written.
Result<std::vector<std::string>> Plot(const PlotRequest& request);

}  // namespace ferry::launch

#endif  // FERRY_LAUNCH_PLOT_H_
