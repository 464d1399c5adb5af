#include "train/plot/chart_style.h"

#include "train/plot/bitmap_font.h"

namespace relpos {

void draw_title(Image& image, std::string_view title) {
  const int scale = text_width(title, kTextScale) <= image.width() - 2 * kMargin ? kTextScale : 1;
  // Drawn twice, one pixel apart: bold.
  draw_centered_text(image, image.width() / 2, kMargin, title, kTextColor, scale);
  draw_centered_text(image, image.width() / 2 + 1, kMargin, title, kTextColor, scale);
}

void draw_centered_text(Image& image, int center_x, int y, std::string_view text, Rgb color,
                        int scale) {
  image.draw_text(center_x - text_width(text, scale) / 2, y, text, color, scale);
}

void draw_right_aligned_text(Image& image, int right_x, int center_y, std::string_view text,
                             Rgb color) {
  image.draw_text(right_x - text_width(text, kTextScale), center_y - kTextHeight / 2, text, color,
                  kTextScale);
}

void draw_upward_text(Image& image, int x, int center_y, std::string_view text) {
  image.draw_text_up(x, center_y - text_width(text, kTextScale) / 2, text, kTextColor, kTextScale);
}

}  // namespace relpos
