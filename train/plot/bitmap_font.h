#pragma once
// Our own bitmap font for chart text: ASCII 32-126, glyphs 5 pixels wide and 7
// tall above the baseline plus 2 descender rows, set proportionally (each glyph
// advances by its inked width plus one blank column).
#include <array>
#include <cstdint>
#include <string_view>

namespace relpos {

inline constexpr int kGlyphRows = 9;  // rows 0-6 stand on the baseline, rows 7-8 are descenders
inline constexpr int kCapHeight = 7;  // rows of a capital letter or digit
inline constexpr int kGlyphColumns = 5;

struct Glyph {
  std::array<std::uint8_t, kGlyphRows> rows;  // bit 4 = leftmost column
  int first_column;                           // first inked column (0 for a blank glyph)
  int width;                                  // inked columns; a blank glyph is 3 wide

  bool inked(int column, int row) const {  // column counted from first_column
    return (rows[static_cast<std::size_t>(row)] >> (kGlyphColumns - 1 - first_column - column)) & 1;
  }
};

// The glyph of `c`; characters outside ASCII 32-126 are drawn as '?'.
const Glyph& glyph_of(char c);

// Width in pixels of `text` drawn at an integer `scale`, without the trailing gap.
int text_width(std::string_view text, int scale);

}  // namespace relpos
