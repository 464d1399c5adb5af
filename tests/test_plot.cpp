// PNG plots: the raster and its font, tick values, PNG files read back with
// libpng, line charts, heatmaps, and the atomic-write error paths.
#include <png.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "tests/test_files.h"
#include "train/plot/axis_ticks.h"
#include "train/plot/bitmap_font.h"
#include "train/plot/colors.h"
#include "train/plot/heatmap.h"
#include "train/plot/image.h"
#include "train/plot/line_chart.h"
#include "train/plot/png_file.h"

using namespace relpos;
namespace fs = std::filesystem;
using testing::FileSizeLimit;
using testing::TempDir;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr Rgb kWhiteRgb{255, 255, 255};

// A PNG decoded by libpng (its simplified API) into 8-bit RGB.
struct DecodedPng {
  int width = 0, height = 0;
  std::vector<png_byte> rgb;

  Rgb at(int x, int y) const {
    const std::size_t i = (static_cast<std::size_t>(y) * width + x) * 3;
    return {rgb[i], rgb[i + 1], rgb[i + 2]};
  }
  std::vector<int> rows_of(Rgb color) const {  // the row of each pixel of `color`
    std::vector<int> rows;
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        if (at(x, y) == color) rows.push_back(y);
    return rows;
  }
};

DecodedPng read_png(const fs::path& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  INFO(path.string());
  REQUIRE(png_image_begin_read_from_file(&image, path.c_str()) != 0);
  image.format = PNG_FORMAT_RGB;
  DecodedPng decoded;
  decoded.width = static_cast<int>(image.width);
  decoded.height = static_cast<int>(image.height);
  decoded.rgb.resize(PNG_IMAGE_SIZE(image));
  REQUIRE(png_image_finish_read(&image, nullptr, decoded.rgb.data(), 0, nullptr) != 0);
  return decoded;
}

int median(std::vector<int> values) {
  REQUIRE_FALSE(values.empty());
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

// The longest run of pixels other than `color` on row y, between its first and
// last pixel of `color`.
int longest_gap(const DecodedPng& png, int y, Rgb color) {
  int first = -1, last = -1;
  for (int x = 0; x < png.width; ++x)
    if (png.at(x, y) == color) first = first < 0 ? x : first, last = x;
  REQUIRE(first >= 0);
  int longest = 0, run = 0;
  for (int x = first; x <= last; ++x) {
    run = png.at(x, y) == color ? 0 : run + 1;
    longest = std::max(longest, run);
  }
  return longest;
}

std::vector<double> values(const std::vector<Tick>& ticks) {
  std::vector<double> out;
  for (const Tick& t : ticks) out.push_back(t.value);
  return out;
}

std::vector<std::string> labels(const std::vector<Tick>& ticks) {
  std::vector<std::string> out;
  for (const Tick& t : ticks) out.push_back(t.label);
  return out;
}

}  // namespace

TEST_CASE("the bitmap font sets glyphs proportionally", "[plot]") {
  REQUIRE(text_width("", 1) == 0);
  REQUIRE(text_width("A", 1) == 5);
  REQUIRE(text_width("AA", 1) == 11);  // 5 + 1 gap + 5
  REQUIRE(text_width("i", 1) == 3);
  REQUIRE(text_width(".", 1) == 1);
  REQUIRE(text_width(" ", 1) == 3);
  REQUIRE(text_width("A", 3) == 15);
  REQUIRE(text_width("\x7f", 1) == text_width("?", 1));  // outside ASCII 32-126
  // 'g' has a descender, 'a' does not.
  REQUIRE(glyph_of('g').rows[7] != 0);
  REQUIRE(glyph_of('a').rows[7] == 0);
  for (char c = 33; c < 127; ++c) {
    INFO("character " << c);
    REQUIRE(glyph_of(c).width >= 1);  // every printable glyph has ink
  }
}

TEST_CASE("Image draws text upright and turned upward", "[plot]") {
  const Rgb ink{10, 20, 30};
  Image upright(8, 10, kWhiteRgb);
  upright.draw_text(1, 1, "L", ink, 1);  // 'L': column 0 rows 0-6, row 6 columns 0-4
  Image turned(10, 8, kWhiteRgb);
  turned.draw_text_up(1, 1, "L", ink, 1);
  for (int row = 0; row < 7; ++row)
    for (int column = 0; column < 5; ++column) {
      const bool inked = column == 0 || row == 6;
      INFO("glyph row " << row << " column " << column);
      REQUIRE((upright.pixel(1 + column, 1 + row) == ink) == inked);
      // Turned counter-clockwise: glyph row -> x, glyph column -> upward from the bottom.
      REQUIRE((turned.pixel(1 + row, 1 + 4 - column) == ink) == inked);
    }
  Image doubled(12, 16, kWhiteRgb);
  doubled.draw_text(0, 0, "L", ink, 2);
  REQUIRE(doubled.pixel(1, 13) == ink);       // glyph (column 0, row 6) covers 2x2 pixels
  REQUIRE(doubled.pixel(9, 13) == ink);       // glyph (column 4, row 6)
  REQUIRE(doubled.pixel(2, 0) == kWhiteRgb);  // glyph (column 1, row 0) is blank
}

TEST_CASE("Image blends, clips rectangles and draws anti-aliased lines", "[plot]") {
  const Rgb black{0, 0, 0}, red{200, 0, 0};
  Image image(30, 12, kWhiteRgb);
  image.blend(0, 0, black, 0.5);
  REQUIRE(image.pixel(0, 0) == Rgb{128, 128, 128});  // round(255 * 0.5)
  image.fill_rect(-5, -5, 7, 7, black);              // clipped to (0..1, 0..1)
  REQUIRE(image.pixel(1, 1) == black);
  REQUIRE(image.pixel(2, 2) == kWhiteRgb);
  image.set(-1, 100, black);  // outside: ignored

  // Thickness 2 along the centres of row 5: row 5 fully covered, rows 4 and 6
  // half (distance 1 from the centre line), rows 3 and 7 untouched.
  image.draw_line({3.5, 5.5}, {25.5, 5.5}, red, 2.0);
  for (int x = 4; x <= 25; ++x) {
    INFO("x " << x);
    REQUIRE(image.pixel(x, 5) == red);
    REQUIRE(image.pixel(x, 4) == Rgb{228, 128, 128});  // half red over white
    REQUIRE(image.pixel(x, 6) == Rgb{228, 128, 128});
    REQUIRE(image.pixel(x, 3) == kWhiteRgb);
    REQUIRE(image.pixel(x, 7) == kWhiteRgb);
  }
  REQUIRE(image.pixel(28, 5) == kWhiteRgb);
  REQUIRE_THROWS_WITH(image.pixel(30, 0), Catch::Contains("outside a 30x12 image"));
  REQUIRE_THROWS_WITH(Image(0, 4, kWhiteRgb), Catch::Contains("image size 0x4"));
}

TEST_CASE("linear ticks are nice multiples labelled with the decimals they need", "[plot]") {
  REQUIRE(values(linear_ticks(0, 10, 5)) == std::vector<double>{0, 2, 4, 6, 8, 10});
  REQUIRE(labels(linear_ticks(0, 10, 5)) ==
          std::vector<std::string>{"0", "2", "4", "6", "8", "10"});
  REQUIRE(labels(linear_ticks(1.85, 5.9, 8)) ==
          std::vector<std::string>{"2.0", "2.5", "3.0", "3.5", "4.0", "4.5", "5.0", "5.5"});
  REQUIRE(labels(linear_ticks(-0.013, 0.021, 4)) ==
          std::vector<std::string>{"-0.01", "0.00", "0.01", "0.02"});
  REQUIRE(labels(linear_ticks(0, 3e6, 3)) ==
          std::vector<std::string>{"0", "1e+06", "2e+06", "3e+06"});
  REQUIRE_THROWS_WITH(linear_ticks(2, 2, 4), Catch::Contains("expected finite low < high"));
}

TEST_CASE("log ticks: powers of two, 1-2-5 per decade, whole decades", "[plot]") {
  REQUIRE(labels(log_ticks(50, 5000, 8, true)) ==
          std::vector<std::string>{"64", "128", "256", "512", "1024", "2048", "4096"});
  REQUIRE(values(log_ticks(1, 1 << 20, 5, true)) ==
          std::vector<double>{1, 32, 1024, 32768, 1 << 20});  // every 5th power
  REQUIRE(labels(log_ticks(40, 1200, 8, false)) ==
          std::vector<std::string>{"50", "100", "200", "500", "1000"});
  REQUIRE(labels(log_ticks(0.0008, 120, 8, false)) ==
          std::vector<std::string>{"0.001", "0.01", "0.1", "1", "10", "100"});
  // Too narrow for two 1-2-5 values: linear ticks instead.
  REQUIRE(values(log_ticks(300, 400, 5, false)) ==
          std::vector<double>{300, 320, 340, 360, 380, 400});
  REQUIRE_THROWS_WITH(log_ticks(0, 10, 4, false), Catch::Contains("expected 0 < low < high"));
}

TEST_CASE("the color map runs from dark to bright through fixed ends", "[plot]") {
  REQUIRE(color_map(0.0) == Rgb{68, 1, 84});
  REQUIRE(color_map(1.0) == Rgb{253, 231, 37});
  REQUIRE(color_map(-3.0) == color_map(0.0));
  REQUIRE(color_map(7.0) == color_map(1.0));
  for (int i = 1; i <= 100; ++i) {
    INFO("t " << i / 100.0);
    REQUIRE(luminance(color_map(i / 100.0)) > luminance(color_map((i - 1) / 100.0)));
  }
  for (std::size_t a = 0; a < kSeriesColorCount; ++a)
    for (std::size_t b = a + 1; b < kSeriesColorCount; ++b)
      REQUIRE_FALSE(series_color(a) == series_color(b));
  REQUIRE(series_color(kSeriesColorCount) == series_color(0));
}

TEST_CASE("write_png writes pixels libpng reads back, replacing the file atomically", "[plot]") {
  TempDir dir("plot");
  const fs::path path = dir.path() / "pixels.png";
  Image image(7, 5, Rgb{1, 2, 3});
  image.set(0, 0, Rgb{255, 0, 0});
  image.set(6, 4, Rgb{0, 255, 0});
  image.set(3, 2, Rgb{10, 20, 250});
  write_png(path, image);
  DecodedPng png = read_png(path);
  REQUIRE(png.width == 7);
  REQUIRE(png.height == 5);
  REQUIRE(png.rgb == std::vector<png_byte>(image.bytes().begin(), image.bytes().end()));

  Image second(3, 2, Rgb{9, 9, 9});
  write_png(path, second);
  png = read_png(path);
  REQUIRE(png.width == 3);
  REQUIRE(png.at(2, 1) == Rgb{9, 9, 9});
  REQUIRE_FALSE(fs::exists(path.string() + ".tmp"));
}

TEST_CASE("writing a PNG where it cannot go throws, names the path and leaves no .tmp", "[plot]") {
  TempDir dir("plot");
  const fs::path missing = dir.path() / "no_such_dir" / "plot.png";
  const std::string missing_dir = (dir.path() / "no_such_dir").string();
  REQUIRE_THROWS_AS(write_png(missing, Image(4, 4, kWhiteRgb)), UsageError);
  REQUIRE_THROWS_WITH(write_png(missing, Image(4, 4, kWhiteRgb)),
                      Catch::Contains(missing.string()) &&
                          Catch::Contains("directory " + missing_dir + " does not exist"));
  REQUIRE_THROWS_WITH(write_line_chart(missing, {{"a", {1, 2}, {3, 4}}}, {"t", "x", "y"}),
                      Catch::Contains(missing.string()));
  REQUIRE_THROWS_WITH(write_heatmap(missing, {{1, 2}, {3, 4}}, {"t", "key j", "query i"}),
                      Catch::Contains(missing.string()));
  REQUIRE_FALSE(fs::exists(missing.string() + ".tmp"));
  REQUIRE_FALSE(fs::exists(missing.parent_path()));

  // The target is a directory: the rename fails, the .tmp is removed.
  const fs::path occupied = dir.path() / "occupied.png";
  fs::create_directory(occupied);
  REQUIRE_THROWS_WITH(write_png(occupied, Image(4, 4, kWhiteRgb)),
                      Catch::Contains(occupied.string()) && Catch::Contains("cannot rename"));
  REQUIRE_FALSE(fs::exists(occupied.string() + ".tmp"));
  REQUIRE(fs::is_directory(occupied));

  // The disk fills up mid-write: the previous file stays as it was.
  const fs::path full = dir.path() / "full.png";
  write_png(full, Image(2, 2, kWhiteRgb));
  Image noise(300, 300, kWhiteRgb);  // incompressible: a PNG of about 270 KB
  std::mt19937 bits(7);
  for (int y = 0; y < noise.height(); ++y)
    for (int x = 0; x < noise.width(); ++x)
      noise.set(x, y,
                Rgb{static_cast<std::uint8_t>(bits()), static_cast<std::uint8_t>(bits()),
                    static_cast<std::uint8_t>(bits())});
  {
    const FileSizeLimit limit(64 * 1024);
    REQUIRE_THROWS_WITH(write_png(full, noise),
                        Catch::Contains("cannot write PNG " + full.string()) &&
                            Catch::Contains(".tmp: File too large"));
  }
  REQUIRE_FALSE(fs::exists(full.string() + ".tmp"));
  REQUIRE(read_png(full).width == 2);
}

TEST_CASE("a line chart draws each series in its palette color where its values lie", "[plot]") {
  TempDir dir("plot");
  const fs::path path = dir.path() / "loss.png";
  Series low{"low", {}, {}}, high{"high", {}, {}};
  for (int step = 0; step <= 1000; step += 50) {
    low.x.push_back(step), low.y.push_back(2.0);
    high.x.push_back(step), high.y.push_back(3.0 + step * 1e-4);
  }
  write_line_chart(path, {low, high}, {"validation loss", "step", "loss"});
  const DecodedPng png = read_png(path);
  REQUIRE(png.width == kLineChartWidth);
  REQUIRE(png.height == kLineChartHeight);
  const std::vector<int> low_rows = png.rows_of(series_color(0));
  const std::vector<int> high_rows = png.rows_of(series_color(1));
  REQUIRE(low_rows.size() > 500);  // a line across the plot plus markers
  REQUIRE(high_rows.size() > 500);
  REQUIRE(png.rows_of(series_color(2)).empty());        // no third series
  REQUIRE(median(high_rows) + 100 < median(low_rows));  // higher values sit higher up
}

TEST_CASE("a line chart skips NaN and inf points and breaks the line there", "[plot]") {
  TempDir dir("plot");
  Series whole{"whole", {}, {}};
  for (int i = 1; i <= 10; ++i) whole.x.push_back(i), whole.y.push_back(5.0);
  Series broken = whole;
  broken.y[4] = kNaN;
  broken.y[5] = kInf;
  write_line_chart(dir.path() / "whole.png", {whole}, {"whole", "x", "y"});
  write_line_chart(dir.path() / "broken.png", {broken}, {"broken", "x", "y"});
  const DecodedPng whole_png = read_png(dir.path() / "whole.png");
  const DecodedPng broken_png = read_png(dir.path() / "broken.png");
  const Rgb color = series_color(0);
  const int whole_row = median(whole_png.rows_of(color));
  const int broken_row = median(broken_png.rows_of(color));
  REQUIRE(whole_row == broken_row);  // all-equal y: the line sits mid-plot
  // Around a marker its white ring interrupts the line for a few pixels; across
  // the two skipped points the gap spans more than two intervals of ~85 px.
  REQUIRE(longest_gap(whole_png, whole_row, color) < 10);
  REQUIRE(longest_gap(broken_png, broken_row, color) > 150);

  // Nothing drawable at all, and a log axis with x <= 0: still a valid chart.
  write_line_chart(dir.path() / "nothing.png", {{"nan", {kNaN, 1}, {1, kNaN}}}, {"", "", ""});
  write_line_chart(dir.path() / "log.png", {{"log", {-1, 0, 64, 128}, {1, 2, 3, 4}}},
                   {"log", "length", "loss"}, true);
  REQUIRE(read_png(dir.path() / "nothing.png").rows_of(color).size() < 200);  // legend swatch only
  REQUIRE(read_png(dir.path() / "log.png").rows_of(color).size() > 100);
}

TEST_CASE("a line chart handles a single point, no series, and rejects ragged series", "[plot]") {
  TempDir dir("plot");
  write_line_chart(dir.path() / "single.png", {{"one", {5}, {2.5}}}, {"single", "x", "y"});
  const DecodedPng single = read_png(dir.path() / "single.png");
  REQUIRE(single.width == kLineChartWidth);
  REQUIRE(single.rows_of(series_color(0)).size() > 20);  // its marker (and the legend's)
  write_line_chart(dir.path() / "none.png", {}, {"nothing", "x", "y"});
  REQUIRE(read_png(dir.path() / "none.png").height == kLineChartHeight);
  REQUIRE_THROWS_WITH(
      write_line_chart(dir.path() / "bad.png", {{"ok", {1}, {1}}, {"ragged", {1, 2, 3}, {1, 2}}},
                       {"", "", ""}),
      Catch::Contains("series 'ragged' has 3 x values and 2 y values") &&
          Catch::Contains("bad.png"));
  REQUIRE_FALSE(fs::exists(dir.path() / "bad.png"));
}

TEST_CASE("heatmap cells take the color map's color of their value", "[plot]") {
  TempDir dir("plot");
  const fs::path path = dir.path() / "heat.png";
  // Distinct non-integer values in a scrambled order; min at (2, 3), max at (4, 7).
  const std::size_t n_rows = 6, n_columns = 9;
  std::vector<std::vector<double>> rows(n_rows, std::vector<double>(n_columns));
  for (std::size_t i = 0; i < n_rows; ++i)
    for (std::size_t j = 0; j < n_columns; ++j)
      rows[i][j] = static_cast<double>((i * 9 + j) * 17 % 54) + 0.25;
  rows[2][3] = -10.5;
  rows[4][7] = 99.5;
  write_heatmap(path, rows, {"scrambled", "key j", "query i"});
  const DecodedPng png = read_png(path);
  const HeatmapGeometry g = heatmap_geometry(n_rows, n_columns);
  REQUIRE(g.stride == 1);
  REQUIRE(png.width >= 300);
  REQUIRE(png.width <= 1600);
  REQUIRE(png.height >= 300);
  REQUIRE(png.height <= 1600);
  auto cell_pixel = [&](std::size_t i, std::size_t j) {
    return png.at(g.left + static_cast<int>(j) * g.cell_width + 1,
                  g.top + static_cast<int>(i) * g.cell_height + 1);
  };
  REQUIRE(cell_pixel(2, 3) == Rgb{68, 1, 84});     // the min: the map's dark end
  REQUIRE(cell_pixel(4, 7) == Rgb{253, 231, 37});  // the max: the map's bright end

  struct Cell {
    double value;
    Rgb color;
  };
  std::vector<Cell> cells;
  for (std::size_t i = 0; i < n_rows; ++i)
    for (std::size_t j = 0; j < n_columns; ++j) {
      const Rgb color = cell_pixel(i, j);
      INFO("cell " << i << ", " << j);
      REQUIRE(color == color_map((rows[i][j] + 10.5) / 110.0));
      cells.push_back({rows[i][j], color});
    }
  std::sort(cells.begin(), cells.end(),
            [](const Cell& a, const Cell& b) { return a.value < b.value; });
  for (std::size_t k = 1; k < cells.size(); ++k)
    REQUIRE(luminance(cells[k].color) > luminance(cells[k - 1].color));
}

TEST_CASE("heatmap: NaN cells, integer labels, sizes from 1x1 to 2000x2000", "[plot]") {
  TempDir dir("plot");
  std::vector<std::vector<double>> causal(4, std::vector<double>(4, kNaN));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j <= i; ++j) causal[i][j] = i - j;
  write_heatmap(dir.path() / "causal.png", causal, {"causal", "key j", "query i"});
  const DecodedPng png = read_png(dir.path() / "causal.png");
  const HeatmapGeometry g = heatmap_geometry(4, 4);
  const Rgb masked = png.at(g.left + 3 * g.cell_width + 1, g.top + 1);  // cell (0, 3): NaN
  REQUIRE(masked.r == masked.g);
  REQUIRE(masked.g == masked.b);
  REQUIRE_FALSE(masked == kWhiteRgb);
  REQUIRE(png.at(g.left + 1, g.top + 1) == color_map(0.0));  // cell (0, 0) = 0
  // Cell (3, 0) = 3, the max: its value is written in it, dark on the bright end.
  const int x0 = g.left, y0 = g.top + 3 * g.cell_height;
  int text_pixels = 0;
  for (int y = y0; y < y0 + g.cell_height; ++y)
    for (int x = x0; x < x0 + g.cell_width; ++x) text_pixels += png.at(x, y) != color_map(1.0);
  REQUIRE(text_pixels > 20);

  write_heatmap(dir.path() / "one.png", {{7}}, {"1x1", "key j", "query i"});
  const DecodedPng one = read_png(dir.path() / "one.png");
  REQUIRE(one.width >= 300);
  REQUIRE(one.height >= 250);

  std::vector<std::vector<double>> large(2000, std::vector<double>(2000));
  for (std::size_t i = 0; i < large.size(); ++i)
    for (std::size_t j = 0; j < large.size(); ++j)
      large[i][j] = std::min<double>(i > j ? i - j : j - i, 31);
  write_heatmap(dir.path() / "large.png", large, {"2000x2000", "key j", "query i"});
  const DecodedPng big = read_png(dir.path() / "large.png");
  const HeatmapGeometry bg = heatmap_geometry(2000, 2000);
  REQUIRE(bg.stride == 2);
  REQUIRE(bg.drawn_rows == 1000);
  REQUIRE(big.width <= 1600);
  REQUIRE(big.height <= 1600);
  REQUIRE(big.at(bg.left, bg.top) == color_map(0.0));  // the diagonal
}

TEST_CASE("heatmap rejects empty and ragged matrices", "[plot]") {
  TempDir dir("plot");
  REQUIRE_THROWS_WITH(write_heatmap(dir.path() / "e.png", {}, {"", "", ""}),
                      Catch::Contains("e.png: the matrix is empty"));
  REQUIRE_THROWS_WITH(write_heatmap(dir.path() / "r.png", {{1, 2, 3}, {4, 5}}, {"", "", ""}),
                      Catch::Contains("row 1 has 2 values, expected 3"));
  REQUIRE_FALSE(fs::exists(dir.path() / "r.png"));
  REQUIRE_THROWS_WITH(write_heatmap(dir.path() / "e.png", {{}}, {"", "", ""}),
                      Catch::Contains("the matrix is empty"));
  REQUIRE_THROWS_WITH(heatmap_geometry(0, 3), Catch::Contains("heatmap of 0x3 values"));
}
