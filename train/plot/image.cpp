#include "train/plot/image.h"

#include <algorithm>
#include <cmath>

#include "autograd/error.h"
#include "train/plot/bitmap_font.h"

namespace relpos {

namespace {

// Distance from p to the segment a-b.
double distance_to_segment(Point p, Point a, Point b) {
  const double dx = b.x - a.x, dy = b.y - a.y;
  const double length2 = dx * dx + dy * dy;
  double t = length2 > 0 ? ((p.x - a.x) * dx + (p.y - a.y) * dy) / length2 : 0.0;
  t = std::clamp(t, 0.0, 1.0);
  return std::hypot(p.x - (a.x + t * dx), p.y - (a.y + t * dy));
}

// Fraction of a pixel whose centre lies `distance` from a path of half-width `half_width`.
float coverage_at(double distance, double half_width) {
  return static_cast<float>(std::clamp(half_width + 0.5 - distance, 0.0, 1.0));
}

std::uint8_t mix(std::uint8_t over, std::uint8_t under, double alpha) {
  return static_cast<std::uint8_t>(std::lround(over * alpha + under * (1.0 - alpha)));
}

}  // namespace

Image::Image(int width, int height, Rgb background) : width_(width), height_(height) {
  require(width > 0 && height > 0, "image size {}x{}: expected positive width and height", width,
          height);
  bytes_.resize(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
  for (std::size_t i = 0; i < bytes_.size(); i += 3) {
    bytes_[i] = background.r;
    bytes_[i + 1] = background.g;
    bytes_[i + 2] = background.b;
  }
}

Rgb Image::pixel(int x, int y) const {
  require(x >= 0 && x < width_ && y >= 0 && y < height_, "pixel ({}, {}) outside a {}x{} image", x,
          y, width_, height_);
  const std::size_t i = offset(x, y);
  return {bytes_[i], bytes_[i + 1], bytes_[i + 2]};
}

std::size_t Image::offset(int x, int y) const {
  return (static_cast<std::size_t>(y) * static_cast<std::size_t>(width_) +
          static_cast<std::size_t>(x)) *
         3;
}

void Image::set(int x, int y, Rgb color) { blend(x, y, color, 1.0); }

void Image::blend(int x, int y, Rgb color, double alpha) {
  if (x < 0 || x >= width_ || y < 0 || y >= height_ || alpha <= 0) return;
  alpha = std::min(alpha, 1.0);
  const std::size_t i = offset(x, y);
  bytes_[i] = mix(color.r, bytes_[i], alpha);
  bytes_[i + 1] = mix(color.g, bytes_[i + 1], alpha);
  bytes_[i + 2] = mix(color.b, bytes_[i + 2], alpha);
}

void Image::fill_rect(int x, int y, int width, int height, Rgb color, double alpha) {
  const int x0 = std::max(x, 0), x1 = std::min(x + width, width_);
  const int y0 = std::max(y, 0), y1 = std::min(y + height, height_);
  for (int py = y0; py < y1; ++py)
    for (int px = x0; px < x1; ++px) blend(px, py, color, alpha);
}

void Image::blend_coverage(const std::vector<float>& coverage, int left, int top, int width,
                           Rgb color) {
  for (std::size_t i = 0; i < coverage.size(); ++i) {
    const int x = left + static_cast<int>(i % static_cast<std::size_t>(width));
    const int y = top + static_cast<int>(i / static_cast<std::size_t>(width));
    blend(x, y, color, coverage[i]);
  }
}

void Image::draw_polyline(std::span<const Point> points, Rgb color, double thickness) {
  if (points.empty()) return;
  const double half_width = thickness / 2;
  const double reach = half_width + 1;
  double min_x = points[0].x, max_x = min_x, min_y = points[0].y, max_y = min_y;
  for (const Point& p : points) {
    min_x = std::min(min_x, p.x), max_x = std::max(max_x, p.x);
    min_y = std::min(min_y, p.y), max_y = std::max(max_y, p.y);
  }
  const int left = std::max(static_cast<int>(std::floor(min_x - reach)), 0);
  const int top = std::max(static_cast<int>(std::floor(min_y - reach)), 0);
  const int right = std::min(static_cast<int>(std::ceil(max_x + reach)), width_);
  const int bottom = std::min(static_cast<int>(std::ceil(max_y + reach)), height_);
  if (left >= right || top >= bottom) return;
  const int box_width = right - left;
  // The coverage of the whole path, so that joints are not blended twice.
  std::vector<float> coverage(static_cast<std::size_t>(box_width) * (bottom - top), 0.0f);
  const std::size_t segments = points.size() == 1 ? 1 : points.size() - 1;  // a lone point: a dot
  for (std::size_t s = 0; s < segments; ++s) {
    const Point a = points[s], b = points[std::min(s + 1, points.size() - 1)];
    const int x0 = std::max(static_cast<int>(std::floor(std::min(a.x, b.x) - reach)), left);
    const int x1 = std::min(static_cast<int>(std::ceil(std::max(a.x, b.x) + reach)), right);
    const int y0 = std::max(static_cast<int>(std::floor(std::min(a.y, b.y) - reach)), top);
    const int y1 = std::min(static_cast<int>(std::ceil(std::max(a.y, b.y) + reach)), bottom);
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        const float c = coverage_at(distance_to_segment({x + 0.5, y + 0.5}, a, b), half_width);
        float& cell = coverage[static_cast<std::size_t>(y - top) * box_width + (x - left)];
        cell = std::max(cell, c);
      }
  }
  blend_coverage(coverage, left, top, box_width, color);
}

void Image::draw_line(Point from, Point to, Rgb color, double thickness) {
  const Point points[] = {from, to};
  draw_polyline(points, color, thickness);
}

void Image::fill_circle(Point center, double radius, Rgb color) {
  const Point points[] = {center};
  draw_polyline(points, color, 2 * radius);
}

void Image::draw_text(int x, int y, std::string_view text, Rgb color, int scale) {
  for (char c : text) {
    const Glyph& glyph = glyph_of(c);
    for (int row = 0; row < kGlyphRows; ++row)
      for (int column = 0; column < glyph.width; ++column)
        if (glyph.inked(column, row))
          fill_rect(x + column * scale, y + row * scale, scale, scale, color);
    x += (glyph.width + 1) * scale;
  }
}

void Image::draw_text_up(int x, int y, std::string_view text, Rgb color, int scale) {
  // Text pixel (along, down) lands at (x + down, y + length - 1 - along).
  const int bottom = y + text_width(text, scale) - 1;
  int along = 0;
  for (char c : text) {
    const Glyph& glyph = glyph_of(c);
    for (int row = 0; row < kGlyphRows; ++row)
      for (int column = 0; column < glyph.width; ++column)
        if (glyph.inked(column, row))
          fill_rect(x + row * scale, bottom - along - (column + 1) * scale + 1, scale, scale,
                    color);
    along += (glyph.width + 1) * scale;
  }
}

}  // namespace relpos
