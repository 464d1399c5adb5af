#pragma once
// Heatmaps as PNG files: one cell per value of a matrix, e.g. T5 bucket ids or
// Shaw indices over (query i, key j).
#include <cstddef>
#include <filesystem>
#include <vector>

#include "train/plot/chart_labels.h"

namespace relpos {

// Where the cells land in the image.
struct HeatmapGeometry {
  int left = 0, top = 0;                // the top-left pixel of cell (0, 0)
  int cell_width = 1, cell_height = 1;  // pixels per drawn cell
  std::size_t stride = 1;               // past 1600 rows or columns, every stride-th is drawn
  std::size_t drawn_rows = 0, drawn_columns = 0;
};

// Square cells of 1-48 px, sized so the larger side spans about 640 px (at most
// 1600 cells); a side under 160 px is stretched to 160.
HeatmapGeometry heatmap_geometry(std::size_t rows, std::size_t columns);

// rows[i][j] is drawn at row i (top to bottom), column j (left to right),
// colored by color_map((v - min) / (max - min)) over the finite values; NaN and
// inf cells are light gray ("no value", e.g. masked positions). Integer-valued
// cells wide enough get their value written in them. A color bar shows min and
// max. The x axis is labels.x_label (e.g. "key j"), the y axis labels.y_label
// (e.g. "query i"). An empty or ragged matrix is a UsageError. The PNG is written
// atomically (write_png).
void write_heatmap(const std::filesystem::path& path, const std::vector<std::vector<double>>& rows,
                   const ChartLabels& labels);

}  // namespace relpos
