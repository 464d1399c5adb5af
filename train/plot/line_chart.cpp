#include "train/plot/line_chart.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "autograd/error.h"
#include "train/plot/axis_ticks.h"
#include "train/plot/bitmap_font.h"
#include "train/plot/chart_style.h"
#include "train/plot/colors.h"
#include "train/plot/image.h"
#include "train/plot/png_file.h"

namespace relpos {

namespace {

constexpr double kLineThickness = 2.0;
constexpr double kMarkerRadius = 3.5;
constexpr double kMarkerMinSpacing = 10.0;  // px between points, on average, to draw markers
constexpr double kPadding = 0.04;           // of the data span, on each side of the plot
constexpr int kLegendRow = 22;
constexpr int kLegendSwatch = 28;

// An axis over [low, high] in data units, linear or log10.
struct Axis {
  double low = 0, high = 1;
  bool log = false;
  std::vector<Tick> ticks;

  double fraction(double v) const {
    if (log) return (std::log10(v) - std::log10(low)) / (std::log10(high) - std::log10(low));
    return (v - low) / (high - low);
  }
};

// The plot area in pixels; data maps onto pixel centres within it.
struct Frame {
  int left = 0, top = 0, width = 0, height = 0;
  int x_pixel(const Axis& a, double v) const {
    return left + static_cast<int>(std::lround(a.fraction(v) * (width - 1)));
  }
  int y_pixel(const Axis& a, double v) const {
    return top + height - 1 - static_cast<int>(std::lround(a.fraction(v) * (height - 1)));
  }
  Point point(const Axis& x, const Axis& y, double vx, double vy) const {
    return {left + 0.5 + x.fraction(vx) * (width - 1),
            top + height - 0.5 - y.fraction(vy) * (height - 1)};
  }
};

bool drawable(double x, double y, bool log_x) {
  return std::isfinite(x) && std::isfinite(y) && (!log_x || x > 0);
}

struct Extent {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  bool empty() const { return min > max; }
  void add(double v) { min = std::min(min, v), max = std::max(max, v); }
};

// The axis range around `extent`: padded, widened around a single value, a
// default when there is no data.
Axis axis_over(Extent extent, bool log) {
  Axis axis;
  axis.log = log;
  if (extent.empty()) {
    axis.low = log ? 1 : 0, axis.high = log ? 10 : 1;
    return axis;
  }
  double low = log ? std::log10(extent.min) : extent.min;
  double high = log ? std::log10(extent.max) : extent.max;
  const double span = high - low;
  if (span <= 1e-9 * std::max(std::abs(low), std::abs(high))) {
    const double half = log ? std::log10(2.0) : (low == 0 ? 1.0 : std::abs(low) * 0.1);
    low -= half, high += half;
  } else {
    low -= kPadding * span, high += kPadding * span;
  }
  axis.low = log ? std::pow(10.0, low) : low;
  axis.high = log ? std::pow(10.0, high) : high;
  return axis;
}

bool all_powers_of_two(const std::vector<Series>& series) {
  for (const Series& s : series)
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!drawable(s.x[i], s.y[i], true)) continue;
      int exponent = 0;
      if (std::frexp(s.x[i], &exponent) != 0.5) return false;
    }
  return true;
}

std::vector<Tick> ticks_for(const Axis& axis, int target, bool powers_of_two) {
  return axis.log ? log_ticks(axis.low, axis.high, target, powers_of_two)
                  : linear_ticks(axis.low, axis.high, target);
}

// The most x ticks whose labels keep 20 px apart.
std::vector<Tick> x_ticks(const Axis& axis, const Frame& frame, bool powers_of_two) {
  for (int target = std::max(frame.width / 70, 2); target > 2; --target) {
    std::vector<Tick> ticks = ticks_for(axis, target, powers_of_two);
    bool apart = true;
    for (std::size_t i = 1; i < ticks.size(); ++i) {
      const int gap = frame.x_pixel(axis, ticks[i].value) - frame.x_pixel(axis, ticks[i - 1].value);
      const int half_widths =
          (text_width(ticks[i].label, kTextScale) + text_width(ticks[i - 1].label, kTextScale)) / 2;
      apart = apart && gap >= half_widths + 20;
    }
    if (apart) return ticks;
  }
  return ticks_for(axis, 2, powers_of_two);
}

void draw_grid_and_axes(Image& image, const Frame& f, const Axis& x, const Axis& y) {
  for (const Tick& t : x.ticks) {
    const int px = f.x_pixel(x, t.value);
    image.fill_rect(px, f.top, 1, f.height, kGridColor);
    image.fill_rect(px, f.top + f.height, 1, kTickLength, kFrameColor);
    draw_centered_text(image, px, f.top + f.height + kTickLength + 6, t.label, kTextColor);
  }
  for (const Tick& t : y.ticks) {
    const int py = f.y_pixel(y, t.value);
    image.fill_rect(f.left, py, f.width, 1, kGridColor);
    image.fill_rect(f.left - kTickLength, py, kTickLength, 1, kFrameColor);
    draw_right_aligned_text(image, f.left - kTickLength - 5, py, t.label);
  }
  image.fill_rect(f.left - 1, f.top - 1, f.width + 2, 1, kFrameColor);
  image.fill_rect(f.left - 1, f.top + f.height, f.width + 2, 1, kFrameColor);
  image.fill_rect(f.left - 1, f.top - 1, 1, f.height + 2, kFrameColor);
  image.fill_rect(f.left + f.width, f.top - 1, 1, f.height + 2, kFrameColor);
}

void draw_marker(Image& image, Point p, Rgb color) {
  image.fill_circle(p, kMarkerRadius + 1.2, kWhite);
  image.fill_circle(p, kMarkerRadius, color);
}

// The drawable points of `s` in pixels, split where a point cannot be drawn.
std::vector<std::vector<Point>> pixel_runs(const Series& s, const Frame& f, const Axis& x,
                                           const Axis& y) {
  std::vector<std::vector<Point>> runs(1);
  for (std::size_t i = 0; i < s.x.size(); ++i) {
    if (drawable(s.x[i], s.y[i], x.log))
      runs.back().push_back(f.point(x, y, s.x[i], s.y[i]));
    else if (!runs.back().empty())
      runs.emplace_back();
  }
  if (runs.back().empty()) runs.pop_back();
  return runs;
}

// Markers where the series' points are on average at least kMarkerMinSpacing apart.
bool draws_markers(const std::vector<std::vector<Point>>& runs, int plot_width) {
  std::size_t count = 0;
  for (const auto& run : runs) count += run.size();
  return count > 0 &&
         static_cast<double>(plot_width) / std::max<std::size_t>(count - 1, 1) >= kMarkerMinSpacing;
}

void draw_series(Image& image, const std::vector<std::vector<Point>>& runs, Rgb color,
                 bool markers) {
  for (const auto& run : runs) image.draw_polyline(run, color, kLineThickness);
  if (!markers) return;
  for (const auto& run : runs)
    for (const Point& p : run) draw_marker(image, p, color);
}

struct Box {
  int left, top, width, height;
  bool contains(Point p) const {
    return p.x >= left && p.x < left + width && p.y >= top && p.y < top + height;
  }
};

// How many points sampled every few pixels along the runs fall in `box`.
std::size_t ink_in(const Box& box, const std::vector<std::vector<std::vector<Point>>>& all_runs) {
  std::size_t count = 0;
  for (const auto& runs : all_runs)
    for (const auto& run : runs)
      for (std::size_t i = 0; i < run.size(); ++i) {
        count += box.contains(run[i]);
        if (i + 1 == run.size()) continue;
        const Point a = run[i], b = run[i + 1];
        const int steps = static_cast<int>(std::hypot(b.x - a.x, b.y - a.y) / 4);
        for (int k = 1; k < steps; ++k)
          count += box.contains({a.x + (b.x - a.x) * k / steps, a.y + (b.y - a.y) * k / steps});
      }
  return count;
}

// The legend in the plot corner that covers the fewest drawn points.
void draw_legend(Image& image, const Frame& f, const std::vector<Series>& series,
                 const std::vector<std::vector<std::vector<Point>>>& all_runs,
                 const std::vector<bool>& markers) {
  if (series.empty()) return;
  int name_width = 0;
  for (const Series& s : series) name_width = std::max(name_width, text_width(s.name, kTextScale));
  const int width = 8 + kLegendSwatch + 8 + name_width + 10;
  const int height = 6 + kLegendRow * static_cast<int>(series.size());
  const int inset = 10;
  const int right = f.left + f.width - inset - width, bottom = f.top + f.height - inset - height;
  const std::array<Box, 4> corners = {{{right, f.top + inset, width, height},
                                       {f.left + inset, f.top + inset, width, height},
                                       {right, bottom, width, height},
                                       {f.left + inset, bottom, width, height}}};
  Box best = corners[0];
  std::size_t best_ink = ink_in(best, all_runs);
  for (const Box& box : corners) {
    const std::size_t ink = ink_in(box, all_runs);
    if (ink < best_ink) best = box, best_ink = ink;
  }
  image.fill_rect(best.left, best.top, best.width, best.height, kWhite, 0.9);
  image.fill_rect(best.left, best.top, best.width, 1, kFrameColor);
  image.fill_rect(best.left, best.top + best.height - 1, best.width, 1, kFrameColor);
  image.fill_rect(best.left, best.top, 1, best.height, kFrameColor);
  image.fill_rect(best.left + best.width - 1, best.top, 1, best.height, kFrameColor);
  for (std::size_t i = 0; i < series.size(); ++i) {
    const int center_y = best.top + 3 + kLegendRow * static_cast<int>(i) + kLegendRow / 2;
    const double swatch_left = best.left + 8;
    const Rgb color = series_color(i);
    image.draw_line({swatch_left, center_y + 0.5}, {swatch_left + kLegendSwatch, center_y + 0.5},
                    color, kLineThickness);
    if (markers[i]) draw_marker(image, {swatch_left + kLegendSwatch / 2.0, center_y + 0.5}, color);
    image.draw_text(best.left + 8 + kLegendSwatch + 8, center_y - kTextHeight / 2, series[i].name,
                    kTextColor, kTextScale);
  }
}

Image draw_line_chart(const std::vector<Series>& series, const ChartLabels& labels, bool log_x) {
  Extent x_extent, y_extent;
  for (const Series& s : series)
    for (std::size_t i = 0; i < s.x.size(); ++i)
      if (drawable(s.x[i], s.y[i], log_x)) x_extent.add(s.x[i]), y_extent.add(s.y[i]);
  Axis x = axis_over(x_extent, log_x), y = axis_over(y_extent, false);

  Frame f;
  f.top = labels.title.empty() ? 20 : kTitleBlock;
  const int below = kTickLength + 6 + kTextHeight + (labels.x_label.empty() ? 14 : 50);
  f.height = kLineChartHeight - f.top - below;
  y.ticks = linear_ticks(y.low, y.high, std::max(f.height / 50, 2));
  int y_label_width = 0;
  for (const Tick& t : y.ticks)
    y_label_width = std::max(y_label_width, text_width(t.label, kTextScale));
  const int y_name_width = labels.y_label.empty() ? 0 : kGlyphRows * kTextScale + 12;
  f.left = kMargin + y_name_width + y_label_width + 5 + kTickLength;
  f.width = kLineChartWidth - f.left - 24;
  x.ticks = x_ticks(x, f, log_x && all_powers_of_two(series));

  Image image(kLineChartWidth, kLineChartHeight, kWhite);
  draw_title(image, labels.title);
  draw_grid_and_axes(image, f, x, y);
  if (!labels.x_label.empty())
    draw_centered_text(image, f.left + f.width / 2, kLineChartHeight - kMargin - kTextHeight - 4,
                       labels.x_label, kTextColor);
  if (!labels.y_label.empty())
    draw_upward_text(image, kMargin, f.top + f.height / 2, labels.y_label);

  std::vector<std::vector<std::vector<Point>>> all_runs;
  for (const Series& s : series) all_runs.push_back(pixel_runs(s, f, x, y));
  std::vector<bool> markers;
  for (const auto& runs : all_runs) markers.push_back(draws_markers(runs, f.width));
  for (std::size_t i = 0; i < series.size(); ++i)
    draw_series(image, all_runs[i], series_color(i), markers[i]);
  if (x_extent.empty())
    draw_centered_text(image, f.left + f.width / 2, f.top + f.height / 2 - kTextHeight / 2,
                       "no data to plot", kFrameColor);
  draw_legend(image, f, series, all_runs, markers);
  return image;
}

}  // namespace

void write_line_chart(const std::filesystem::path& path, const std::vector<Series>& series,
                      const ChartLabels& labels, bool log_x) {
  for (const Series& s : series)
    require(s.x.size() == s.y.size(),
            "line chart {}: series '{}' has {} x values and {} y values, expected as many of each",
            path.string(), s.name, s.x.size(), s.y.size());
  write_png(path, draw_line_chart(series, labels, log_x));
}

}  // namespace relpos
