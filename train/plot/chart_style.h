#pragma once
// What line charts and heatmaps share: text scale, colors, margins, and the
// drawing of titles, axis names and tick labels.
#include <string_view>

#include "train/plot/image.h"

namespace relpos {

inline constexpr int kTextScale = 2;                            // font scale of all chart text
inline constexpr int kTextHeight = 7 * kTextScale;              // cap height
inline constexpr int kMargin = 14;                              // from the image edge
inline constexpr int kTitleBlock = kMargin + kTextHeight + 18;  // above the plot when titled
inline constexpr int kTickLength = 5;
inline constexpr Rgb kWhite{255, 255, 255};
inline constexpr Rgb kTextColor{40, 40, 40};
inline constexpr Rgb kFrameColor{150, 150, 150};
inline constexpr Rgb kGridColor{232, 232, 232};

// The title in bold, centred at the top of the image; scale 1 when too wide for scale 2.
void draw_title(Image& image, std::string_view title);
// Text centred on x, its top at y.
void draw_centered_text(Image& image, int center_x, int y, std::string_view text, Rgb color,
                        int scale = kTextScale);
// Text ending at x, its cap line centred on y (a y tick label).
void draw_right_aligned_text(Image& image, int right_x, int center_y, std::string_view text,
                             Rgb color = kTextColor);
// Text reading upward, centred on center_y, its left edge at x (a y axis name).
void draw_upward_text(Image& image, int x, int center_y, std::string_view text);

}  // namespace relpos
