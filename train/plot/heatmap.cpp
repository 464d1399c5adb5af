#include "train/plot/heatmap.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "autograd/error.h"
#include "train/plot/axis_ticks.h"
#include "train/plot/bitmap_font.h"
#include "train/plot/chart_style.h"
#include "train/plot/colors.h"
#include "train/plot/image.h"
#include "train/plot/png_file.h"

namespace relpos {

namespace {

constexpr std::size_t kMaxDrawnCells = 1600;
constexpr int kTargetSide = 640;
constexpr int kMaxCell = 48;
constexpr int kMinSide = 160;
constexpr int kBarGap = 24;
constexpr int kBarWidth = 18;
constexpr Rgb kNoValueColor{225, 225, 225};
constexpr Rgb kDarkText{30, 30, 30};

using Matrix = std::vector<std::vector<double>>;

// The finite values' range, and whether they are all integers.
struct ValueRange {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  bool integers = true;
  bool any_missing = false;  // a NaN or infinite cell
  bool empty() const { return min > max; }
  double fraction(double v) const { return max > min ? (v - min) / (max - min) : 0.5; }
};

ValueRange value_range(const Matrix& rows) {
  ValueRange range;
  for (const auto& row : rows)
    for (double v : row) {
      if (!std::isfinite(v)) {
        range.any_missing = true;
        continue;
      }
      range.min = std::min(range.min, v), range.max = std::max(range.max, v);
      range.integers = range.integers && v == std::round(v);
    }
  return range;
}

// The widest an index label up to `largest_index` can be ('1' is narrower than '0').
int digits_width(std::size_t largest_index) {
  return text_width(std::string(std::to_string(largest_index).size(), '0'), kTextScale);
}

// The cell's value (the top-left value of a stride x stride block).
double cell_value(const Matrix& rows, const HeatmapGeometry& g, std::size_t r, std::size_t c) {
  return rows[r * g.stride][c * g.stride];
}

Rgb cell_color(double v, const ValueRange& range) {
  return std::isfinite(v) ? color_map(range.fraction(v)) : kNoValueColor;
}

// The font scale that fits every integer label inside a cell, 0 if none does.
int annotation_scale(const Matrix& rows, const HeatmapGeometry& g, const ValueRange& range) {
  if (!range.integers || range.empty() || g.stride > 1) return 0;
  int widest = 0;
  for (const auto& row : rows)
    for (double v : row)
      if (std::isfinite(v)) widest = std::max(widest, text_width(format_number(v), 1));
  for (int scale : {kTextScale, 1})
    if (widest * scale <= g.cell_width - 3 * scale &&
        kCapHeight * scale <= g.cell_height - 3 * scale)
      return scale;
  return 0;
}

void draw_cells(Image& image, const Matrix& rows, const HeatmapGeometry& g,
                const ValueRange& range) {
  const int scale = annotation_scale(rows, g, range);
  for (std::size_t r = 0; r < g.drawn_rows; ++r)
    for (std::size_t c = 0; c < g.drawn_columns; ++c) {
      const double v = cell_value(rows, g, r, c);
      const Rgb color = cell_color(v, range);
      const int x = g.left + static_cast<int>(c) * g.cell_width;
      const int y = g.top + static_cast<int>(r) * g.cell_height;
      image.fill_rect(x, y, g.cell_width, g.cell_height, color);
      if (scale == 0 || !std::isfinite(v)) continue;
      const Rgb ink = luminance(color) > 0.45 ? kDarkText : kWhite;
      draw_centered_text(image, x + g.cell_width / 2, y + (g.cell_height - kCapHeight * scale) / 2,
                         format_number(v), ink, scale);
    }
}

// Integer index ticks over [0, count - 1], about one per `spacing` px.
std::vector<Tick> index_ticks(std::size_t count, int side, int spacing) {
  if (count == 1) return {{0.0, "0"}};
  const int target = std::clamp(side / spacing, 1, static_cast<int>(count) - 1);
  std::vector<Tick> ticks = linear_ticks(0, static_cast<double>(count - 1), target);
  std::erase_if(ticks, [](const Tick& t) { return t.value != std::round(t.value); });
  return ticks;
}

void draw_axes(Image& image, const HeatmapGeometry& g, std::size_t rows, std::size_t columns,
               const ChartLabels& labels) {
  const int width = static_cast<int>(g.drawn_columns) * g.cell_width;
  const int height = static_cast<int>(g.drawn_rows) * g.cell_height;
  const int bottom = g.top + height;
  for (const Tick& t : index_ticks(columns, width, digits_width(columns - 1) + 30)) {
    const int x = g.left + static_cast<int>((t.value / g.stride + 0.5) * g.cell_width);
    image.fill_rect(x, bottom, 1, kTickLength, kFrameColor);
    draw_centered_text(image, x, bottom + kTickLength + 6, t.label, kTextColor);
  }
  for (const Tick& t : index_ticks(rows, height, 40)) {
    const int y = g.top + static_cast<int>((t.value / g.stride + 0.5) * g.cell_height);
    image.fill_rect(g.left - kTickLength, y, kTickLength, 1, kFrameColor);
    draw_right_aligned_text(image, g.left - kTickLength - 5, y, t.label);
  }
  image.fill_rect(g.left - 1, g.top - 1, width + 2, 1, kFrameColor);
  image.fill_rect(g.left - 1, bottom, width + 2, 1, kFrameColor);
  image.fill_rect(g.left - 1, g.top - 1, 1, height + 2, kFrameColor);
  image.fill_rect(g.left + width, g.top - 1, 1, height + 2, kFrameColor);
  draw_centered_text(image, g.left + width / 2, bottom + kTickLength + 6 + kTextHeight + 16,
                     labels.x_label, kTextColor);
  draw_upward_text(image, kMargin, g.top + height / 2, labels.y_label);
}

// The labels of the color bar: min at the bottom, max at the top, and the nice
// values between them that keep clear of both.
std::vector<Tick> bar_ticks(const ValueRange& range, int height) {
  if (range.empty()) return {};
  if (range.max == range.min) return {{range.min, format_number(range.min)}};
  std::vector<Tick> ticks = {{range.min, format_number(range.min)}};
  const double clearance = (range.max - range.min) * 30.0 / height;
  for (const Tick& t : linear_ticks(range.min, range.max, std::max(height / 90, 2)))
    if (t.value > range.min + clearance && t.value < range.max - clearance &&
        (!range.integers || t.value == std::round(t.value)))
      ticks.push_back({t.value, format_number(t.value)});
  ticks.push_back({range.max, format_number(range.max)});
  return ticks;
}

int bar_label_width(const std::vector<Tick>& ticks) {
  int width = text_width("no value", kTextScale) - 6 - kTickLength;
  for (const Tick& t : ticks) width = std::max(width, text_width(t.label, kTextScale));
  return width;
}

void draw_color_bar(Image& image, int left, int top, int height, const ValueRange& range,
                    const std::vector<Tick>& ticks) {
  for (int y = 0; y < height; ++y) {
    const double t = range.max > range.min ? 1.0 - static_cast<double>(y) / (height - 1) : 0.5;
    image.fill_rect(left, top + y, kBarWidth, 1, color_map(t));
  }
  image.fill_rect(left - 1, top - 1, kBarWidth + 2, 1, kFrameColor);
  image.fill_rect(left - 1, top + height, kBarWidth + 2, 1, kFrameColor);
  image.fill_rect(left - 1, top - 1, 1, height + 2, kFrameColor);
  image.fill_rect(left + kBarWidth, top - 1, 1, height + 2, kFrameColor);
  for (const Tick& t : ticks) {
    const int y =
        range.max > range.min
            ? top + static_cast<int>(std::lround((1.0 - range.fraction(t.value)) * (height - 1)))
            : top + height / 2;
    image.fill_rect(left + kBarWidth, y, kTickLength, 1, kFrameColor);
    image.draw_text(left + kBarWidth + kTickLength + 6, y - kTextHeight / 2, t.label, kTextColor,
                    kTextScale);
  }
  if (!range.any_missing) return;
  const int y = top + height + 14;
  image.fill_rect(left, y, kBarWidth, kTextHeight, kNoValueColor);
  image.draw_text(left + kBarWidth + 6, y, "no value", kTextColor, kTextScale);
}

}  // namespace

HeatmapGeometry heatmap_geometry(std::size_t rows, std::size_t columns) {
  require(rows > 0 && columns > 0, "heatmap of {}x{} values: expected at least 1x1", rows, columns);
  HeatmapGeometry g;
  const std::size_t larger = std::max(rows, columns);
  g.stride = (larger + kMaxDrawnCells - 1) / kMaxDrawnCells;
  g.drawn_rows = (rows + g.stride - 1) / g.stride;
  g.drawn_columns = (columns + g.stride - 1) / g.stride;
  const int cell =
      g.stride > 1 ? 1 : std::clamp(kTargetSide / static_cast<int>(larger), 1, kMaxCell);
  auto stretched = [cell](std::size_t count) {
    const int side = static_cast<int>(count) * cell;
    return side >= kMinSide ? cell
                            : (kMinSide + static_cast<int>(count) - 1) / static_cast<int>(count);
  };
  g.cell_width = stretched(g.drawn_columns);
  g.cell_height = stretched(g.drawn_rows);
  g.left = kMargin + kGlyphRows * kTextScale + 12 + digits_width(rows - 1) + 5 + kTickLength;
  g.top = kTitleBlock;
  return g;
}

void write_heatmap(const std::filesystem::path& path, const std::vector<std::vector<double>>& rows,
                   const ChartLabels& labels) {
  require(!rows.empty() && !rows[0].empty(),
          "heatmap {}: the matrix is empty, expected at least 1x1", path.string());
  for (std::size_t i = 0; i < rows.size(); ++i)
    require(rows[i].size() == rows[0].size(),
            "heatmap {}: row {} has {} values, expected {} as in row 0", path.string(), i,
            rows[i].size(), rows[0].size());
  const HeatmapGeometry g = heatmap_geometry(rows.size(), rows[0].size());
  const ValueRange range = value_range(rows);
  const int plot_width = static_cast<int>(g.drawn_columns) * g.cell_width;
  const int plot_height = static_cast<int>(g.drawn_rows) * g.cell_height;
  const int bar_left = g.left + plot_width + kBarGap;
  const std::vector<Tick> ticks = bar_ticks(range, plot_height);
  const int width = std::max(
      bar_left + kBarWidth + kTickLength + 6 + bar_label_width(ticks) + kMargin,
      text_width(labels.title, 1) + 2 * kMargin);  // room for the title at least at scale 1
  const int height = g.top + plot_height + kTickLength + 6 + 2 * kTextHeight + 16 + 4 + kMargin;

  Image image(width, height, kWhite);
  draw_title(image, labels.title);
  draw_cells(image, rows, g, range);
  draw_axes(image, g, rows.size(), rows[0].size(), labels);
  draw_color_bar(image, bar_left, g.top, plot_height, range, ticks);
  write_png(path, image);
}

}  // namespace relpos
