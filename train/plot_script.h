#pragma once
// Figures are drawn by tools/plot.py (matplotlib) from the data files relpos
// writes. Where it cannot run, nothing fails: the command to run later is printed.
#include <ostream>
#include <string>
#include <vector>

#include "train/store/input_output.h"

namespace relpos {

// The python and the plot script run_plot_script runs: inputs that no output may replace.
std::vector<InputFile> plot_script_inputs();

// Runs `<python> <script> args...`, with python $RELPOS_PYTHON or /usr/bin/python3
// and script $RELPOS_PLOT_SCRIPT or the source tree's tools/plot.py. When the
// python or the script is missing, matplotlib is not installed (plot.py exits 3)
// or plot.py fails, writes to `out` why no figure was drawn and the exact command
// to draw them later. Returns whether the figures were drawn.
bool run_plot_script(const std::vector<std::string>& args, std::ostream& out);

}  // namespace relpos
