#pragma once
// The texts of a chart: its title and the names of its axes.
#include <string>

namespace relpos {

struct ChartLabels {
  std::string title;
  std::string x_label;
  std::string y_label;
};

}  // namespace relpos
