#pragma once
// An 8-bit RGB raster for charts: pixels, alpha blending, filled rectangles,
// anti-aliased thick lines and discs, and text in our bitmap font.
// Coordinates: pixel (x, y) covers [x, x+1) x [y, y+1), y grows downward.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace relpos {

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
  friend bool operator==(const Rgb&, const Rgb&) = default;
};

struct Point {
  double x = 0, y = 0;
};

class Image {
 public:
  Image(int width, int height, Rgb background);

  int width() const { return width_; }
  int height() const { return height_; }
  Rgb pixel(int x, int y) const;
  // Rows top to bottom, 3 bytes (R, G, B) per pixel.
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }

  // Pixels outside the image are ignored by every drawing call.
  void set(int x, int y, Rgb color);
  void blend(int x, int y, Rgb color, double alpha);  // alpha in [0, 1]
  void fill_rect(int x, int y, int width, int height, Rgb color, double alpha = 1.0);

  // Anti-aliased: each pixel is blended by the fraction of it within thickness/2
  // of the path (round joins and caps); a point is drawn once where segments meet.
  void draw_polyline(std::span<const Point> points, Rgb color, double thickness);
  void draw_line(Point from, Point to, Rgb color, double thickness);
  void fill_circle(Point center, double radius, Rgb color);

  // Text at an integer scale; (x, y) is the top-left corner of the first glyph's
  // cap line, descenders reach 2 * scale pixels below the baseline.
  void draw_text(int x, int y, std::string_view text, Rgb color, int scale);
  // The same text turned 90 degrees counter-clockwise, read bottom to top;
  // (x, y) is the top-left corner of its box (text height wide, text width tall).
  void draw_text_up(int x, int y, std::string_view text, Rgb color, int scale);

 private:
  std::size_t offset(int x, int y) const;  // of pixel (x, y)'s red byte in bytes_
  // Blends `color` over the pixels of `coverage`, a (height, width) grid of
  // fractions whose top-left pixel is (left, top).
  void blend_coverage(const std::vector<float>& coverage, int left, int top, int width, Rgb color);

  int width_, height_;
  std::vector<std::uint8_t> bytes_;
};

}  // namespace relpos
