#include "train/plot/colors.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace relpos {

namespace {

// Distinct on white and from each other, dark enough for thin lines.
constexpr std::array<Rgb, kSeriesColorCount> kPalette = {{
    {0, 114, 178},    // blue
    {213, 94, 0},     // vermillion
    {0, 158, 115},    // green
    {204, 121, 167},  // pink
    {230, 159, 0},    // orange
    {86, 180, 233},   // sky blue
    {120, 72, 160},   // violet
    {165, 30, 55},    // crimson
    {100, 100, 100},  // gray
    {145, 135, 0},    // olive
    {0, 140, 150},    // teal
    {150, 95, 40},    // brown
}};

// Evenly spaced control points of the color map, t = 0, 0.25, 0.5, 0.75, 1.
constexpr std::array<Rgb, 5> kColorMapPoints = {{
    {68, 1, 84},     // dark purple-blue
    {59, 82, 139},   // blue
    {33, 145, 140},  // teal
    {94, 201, 98},   // green
    {253, 231, 37},  // yellow
}};

}  // namespace

Rgb series_color(std::size_t index) { return kPalette[index % kPalette.size()]; }

Rgb color_map(double t) {
  t = std::isnan(t) ? 0.0 : std::clamp(t, 0.0, 1.0);
  const double position = t * (kColorMapPoints.size() - 1);
  const std::size_t low = std::min(static_cast<std::size_t>(position), kColorMapPoints.size() - 2);
  const double f = position - static_cast<double>(low);
  const Rgb a = kColorMapPoints[low], b = kColorMapPoints[low + 1];
  auto lerp = [f](std::uint8_t from, std::uint8_t to) {
    return static_cast<std::uint8_t>(std::lround(from + f * (to - from)));
  };
  return {lerp(a.r, b.r), lerp(a.g, b.g), lerp(a.b, b.b)};
}

double luminance(Rgb color) {
  return (0.2126 * color.r + 0.7152 * color.g + 0.0722 * color.b) / 255.0;
}

}  // namespace relpos
