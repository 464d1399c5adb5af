#include "train/ablation/sweep_file.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "autograd/error.h"
#include "train/config/config_value.h"
#include "train/plot_script.h"
#include "train/run_state.h"
#include "train/store/checkpoint.h"
#include "train/store/checkpoint_folder.h"
#include "train/store/input_output.h"
#include "train/store/run_folder.h"

namespace relpos {
namespace fs = std::filesystem;
namespace {

// Locates nodes of one sweep file for error messages: "sweep.yaml:7".
struct SweepText {
  fs::path file;
  std::string at(const YAML::Node& node) const {
    const YAML::Mark mark = node.Mark();
    return mark.line < 0 ? file.string() : fmt::format("{}:{}", file.string(), mark.line + 1);
  }
};

YAML::Node parse_sweep(const fs::path& file) {
  return parse_one_yaml_document(read_config_file(file.string(), "sweep file"), file.string());
}

void require_known_keys(const YAML::Node& map, const std::set<std::string>& known,
                        const std::string& section, const SweepText& sweep) {
  for (const auto& entry : map) {
    const std::string key = entry.first.Scalar();
    if (known.contains(key)) continue;
    std::string expected;
    for (const std::string& k : known) expected += (expected.empty() ? "" : ", ") + k;
    fail("{}: unknown key {}{} (expected {})", sweep.at(entry.first), in_quotes(key), section,
         expected);
  }
}

YAML::Node required_key(const YAML::Node& map, const std::string& key, const std::string& section,
                        const SweepText& sweep) {
  const YAML::Node node = map[key];
  require(node.IsDefined() && !node.IsNull(), "{}: missing key '{}'{}", sweep.at(map), key,
          section);
  return node;
}

std::vector<std::string> string_list(const YAML::Node& node, const std::string& key,
                                     const SweepText& sweep) {
  if (!node.IsDefined() || node.IsNull()) return {};
  require(node.IsSequence(), "{}: {}: expected a list of strings, e.g. [a, b], got {}",
          sweep.at(node), key, describe_node(node));
  std::vector<std::string> out;
  for (const YAML::Node& item : node) {
    require(item.IsScalar(), "{}: {}: expected a string, got {}", sweep.at(item), key,
            describe_node(item));
    out.push_back(item.Scalar());
  }
  return out;
}

std::int64_t integer_at_least(const YAML::Node& node, std::int64_t minimum, const std::string& key,
                              const SweepText& sweep) {
  std::int64_t value = 0;
  try {
    value = node.as<std::int64_t>();
  } catch (const YAML::Exception&) {
    fail("{}: {}: expected an integer >= {}, got {}", sweep.at(node), key, minimum,
         describe_node(node));
  }
  require(value >= minimum, "{}: {}: expected an integer >= {}, got {}", sweep.at(node), key,
          minimum, value);
  return value;
}

// An optional list of integers >= minimum, sorted, duplicates dropped.
std::vector<std::int64_t> sorted_integers(const YAML::Node& node, std::int64_t minimum,
                                          const std::string& key, const std::string& example,
                                          const SweepText& sweep) {
  if (!node.IsDefined() || node.IsNull()) return {};
  require(node.IsSequence(), "{}: {}: expected a list of integers, e.g. {}, got {}", sweep.at(node),
          key, example, describe_node(node));
  std::vector<std::int64_t> out;
  for (const YAML::Node& item : node) out.push_back(integer_at_least(item, minimum, key, sweep));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Config files are named relative to the sweep file's folder.
std::vector<std::string> config_files(const YAML::Node& node, const std::string& key,
                                      const SweepText& sweep) {
  std::vector<std::string> out;
  for (const std::string& name : string_list(node, key, sweep)) {
    const fs::path path = fs::path(name).is_absolute()
                              ? fs::path(name)
                              : (sweep.file.parent_path() / name).lexically_normal();
    require(fs::is_regular_file(path), "{}: {}: config file '{}' not found (looked for '{}')",
            sweep.at(node), key, name, path.string());
    out.push_back(path.string());
  }
  return out;
}

// eval_copy: {span: N, distances: [D, ...], sequences: S}
void read_copy_check(const YAML::Node& node, AblationSweep& s, const SweepText& sweep) {
  require(node.IsMap(),
          "{}: eval_copy: expected a mapping, e.g. {{span: 32, distances: [64, 256]}}, got {}",
          sweep.at(node), describe_node(node));
  require_known_keys(node, {"span", "distances", "sequences"}, " in eval_copy", sweep);
  s.copy_span = integer_at_least(required_key(node, "span", " in eval_copy", sweep), 2,
                                 "eval_copy.span", sweep);
  const YAML::Node distances = required_key(node, "distances", " in eval_copy", sweep);
  s.copy_distances =
      sorted_integers(distances, s.copy_span, "eval_copy.distances", "[64, 256]", sweep);
  require(!s.copy_distances.empty(), "{}: eval_copy.distances: expected at least one distance",
          sweep.at(distances));
  if (const YAML::Node n = node["sequences"]; n.IsDefined() && !n.IsNull())
    s.copy_sequences = integer_at_least(n, 1, "eval_copy.sequences", sweep);
}

bool valid_variant_name(const std::string& name) {
  const bool allowed_chars = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
  // "." and ".." would name the output folder itself or its parent.
  return allowed_chars && name.find_first_not_of('.') != std::string::npos;
}

// What a sweep writes into its out_dir besides the variants' folders: the report
// (train/ablation/report.cpp), the logs, and tools/plot.py's figures, each also as a
// .tmp while it is written. A variant folder of one of these names would collide.
bool names_a_sweep_output(const std::string& name) {
  static const std::set<std::string> outputs = {
      "results.md",        "results.csv",       "differences.csv", "logs",
      "train_loss.png",    "train_loss.svg",    "val_loss.png",    "val_loss.svg",
      "extrapolation.png", "extrapolation.svg", "accuracy.png",    "accuracy.svg"};
  return outputs.contains(name) || name.ends_with(".tmp");
}

AblationVariant read_variant(const YAML::Node& node, const SweepText& sweep) {
  require(node.IsMap(), "{}: variants: expected a mapping with name (and files, overrides), got {}",
          sweep.at(node), describe_node(node));
  require_known_keys(node, {"name", "files", "overrides"}, " in a variant", sweep);
  const YAML::Node name = required_key(node, "name", " in a variant", sweep);
  AblationVariant v;
  v.name = name.IsScalar() ? name.Scalar() : "";
  require(valid_variant_name(v.name),
          "{}: variants: name {} is invalid (expected letters, digits, '_', '.' or '-', not only "
          "dots)",
          sweep.at(name), describe_node(name));
  require(!names_a_sweep_output(v.name),
          "{}: variants: name '{}' is the name of a file or folder the sweep writes into its "
          "out_dir; choose another",
          sweep.at(name), v.name);
  v.where = sweep.at(node);
  v.files = config_files(node["files"], "variant '" + v.name + "': files", sweep);
  v.overrides = string_list(node["overrides"], "variant '" + v.name + "': overrides", sweep);
  return v;
}

// Throws when a variant folder holds a (finished or resumable) run of another config:
// its results would silently stand for the new one.
void require_same_config_as_saved_run(const RunConfig& config, const AblationVariant& variant) {
  const fs::path dir = config.train.out_dir;
  const fs::path saved = dir / "config.yaml";
  const bool has_run = fs::exists(dir / "summary.json") || latest_checkpoint(dir / "checkpoints");
  if (!has_run || !fs::exists(saved)) return;
  std::ifstream in(saved);
  std::ostringstream text;
  text << in.rdbuf();
  const RunConfig old = config_from_yaml(text.str(), saved.string());
  const std::vector<ConfigChange> changes = config_changes(old, config);
  if (changes.empty()) return;
  const ConfigChange& first = changes.front();
  fail(
      "{}: variant '{}': {} was trained with {}={} but the sweep now gives {}; delete {} to "
      "retrain it",
      variant.where, variant.name, dir.string(), first.key, first.before, first.after,
      dir.string());
}

// No file the sweep reads (the sweep file, its configs, each run's data.source and
// tokenizer model, the plot script) is one it writes: a report, a figure, a log, or a file of a
// run.
void require_inputs_not_written(const AblationSweep& sweep, const std::vector<RunConfig>& configs) {
  std::vector<InputFile> inputs = plot_script_inputs();
  inputs.push_back({sweep.file, "the sweep file"});
  for (const std::string& file : sweep.base) inputs.push_back({file, "the base config file"});
  for (const AblationVariant& v : sweep.variants)
    for (const std::string& file : v.files)
      inputs.push_back({file, "the config file of variant '" + v.name + "'"});
  std::error_code missing;
  for (const RunConfig& c : configs) {
    if (fs::exists(c.data.source, missing)) inputs.push_back({c.data.source, "data.source"});
    if (c.data.tokenizer_kind != "bytes")
      inputs.push_back({c.data.tokenizer_model, "data.tokenizer.model"});
  }
  require_not_written(inputs, {sweep.out_dir, names_a_sweep_output, "the sweep in out_dir"});
  for (const RunConfig& c : configs)
    require_not_written(inputs, run_output_folder(c.train.out_dir));
}

}  // namespace

std::string AblationSweep::run_label(std::size_t run) const {
  const AblationVariant& v = variants.at(run / runs_per_variant());
  return seeds.empty() ? v.name : fmt::format("{}/seed-{}", v.name, seeds[run % seeds.size()]);
}

AblationSweep load_sweep(const fs::path& file) {
  const SweepText sweep{file};
  const YAML::Node root = parse_sweep(file);
  require(root.IsMap(), "{}: expected a mapping with out_dir and variants, got {}", sweep.at(root),
          describe_node(root));
  require_known_keys(
      root,
      {"base", "overrides", "out_dir", "eval_lengths", "eval_batches", "eval_sequences",
       "eval_mem_lengths", "eval_knn_sizes", "eval_copy", "seeds", "jobs", "variants"},
      "", sweep);
  AblationSweep s;
  s.file = file;
  s.base = config_files(root["base"], "base", sweep);
  s.overrides = string_list(root["overrides"], "overrides", sweep);
  const YAML::Node out_dir = required_key(root, "out_dir", "", sweep);
  require(out_dir.IsScalar() && !out_dir.Scalar().empty(), "{}: out_dir: expected a path, got {}",
          sweep.at(out_dir), describe_node(out_dir));
  s.out_dir = out_dir.Scalar();
  s.eval_lengths = sorted_integers(root["eval_lengths"], 2, "eval_lengths", "[256, 512]", sweep);
  s.eval_mem_lengths =
      sorted_integers(root["eval_mem_lengths"], 0, "eval_mem_lengths", "[0, 64, 128]", sweep);
  s.eval_knn_sizes =
      sorted_integers(root["eval_knn_sizes"], 0, "eval_knn_sizes", "[256, 1024, 4096]", sweep);
  if (!s.eval_knn_sizes.empty() && s.eval_mem_lengths.empty()) s.eval_mem_lengths = {0};
  if (const YAML::Node copy = root["eval_copy"]; copy.IsDefined() && !copy.IsNull())
    read_copy_check(copy, s, sweep);
  if (const YAML::Node batches = root["eval_batches"]; batches.IsDefined() && !batches.IsNull()) {
    std::int64_t value = 0;
    if (batches.IsScalar() && batches.Scalar() == "all")
      s.eval_whole = true;
    else if (!YAML::convert<std::int64_t>::decode(batches, value) || value < 1)
      fail("{}: eval_batches: expected an integer >= 1 or all, got {}", sweep.at(batches),
           describe_node(batches));
    s.eval_batches = value;
  }
  if (const YAML::Node sequences = root["eval_sequences"];
      sequences.IsDefined() && !sequences.IsNull())
    s.eval_sequences = integer_at_least(sequences, 1, "eval_sequences", sweep);
  if (const YAML::Node seeds = root["seeds"]; seeds.IsDefined() && !seeds.IsNull()) {
    require(seeds.IsSequence() && seeds.size() > 0,
            "{}: seeds: expected a non-empty list of seeds, e.g. [0, 1, 2], got {}",
            sweep.at(seeds), describe_node(seeds));
    for (const YAML::Node& seed : seeds) {
      const auto value = static_cast<std::uint64_t>(integer_at_least(seed, 0, "seeds", sweep));
      require(std::find(s.seeds.begin(), s.seeds.end(), value) == s.seeds.end(),
              "{}: seeds: seed {} is listed twice", sweep.at(seed), value);
      s.seeds.push_back(value);
    }
  }
  if (const YAML::Node jobs = root["jobs"]; jobs.IsDefined() && !jobs.IsNull())
    s.jobs = integer_at_least(jobs, 1, "jobs", sweep);
  const YAML::Node variants = required_key(root, "variants", "", sweep);
  require(variants.IsSequence() && variants.size() > 0,
          "{}: variants: expected a non-empty list of variants (- name: ...), got {}",
          sweep.at(variants), describe_node(variants));
  std::map<std::string, std::string> seen;  // name -> where
  for (const YAML::Node& node : variants) {
    AblationVariant v = read_variant(node, sweep);
    const auto [first, inserted] = seen.emplace(v.name, v.where);
    require(inserted, "{}: variants: duplicate name '{}' (first at {})", v.where, v.name,
            first->second);
    s.variants.push_back(std::move(v));
  }
  return s;
}

std::vector<RunConfig> resolve_variant_configs(const AblationSweep& sweep) {
  std::vector<RunConfig> configs;
  for (const AblationVariant& v : sweep.variants) {
    std::vector<std::string> files = sweep.base, overrides = sweep.overrides;
    files.insert(files.end(), v.files.begin(), v.files.end());
    overrides.insert(overrides.end(), v.overrides.begin(), v.overrides.end());
    RunConfig config;
    try {
      config = load_config(files, overrides);
    } catch (const UsageError& e) {
      fail("{}: variant '{}': {}", v.where, v.name, e.what());
    }
    for (std::size_t k = 0; k < sweep.runs_per_variant(); ++k) {
      RunConfig run = config;
      if (!sweep.seeds.empty()) run.train.seed = sweep.seeds[k];
      run.train.out_dir = (sweep.out_dir / sweep.run_label(configs.size())).string();
      require_same_config_as_saved_run(run, v);
      configs.push_back(std::move(run));
    }
  }
  require_inputs_not_written(sweep, configs);
  return configs;
}

}  // namespace relpos
