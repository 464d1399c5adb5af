// `relpos positions SCHEME`: prints a scheme's index or bucket matrix over
// (query i, key j) as an integer grid or as CSV; --png has tools/plot.py draw it as a heatmap.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "layers/position/t5_buckets.h"
#include "train/atomic_file.h"
#include "train/commands/commands.h"
#include "train/plot_script.h"

namespace relpos {
namespace {

struct PositionsOptions {
  std::string scheme;
  std::int64_t q_len = 16, k_len = 0;  // k_len 0: same as q_len
  std::int64_t num_buckets = 32, max_distance = 128;
  bool bidirectional = false;
  std::int64_t max_relative = 16;
  std::int64_t clamp_len = 0;
  bool causal = false;
  bool csv = false;
  std::string png;
};

// The matrix, with std::nullopt for masked (future) entries.
using Grid = std::vector<std::vector<std::optional<std::int64_t>>>;

Grid index_matrix(const PositionsOptions& o) {
  const std::int64_t lq = o.q_len, lk = o.k_len;
  const bool xl = o.scheme == "xl";
  if (o.scheme == "t5") validate(T5BucketConfig{o.num_buckets, o.max_distance, o.bidirectional});
  Grid grid(static_cast<std::size_t>(lq), std::vector<std::optional<std::int64_t>>(lk));
  for (std::int64_t i = 0; i < lq; ++i) {
    const std::int64_t qpos = lk - lq + i;  // queries are the last q_len positions
    for (std::int64_t j = 0; j < lk; ++j) {
      const std::int64_t rel = j - qpos;
      if ((o.causal || xl) && rel > 0) continue;
      std::int64_t value = rel;
      if (o.scheme == "t5")
        value = t5_bucket(rel, {o.num_buckets, o.max_distance, o.bidirectional});
      else if (o.scheme == "shaw")
        value = std::clamp(rel, -o.max_relative, o.max_relative) + o.max_relative;
      else if (xl)
        value = o.clamp_len > 0 ? std::min(-rel, o.clamp_len) : -rel;
      else if (o.scheme == "alibi")
        value = rel < 0 ? -rel : rel;  // the bias is -slope * this distance
      grid[i][j] = value;
    }
  }
  return grid;
}

std::string describe(const PositionsOptions& o) {
  if (o.scheme == "t5")
    return fmt::format("t5 buckets ({} buckets, max_distance {}, {})", o.num_buckets,
                       o.max_distance, o.bidirectional ? "bidirectional" : "unidirectional");
  if (o.scheme == "shaw")
    return fmt::format("shaw index clip(j - i, -{0}, {0}) + {0}", o.max_relative);
  if (o.scheme == "xl")
    return fmt::format("xl sinusoid distance i - j{}", o.clamp_len > 0
                                                            ? fmt::format(", clamped at {}", o.clamp_len)
                                                            : std::string());
  if (o.scheme == "alibi") return "alibi distance |i - j| (bias = -slope_h * distance)";
  return "relative position j - i";
}

void print_grid(const Grid& grid, const PositionsOptions& o) {
  std::size_t width = 1;
  for (const auto& row : grid)
    for (const auto& v : row) if (v) width = std::max(width, std::to_string(*v).size());
  width = std::max(width, std::to_string(o.k_len - 1).size());
  const std::size_t label = std::max<std::size_t>(std::to_string(o.q_len - 1).size(), 3);
  std::cout << describe(o) << ", q_len " << o.q_len << ", k_len " << o.k_len
            << (o.causal || o.scheme == "xl" ? ", '.' = masked (future)" : "") << "\n";
  std::cout << fmt::format("{:>{}} |", "i\\j", label);
  for (std::int64_t j = 0; j < o.k_len; ++j) std::cout << fmt::format(" {:>{}}", j, width);
  std::cout << "\n" << std::string(label + 1, '-') << "+"
            << std::string(static_cast<std::size_t>(o.k_len) * (width + 1), '-') << "\n";
  for (std::size_t i = 0; i < grid.size(); ++i) {
    std::cout << fmt::format("{:>{}} |", i, label);
    for (const auto& v : grid[i])
      std::cout << fmt::format(" {:>{}}", v ? std::to_string(*v) : std::string("."), width);
    std::cout << "\n";
  }
}

std::string grid_csv(const Grid& grid, const PositionsOptions& o) {
  std::string out = "query";
  for (std::int64_t j = 0; j < o.k_len; ++j) out += fmt::format(",k{}", j);
  out += "\n";
  for (std::size_t i = 0; i < grid.size(); ++i) {
    out += std::to_string(i);
    for (const auto& v : grid[i]) out += v ? fmt::format(",{}", *v) : std::string(",");
    out += "\n";
  }
  return out;
}

// Writes the CSV beside the PNG (x.png: x.csv) and has tools/plot.py draw it.
void write_heatmap(const Grid& grid, const PositionsOptions& o) {
  const std::filesystem::path csv = std::filesystem::path(o.png).replace_extension(".csv");
  write_file_atomic(csv, grid_csv(grid, o));
  std::cerr << "wrote " << csv.string() << "\n";
  run_plot_script({"positions", csv.string(), o.png, "--title",
                   fmt::format("{}, q_len {}, k_len {}", describe(o), o.q_len, o.k_len)},
                  std::cerr);
}

void run(const PositionsOptions& given) {
  PositionsOptions o = given;
  if (o.k_len == 0) o.k_len = o.q_len;
  require(o.q_len >= 1, "--q-len must be >= 1, got {}", o.q_len);
  require(o.k_len >= o.q_len, "--k-len ({}) must be >= --q-len ({}): queries are the last positions",
          o.k_len, o.q_len);
  require(o.max_relative >= 1, "--max-relative must be >= 1, got {}", o.max_relative);
  require(o.clamp_len >= 0, "--clamp-len must be >= 0, got {}", o.clamp_len);
  require(o.png.empty() || std::filesystem::path(o.png).extension() == ".png",
          "--png '{}': expected a file name ending in .png", o.png);
  const Grid grid = index_matrix(o);
  if (o.csv)
    std::cout << grid_csv(grid, o);
  else
    print_grid(grid, o);
  if (!o.png.empty()) write_heatmap(grid, o);
}

}  // namespace

void add_positions_command(CLI::App& app) {
  auto options = std::make_shared<PositionsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "positions", "Print a position scheme's index or bucket matrix over (query i, key j)");
  cmd->add_option("scheme", options->scheme, "t5, shaw, xl, alibi or relative")
      ->required()
      ->check(CLI::IsMember({"t5", "shaw", "xl", "alibi", "relative"}));
  cmd->add_option("--q-len", options->q_len, "number of queries (the last positions)")
      ->capture_default_str();
  cmd->add_option("--k-len", options->k_len, "number of keys (default: q-len)");
  cmd->add_option("--num-buckets", options->num_buckets, "t5: number of buckets")
      ->capture_default_str();
  cmd->add_option("--max-distance", options->max_distance, "t5: max_distance")
      ->capture_default_str();
  cmd->add_flag("--bidirectional", options->bidirectional, "t5: bidirectional buckets");
  cmd->add_option("--max-relative", options->max_relative, "shaw: clipping distance k")
      ->capture_default_str();
  cmd->add_option("--clamp-len", options->clamp_len, "xl: clamp distances (0: no clamp)")
      ->capture_default_str();
  cmd->add_flag("--causal", options->causal, "mark future keys as masked ('.')");
  cmd->add_flag("--csv", options->csv, "print CSV instead of a grid");
  cmd->add_option("--png", options->png,
                  "also write X.csv and have tools/plot.py draw X.png and X.svg from it");
  cmd->callback([options] { run(*options); });
}

}  // namespace relpos
