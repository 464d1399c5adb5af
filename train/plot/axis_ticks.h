#pragma once
// Tick values and their labels for chart axes.
#include <string>
#include <vector>

namespace relpos {

struct Tick {
  double value;
  std::string label;
};

// Multiples of a "nice" step (1, 2 or 5 x 10^k) inside [low, high], about
// `target` of them, labelled with just the decimals the step needs.
std::vector<Tick> linear_ticks(double low, double high, int target);

// Ticks for a log axis over [low, high], 0 < low < high, at most about `target`:
// powers of two when `powers_of_two`, else 1, 2 and 5 x 10^k (or whole decades,
// or every n-th decade); linear_ticks where fewer than two of those fall inside.
std::vector<Tick> log_ticks(double low, double high, int target, bool powers_of_two);

// `value` in at most 4 significant digits, e.g. "0.125", "31", "2.5e+06".
std::string format_number(double value);

}  // namespace relpos
