#pragma once
// Line charts as PNG files: validation-loss curves, length-extrapolation curves.
#include <filesystem>
#include <string>
#include <vector>

#include "train/plot/chart_labels.h"

namespace relpos {

struct Series {
  std::string name;
  std::vector<double> x, y;
};

inline constexpr int kLineChartWidth = 900;
inline constexpr int kLineChartHeight = 560;

// Draws the series (colors: series_color(0), (1), ...) with nice ticks, grid
// lines, markers where points are at least ~10 px apart, and a legend in the
// emptiest corner, then writes the PNG atomically (write_png). Points that cannot
// be drawn (NaN, inf, or x <= 0 on a log x axis) are skipped and break the line.
// A series whose x and y differ in length is a UsageError.
void write_line_chart(const std::filesystem::path& path, const std::vector<Series>& series,
                      const ChartLabels& labels, bool log_x = false);

}  // namespace relpos
