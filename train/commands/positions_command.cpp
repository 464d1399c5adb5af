// `relpos positions SCHEME`: prints a scheme's index or bucket matrix over
// (query i, key j) as an integer grid or as CSV; --png has tools/plot.py draw it as a heatmap.
// `relpos positions --config FILE...`: each layer of a model's config (per-layer schemes,
// sliding windows) and the grid of each layer whose scheme has one.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/error.h"
#include "layers/position/registry.h"
#include "train/commands/commands.h"
#include "train/config/config.h"
#include "train/plot_script.h"
#include "train/store/atomic_file.h"
#include "train/store/input_output.h"

namespace relpos {
namespace {

struct PositionsOptions {
  std::string scheme;
  std::vector<std::string> config_files, sets;  // --config, --set: a model's layers
  PositionConfig config;                        // the scheme's keys, from --<key> options
  std::int64_t q_len = 16, k_len = 0;           // k_len 0: same as q_len
  bool causal = false;
  bool csv = false;
  std::string png;
};

// The matrix as printed, with std::nullopt for masked (future) entries.
using Grid = std::vector<std::vector<std::optional<std::string>>>;

// Future keys are masked when asked, and always for causal-only schemes.
bool masked(const PositionsOptions& o, const PositionSchemeEntry& entry) {
  return o.causal || entry.causal_only;
}

// `window` > 0 also masks the keys at distance >= window (a layer's sliding window).
Grid index_matrix(const PositionsOptions& o, const PositionSchemeEntry& entry,
                  std::int64_t window = 0) {
  const std::int64_t lq = o.q_len, lk = o.k_len;
  Grid grid(static_cast<std::size_t>(lq), std::vector<std::optional<std::string>>(lk));
  for (std::int64_t i = 0; i < lq; ++i) {
    const std::int64_t qpos = lk - lq + i;  // queries are the last q_len positions
    for (std::int64_t j = 0; j < lk; ++j) {
      const std::int64_t rel = j - qpos;
      if ((masked(o, entry) && rel > 0) || (window > 0 && -rel >= window)) continue;
      grid[i][j] = entry.table_index
                       ? std::to_string(entry.table_index(o.config, rel))
                       : fmt::format("{:.3f}", entry.table_value(o.config, qpos, rel));
    }
  }
  return grid;
}

void print_grid(const Grid& grid, const PositionsOptions& o, const std::string& caption,
                bool mask) {
  std::size_t width = 1;
  for (const auto& row : grid)
    for (const auto& v : row)
      if (v) width = std::max(width, v->size());
  width = std::max(width, std::to_string(o.k_len - 1).size());
  const std::size_t label = std::max<std::size_t>(std::to_string(o.q_len - 1).size(), 3);
  std::cout << caption << ", q_len " << o.q_len << ", k_len " << o.k_len
            << (mask ? ", '.' = masked (future)" : "") << "\n";
  std::cout << fmt::format("{:>{}} |", "i\\j", label);
  for (std::int64_t j = 0; j < o.k_len; ++j) std::cout << fmt::format(" {:>{}}", j, width);
  std::cout << "\n"
            << std::string(label + 1, '-') << "+"
            << std::string(static_cast<std::size_t>(o.k_len) * (width + 1), '-') << "\n";
  for (std::size_t i = 0; i < grid.size(); ++i) {
    std::cout << fmt::format("{:>{}} |", i, label);
    for (const auto& v : grid[i])
      std::cout << fmt::format(" {:>{}}", v ? *v : std::string("."), width);
    std::cout << "\n";
  }
}

std::string grid_csv(const Grid& grid, const PositionsOptions& o) {
  std::string out = "query";
  for (std::int64_t j = 0; j < o.k_len; ++j) out += fmt::format(",k{}", j);
  out += "\n";
  for (std::size_t i = 0; i < grid.size(); ++i) {
    out += std::to_string(i);
    for (const auto& v : grid[i]) {
      out += ',';
      if (v) out += *v;
    }
    out += "\n";
  }
  return out;
}

// Writes the CSV beside the PNG (x.png: x.csv) and has tools/plot.py draw it (x.png,
// x.svg); none of the three may be the python or the plot script.
void write_heatmap(const Grid& grid, const PositionsOptions& o, const std::string& caption) {
  const std::filesystem::path csv = std::filesystem::path(o.png).replace_extension(".csv");
  for (const char* extension : {".csv", ".png", ".svg"})
    require_not_an_input(std::filesystem::path(o.png).replace_extension(extension), "--png",
                         plot_script_inputs());
  write_file_atomic(csv, grid_csv(grid, o));
  std::cerr << "wrote " << csv.string() << "\n";
  run_plot_script({"positions", csv.string(), o.png, "--title",
                   fmt::format("{}, q_len {}, k_len {}", caption, o.q_len, o.k_len)},
                  std::cerr);
}

// The keys of `p` that differ from their defaults, e.g. " (num_buckets=8)".
std::string changed_keys(const PositionConfig& p) {
  const PositionConfig defaults;
  std::vector<std::string> keys;
  for (const PositionKey& k : position_keys()) {
    if (p.at(k.key.name) == defaults.at(k.key.name)) continue;
    keys.push_back(
        k.key.name + "=" +
        std::visit([](const auto& v) { return fmt::format("{}", v); }, p.at(k.key.name)));
  }
  return keys.empty() ? "" : fmt::format(" ({})", fmt::join(keys, ", "));
}

// Each layer of the config: its scheme, changed keys and window, then its grid.
void show_layers(PositionsOptions o) {
  require(o.scheme.empty(), "relpos positions: give a SCHEME or --config, not both");
  require(!o.csv && o.png.empty(), "--csv and --png show one scheme's grid; not with --config");
  const RunConfig c = load_config(o.config_files, o.sets);
  const ModelConfig& m = c.model;
  o.causal = m.causal;
  for (std::int64_t l = 0; l < m.n_layers; ++l) {
    const PositionConfig& p = layer_position(m, l);
    const std::int64_t window = layer_window(m, l);
    std::cout << fmt::format("layer {}: {}{}, {}\n", l, p.scheme, changed_keys(p),
                             window > 0 ? fmt::format("causal sliding window of {}", window)
                                        : std::string("every earlier position"));
  }
  for (std::int64_t l = 0; l < m.n_layers; ++l) {
    const PositionConfig& p = layer_position(m, l);
    const PositionSchemeEntry& entry = *find_position_scheme(p.scheme);
    const std::int64_t window = layer_window(m, l);
    if (!entry.table_index && window == 0) continue;
    o.config = p;
    std::cout << "\nlayer " << l << ": ";
    const std::string caption =
        entry.caption ? entry.caption(p) : p.scheme + ": relative position j - i";
    const PositionSchemeEntry* shown = entry.table_index ? &entry : find_position_scheme("none");
    print_grid(index_matrix(o, *shown, window), o,
               caption + (window > 0 ? fmt::format(", window {} ('.' also outside)", window) : ""),
               true);
  }
}

void run(const PositionsOptions& given) {
  PositionsOptions o = given;
  if (o.k_len == 0) o.k_len = o.q_len;
  if (!o.config_files.empty()) return show_layers(o);
  require(!o.scheme.empty(), "relpos positions: give a SCHEME or --config FILE");
  require(o.q_len >= 1, "--q-len must be >= 1, got {}", o.q_len);
  require(o.k_len >= o.q_len,
          "--k-len ({}) must be >= --q-len ({}): queries are the last positions", o.k_len, o.q_len);
  constexpr double kMaxCells = 1 << 24;  // a grid to read or plot, not to fill memory
  require(static_cast<double>(o.q_len) * static_cast<double>(o.k_len) <= kMaxCells,
          "--q-len {} x --k-len {}: at most {} cells", o.q_len, o.k_len, kMaxCells);
  require(o.png.empty() || std::filesystem::path(o.png).extension() == ".png",
          "--png '{}': expected a file name ending in .png", o.png);
  const PositionSchemeEntry& entry = *find_position_scheme(o.scheme);
  o.config.scheme = o.scheme;
  // The scheme's own checks of its keys; the model's sizes do not matter here.
  if (entry.validate) entry.validate(o.config, {{2, 1, 1, masked(o, entry)}, 0, {}});
  const Grid grid = index_matrix(o, entry);
  const std::string caption = entry.caption(o.config);
  if (o.csv)
    std::cout << grid_csv(grid, o);
  else
    print_grid(grid, o, caption, masked(o, entry));
  if (!o.png.empty()) write_heatmap(grid, o, caption);
}

// The schemes with a per-distance table or a per-(query, key) input.
std::vector<std::string> indexed_schemes() {
  std::vector<std::string> names;
  for (const PositionSchemeEntry& entry : position_schemes())
    if (entry.table_index || entry.table_value) names.push_back(entry.name);
  return names;
}

// Each key a table index reads, as an --option (max_relative -> --max-relative).
void add_key_options(CLI::App& cmd, PositionConfig& config) {
  for (const PositionKey& k : position_keys()) {
    const bool indexes = std::any_of(k.schemes.begin(), k.schemes.end(), [&](const auto& name) {
      const auto& keys = find_position_scheme(name)->index_keys;
      return std::find(keys.begin(), keys.end(), k.key.name) != keys.end();
    });
    if (!indexes) continue;
    std::string flag = "--" + k.key.name;
    std::replace(flag.begin(), flag.end(), '_', '-');
    const std::string help = fmt::format("{}: {}", fmt::join(k.schemes, ", "), k.key.meaning);
    std::visit(
        [&](auto& value) {
          if constexpr (std::is_same_v<std::decay_t<decltype(value)>, bool>)
            cmd.add_flag(flag, value, help);
          else
            cmd.add_option(flag, value, help)->capture_default_str();
        },
        config.at(k.key.name));
  }
}

}  // namespace

void add_positions_command(CLI::App& app) {
  auto options = std::make_shared<PositionsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "positions", "Print a position scheme's index or bucket matrix over (query i, key j)");
  cmd->add_option(
         "scheme", options->scheme,
         fmt::format("{} (none: the relative position j - i)", fmt::join(indexed_schemes(), ", ")))
      ->check(CLI::IsMember(indexed_schemes()));
  cmd->add_option("--config", options->config_files,
                  "instead of SCHEME: a model's config file(s); shows each layer's scheme and "
                  "window, and its grid");
  cmd->add_option("--set", options->sets, "with --config: key.path=value overrides");
  cmd->add_option("--q-len", options->q_len, "number of queries (the last positions)")
      ->capture_default_str();
  cmd->add_option("--k-len", options->k_len, "number of keys (default: q-len)");
  add_key_options(*cmd, options->config);
  cmd->add_flag("--causal", options->causal, "mark future keys as masked ('.')");
  cmd->add_flag("--csv", options->csv, "print CSV instead of a grid");
  cmd->add_option("--png", options->png,
                  "also write X.csv and have tools/plot.py draw X.png and X.svg from it");
  cmd->callback([options] { run(*options); });
}

}  // namespace relpos
