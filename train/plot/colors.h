#pragma once
// The fixed colors of the charts: a palette for line series and a perceptual
// color map (dark blue -> teal -> green -> yellow) for heatmaps.
#include <cstddef>

#include "train/plot/image.h"

namespace relpos {

inline constexpr std::size_t kSeriesColorCount = 12;

// Series `index`'s color; the palette repeats after kSeriesColorCount series.
Rgb series_color(std::size_t index);

// The color map at t in [0, 1] (clamped): linear between a few control points,
// luminance rising monotonically from t = 0 to t = 1.
Rgb color_map(double t);

// Relative luminance in [0, 1] (Rec. 709 weights on the 8-bit values).
double luminance(Rgb color);

}  // namespace relpos
