#include "train/ablation.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>

#include "autograd/error.h"
#include "train/atomic_file.h"
#include "train/checkpoint.h"
#include "train/config_schema.h"
#include "train/config_value.h"
#include "train/evaluate.h"
#include "train/memory_estimate.h"
#include "train/metrics.h"
#include "train/run_summary.h"
#include "train/trainer.h"

namespace relpos {
namespace fs = std::filesystem;
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kMiB = 1024.0 * 1024.0;

// ---- the sweep file ----

// Locates nodes of one sweep file for error messages: "sweep.yaml:7".
struct SweepText {
  fs::path file;
  std::string at(const YAML::Node& node) const {
    const YAML::Mark mark = node.Mark();
    return mark.line < 0 ? file.string() : fmt::format("{}:{}", file.string(), mark.line + 1);
  }
};

YAML::Node parse_sweep(const fs::path& file) {
  const std::string text = read_config_file(file.string(), "sweep file");
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail("{}:{}:{}: invalid YAML: {}", file.string(), e.mark.line + 1, e.mark.column + 1, e.msg);
  }
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

bool valid_variant_name(const std::string& name) {
  const bool allowed_chars = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
  // "." and ".." would name the output folder itself or its parent.
  return allowed_chars && name.find_first_not_of('.') != std::string::npos;
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
  v.where = sweep.at(node);
  v.files = config_files(node["files"], "variant '" + v.name + "': files", sweep);
  v.overrides = string_list(node["overrides"], "variant '" + v.name + "': overrides", sweep);
  return v;
}

// ---- resolving and checking the variants' configs ----

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
  for (const ConfigKey& key : config_schema()) {
    const std::string before = config_value_text(key, old), now = config_value_text(key, config);
    require(before == now,
            "{}: variant '{}': {} was trained with {}={} but the sweep now gives {}; delete {} to "
            "retrain it",
            variant.where, variant.name, dir.string(), key.path, before, now, dir.string());
  }
}

// ---- collecting ----

// The "val_loss" of the run's last evaluation line (a resumed run's repeats replace the
// earlier ones); unreadable lines (e.g. one cut off by a kill) are skipped. NaN when none.
double last_val_loss(const fs::path& dir) {
  std::map<std::int64_t, double> by_step;
  std::ifstream in(dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) continue;
    if (j.contains("val_loss") && j["val_loss"].is_number())
      by_step[j["step"].get<std::int64_t>()] = j["val_loss"].get<double>();
  }
  return by_step.empty() ? kNaN : by_step.rbegin()->second;
}

std::vector<std::int64_t> lengths_for(const AblationSweep& sweep, const RunConfig& config) {
  std::vector<std::int64_t> lengths = sweep.eval_lengths;
  lengths.push_back(config.data.seq_len);
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  return lengths;
}

// The facts of a finished training run; `resumed_at` is the step this process started from.
VariantResult training_result(const std::string& name, const RunConfig& config,
                              const TrainSummary& summary, std::int64_t resumed_at) {
  VariantResult r;
  r.name = name;
  r.scheme = config.model.position.scheme;
  r.data_source = config.data.source;
  r.train_length = config.data.seq_len;
  r.steps = summary.steps;
  r.parameters = summary.parameters;
  r.final_val_loss = last_val_loss(config.train.out_dir);
  r.tokens_per_second = summary.tokens_per_second;
  r.wall_seconds = summary.wall_seconds;
  r.peak_rss_bytes = summary.peak_rss_bytes;
  r.peak_tensor_bytes = summary.peak_tensor_bytes;
  if (resumed_at >= summary.steps) {
    r.tokens_per_second = r.wall_seconds = kNaN;
    r.peak_rss_bytes = r.peak_tensor_bytes = 0;
    r.notes.push_back(fmt::format(
        "{}: finished from its final checkpoint (step {}); speed, wall time and peak memory were "
        "not measured",
        name, resumed_at));
  } else if (resumed_at > 0) {
    r.notes.push_back(fmt::format(
        "{}: resumed at step {}; tokens/s, wall time and peak memory cover steps {}..{} only", name,
        resumed_at, resumed_at + 1, summary.steps));
  }
  return r;
}

// Resets this process's peak-RSS high-water mark to its current RSS, so that each
// variant's peak_rss_bytes is its own (Linux >= 4.0; elsewhere the peak is cumulative).
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// Trains the variant from scratch, or from its latest checkpoint, and writes summary.json.
VariantResult train_variant(const std::string& name, const RunConfig& config, std::ostream& log) {
  const fs::path dir = config.train.out_dir;
  reset_peak_rss();
  RunState run = build_run(config);
  const auto skipped = [&](const std::string& line) { log << line << "\n"; };
  if (const auto checkpoint = latest_verified_checkpoint(dir / "checkpoints", skipped)) {
    restore_run(run, load_checkpoint_for(run, *checkpoint), *checkpoint);
    log << fmt::format("resume {} from step {} ({})\n", name, run.step, checkpoint->string());
  } else {
    log << fmt::format("train {} in {}\n", name, dir.string());
  }
  log << std::flush;
  const std::int64_t resumed_at = run.step;
  // An attempt that never reached its first checkpoint is moved aside and redone; a stop
  // (StopRequested) ends the sweep, and rerunning it resumes here.
  const TrainSummary summary = train(run, RunStart::overwrite);
  log << format_summary(summary);
  return training_result(name, config, summary, resumed_at);
}

// The final model's loss at each length; UsageError at a length (e.g. learned
// positions beyond max_len) gives NaN and the error as the note.
std::vector<LengthLoss> extrapolation_curve(const VariantResult& r, const fs::path& dir,
                                            const std::vector<std::int64_t>& lengths) {
  const fs::path checkpoint = resolve_checkpoint(dir);
  RunState run = load_run_for_inference(checkpoint);
  require(run.step == r.steps,
          "variant '{}': the latest checkpoint {} is at step {} but summary.json says the run "
          "finished at step {}",
          r.name, checkpoint.string(), run.step, r.steps);
  std::vector<LengthLoss> curve;
  for (const std::int64_t length : lengths) {
    try {
      curve.push_back(
          {length, evaluate(*run.model, *run.data, {length}, r.eval_batches)[0].loss, ""});
    } catch (const UsageError& e) {
      curve.push_back({length, kNaN, e.what()});
    }
  }
  return curve;
}

// ---- ablation.json: one variant's collected results ----

nlohmann::json number_or_null(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

double number_or_nan(const nlohmann::json& j) { return j.is_null() ? kNaN : j.get<double>(); }

void write_result(const fs::path& file, const VariantResult& r) {
  nlohmann::json curve = nlohmann::json::array();
  for (const LengthLoss& p : r.extrapolation)
    curve.push_back({{"length", p.length},
                     {"loss", number_or_null(p.loss)},
                     {"bits_per_byte", number_or_null(p.loss / std::numbers::ln2)},
                     {"note", p.note}});
  const nlohmann::json j = {{"name", r.name},
                            {"scheme", r.scheme},
                            {"data", r.data_source},
                            {"train_length", r.train_length},
                            {"steps", r.steps},
                            {"parameters", r.parameters},
                            {"final_val_loss", number_or_null(r.final_val_loss)},
                            {"final_val_bpb", number_or_null(r.final_val_loss / std::numbers::ln2)},
                            {"tokens_per_second", number_or_null(r.tokens_per_second)},
                            {"wall_seconds", number_or_null(r.wall_seconds)},
                            {"peak_rss_bytes", r.peak_rss_bytes},
                            {"peak_tensor_bytes", r.peak_tensor_bytes},
                            {"eval_batches", r.eval_batches},
                            {"extrapolation", curve},
                            {"notes", r.notes}};
  write_file_atomic(file, j.dump(2) + "\n");
}

// nullopt when missing or unreadable (then it is recomputed).
std::optional<VariantResult> read_result(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  try {
    VariantResult r;
    r.name = j.at("name").get<std::string>();
    r.scheme = j.at("scheme").get<std::string>();
    r.data_source = j.at("data").get<std::string>();
    r.train_length = j.at("train_length").get<std::int64_t>();
    r.steps = j.at("steps").get<std::int64_t>();
    r.parameters = j.at("parameters").get<std::int64_t>();
    r.final_val_loss = number_or_nan(j.at("final_val_loss"));
    r.tokens_per_second = number_or_nan(j.at("tokens_per_second"));
    r.wall_seconds = number_or_nan(j.at("wall_seconds"));
    r.peak_rss_bytes = j.at("peak_rss_bytes").get<std::size_t>();
    r.peak_tensor_bytes = j.at("peak_tensor_bytes").get<std::size_t>();
    r.eval_batches = j.at("eval_batches").get<std::int64_t>();
    for (const auto& p : j.at("extrapolation"))
      r.extrapolation.push_back({p.at("length").get<std::int64_t>(), number_or_nan(p.at("loss")),
                                 p.at("note").get<std::string>()});
    r.notes = j.at("notes").get<std::vector<std::string>>();
    return r;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

bool evaluated_with(const VariantResult& r, const std::vector<std::int64_t>& lengths,
                    std::int64_t batches) {
  std::vector<std::int64_t> done;
  for (const LengthLoss& p : r.extrapolation) done.push_back(p.length);
  return r.eval_batches == batches && done == lengths;
}

VariantResult run_variant(const AblationSweep& sweep, const std::string& name,
                          const RunConfig& config, std::ostream& log) {
  const fs::path dir = config.train.out_dir;
  const std::vector<std::int64_t> lengths = lengths_for(sweep, config);
  const std::int64_t batches =
      sweep.eval_batches > 0 ? sweep.eval_batches : config.train.eval_batches;
  const std::optional<VariantResult> previous = read_result(dir / "ablation.json");
  VariantResult result;
  // A summary of fewer steps is that of a stopped run: it is resumed.
  if (const auto summary = read_summary(dir); summary && summary->steps >= config.train.steps) {
    log << fmt::format("skip {}: finished\n", name);
    if (previous && evaluated_with(*previous, lengths, batches)) return *previous;
    result = previous ? *previous : training_result(name, config, *summary, 0);
  } else {
    result = train_variant(name, config, log);
  }
  result.eval_batches = batches;
  result.extrapolation = extrapolation_curve(result, dir, lengths);
  write_result(dir / "ablation.json", result);
  return result;
}

// ---- the report ----

std::string number(double value, int decimals) {
  return std::isfinite(value) ? fmt::format("{:.{}f}", value, decimals) : "n/a";
}

std::string mib(std::size_t bytes) {
  return bytes > 0 ? fmt::format("{:.1f}", static_cast<double>(bytes) / kMiB) : "n/a";
}

// Every evaluation length of any variant, ascending.
std::vector<std::int64_t> all_lengths(const std::vector<VariantResult>& results) {
  std::set<std::int64_t> lengths;
  for (const VariantResult& r : results)
    for (const LengthLoss& p : r.extrapolation) lengths.insert(p.length);
  return {lengths.begin(), lengths.end()};
}

const LengthLoss* loss_at(const VariantResult& r, std::int64_t length) {
  for (const LengthLoss& p : r.extrapolation)
    if (p.length == length) return &p;
  return nullptr;
}

// The `none` variant ("none", or "none-<suffix>") trained on the same data at the same length.
const VariantResult* baseline_of(const VariantResult& r,
                                 const std::vector<VariantResult>& results) {
  for (const VariantResult& b : results)
    if ((b.name == "none" || b.name.starts_with("none-")) && b.data_source == r.data_source &&
        b.train_length == r.train_length)
      return &b;
  return nullptr;
}

std::string markdown_row(const std::vector<std::string>& cells) {
  std::string row = "|";
  for (const std::string& c : cells) row += " " + c + " |";
  return row + "\n";
}

std::string main_table(const std::vector<VariantResult>& results,
                       const std::vector<std::int64_t>& lengths) {
  std::vector<std::string> header = {"variant", "scheme",         "data",     "train L",
                                     "params",  "final val loss", "bits/byte"};
  for (const std::int64_t l : lengths) header.push_back(fmt::format("loss @{}", l));
  for (const char* h : {"tokens/s", "peak RSS MiB", "wall s"}) header.push_back(h);
  std::string out = markdown_row(header);
  out += markdown_row(std::vector<std::string>(header.size(), "---"));
  for (const VariantResult& r : results) {
    std::vector<std::string> row = {r.name,
                                    r.scheme,
                                    r.data_source,
                                    std::to_string(r.train_length),
                                    std::to_string(r.parameters),
                                    number(r.final_val_loss, 4),
                                    number(r.final_val_loss / std::numbers::ln2, 4)};
    for (const std::int64_t l : lengths) {
      const LengthLoss* p = loss_at(r, l);
      row.push_back(p ? number(p->loss, 4) : "");
    }
    row.push_back(number(r.tokens_per_second, 0));
    row.push_back(mib(r.peak_rss_bytes));
    row.push_back(number(r.wall_seconds, 1));
    out += markdown_row(row);
  }
  return out;
}

std::string relative_table(const std::vector<VariantResult>& results,
                           const std::vector<std::int64_t>& lengths) {
  std::vector<std::string> header = {"variant", "baseline", "step time ×", "final val loss ×"};
  for (const std::int64_t l : lengths) header.push_back(fmt::format("loss @{} ×", l));
  std::string out = markdown_row(header);
  out += markdown_row(std::vector<std::string>(header.size(), "---"));
  for (const VariantResult& r : results) {
    const VariantResult* b = baseline_of(r, results);
    std::vector<std::string> row = {r.name, b ? b->name : "–"};
    // Time per step relative to the baseline: both process the same tokens per step.
    row.push_back(b ? number(b->tokens_per_second / r.tokens_per_second, 2) : "–");
    row.push_back(b ? number(r.final_val_loss / b->final_val_loss, 3) : "–");
    for (const std::int64_t l : lengths) {
      const LengthLoss* p = loss_at(r, l);
      const LengthLoss* q = b ? loss_at(*b, l) : nullptr;
      row.push_back(p && q ? number(p->loss / q->loss, 3) : "–");
    }
    out += markdown_row(row);
  }
  return out;
}

std::string results_markdown(const AblationSweep& sweep,
                             const std::vector<VariantResult>& results) {
  const std::vector<std::int64_t> lengths = all_lengths(results);
  std::string out = fmt::format("# Ablation: {}\n\n", sweep.file.string());
  out += fmt::format(
      "{} variants, each trained in `{}/<variant>`. Losses are the final model's validation "
      "cross-entropy in nats per scored token (per byte on text); bits/byte = loss / ln 2. "
      "\"loss @L\" is evaluated at length L (the training length is `train L`). Peak RSS is "
      "the process's high-water mark during the variant's training.\n\n",
      results.size(), sweep.out_dir.string());
  out += main_table(results, lengths);
  if (std::any_of(results.begin(), results.end(),
                  [&](const VariantResult& r) { return baseline_of(r, results) != nullptr; })) {
    out +=
        "\n## Relative to none\n\nEach variant against the `none` variant (named `none` or "
        "`none-<suffix>`) trained on the same data at the same length: step time × is its "
        "time per step over the baseline's, loss × its loss over the baseline's (below 1: "
        "better).\n\n";
    out += relative_table(results, lengths);
  }
  std::vector<std::string> notes;
  for (const VariantResult& r : results) {
    notes.insert(notes.end(), r.notes.begin(), r.notes.end());
    for (const LengthLoss& p : r.extrapolation)
      if (!p.note.empty()) notes.push_back(fmt::format("{} @{}: {}", r.name, p.length, p.note));
  }
  if (!notes.empty()) {
    out += "\n## Notes\n\n";
    for (const std::string& n : notes) out += "- " + n + "\n";
  }
  return out;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csv_number(double value, int decimals) {
  return std::isfinite(value) ? fmt::format("{:.{}f}", value, decimals) : "nan";
}

std::string results_csv(const std::vector<VariantResult>& results) {
  const std::vector<std::int64_t> lengths = all_lengths(results);
  std::string out = "variant,scheme,data,train_length,steps,params,final_val_loss,final_val_bpb";
  for (const std::int64_t l : lengths) out += fmt::format(",loss_at_{}", l);
  out += ",tokens_per_s,peak_rss_mib,peak_tensor_mib,wall_s\n";
  for (const VariantResult& r : results) {
    out += fmt::format("{},{},{},{},{},{},{},{}", csv_field(r.name), csv_field(r.scheme),
                       csv_field(r.data_source), r.train_length, r.steps, r.parameters,
                       csv_number(r.final_val_loss, 6),
                       csv_number(r.final_val_loss / std::numbers::ln2, 6));
    for (const std::int64_t l : lengths) {
      out += ',';
      if (const LengthLoss* p = loss_at(r, l)) out += csv_number(p->loss, 6);
    }
    const auto bytes_mib = [](std::size_t b) {
      return b > 0 ? csv_number(static_cast<double>(b) / kMiB, 3) : std::string("nan");
    };
    out += fmt::format(",{},{},{},{}\n", csv_number(r.tokens_per_second, 1),
                       bytes_mib(r.peak_rss_bytes), bytes_mib(r.peak_tensor_bytes),
                       csv_number(r.wall_seconds, 3));
  }
  return out;
}

}  // namespace

AblationSweep load_sweep(const fs::path& file) {
  const SweepText sweep{file};
  const YAML::Node root = parse_sweep(file);
  require(root.IsMap(), "{}: expected a mapping with out_dir and variants, got {}", sweep.at(root),
          describe_node(root));
  require_known_keys(root,
                     {"base", "overrides", "out_dir", "eval_lengths", "eval_batches", "variants"},
                     "", sweep);
  AblationSweep s;
  s.file = file;
  s.base = config_files(root["base"], "base", sweep);
  s.overrides = string_list(root["overrides"], "overrides", sweep);
  const YAML::Node out_dir = required_key(root, "out_dir", "", sweep);
  require(out_dir.IsScalar() && !out_dir.Scalar().empty(), "{}: out_dir: expected a path, got {}",
          sweep.at(out_dir), describe_node(out_dir));
  s.out_dir = out_dir.Scalar();
  if (const YAML::Node lengths = root["eval_lengths"]; lengths.IsDefined() && !lengths.IsNull()) {
    require(lengths.IsSequence(),
            "{}: eval_lengths: expected a list of lengths, e.g. [256, 512], "
            "got {}",
            sweep.at(lengths), describe_node(lengths));
    for (const YAML::Node& l : lengths)
      s.eval_lengths.push_back(integer_at_least(l, 2, "eval_lengths", sweep));
    std::sort(s.eval_lengths.begin(), s.eval_lengths.end());
    s.eval_lengths.erase(std::unique(s.eval_lengths.begin(), s.eval_lengths.end()),
                         s.eval_lengths.end());
  }
  if (const YAML::Node batches = root["eval_batches"]; batches.IsDefined() && !batches.IsNull())
    s.eval_batches = integer_at_least(batches, 1, "eval_batches", sweep);
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
    config.train.out_dir = (sweep.out_dir / v.name).string();
    require_same_config_as_saved_run(config, v);
    configs.push_back(std::move(config));
  }
  return configs;
}

void check_variants(const AblationSweep& sweep, const std::vector<RunConfig>& configs,
                    bool build_models) {
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const AblationVariant& v = sweep.variants[i];
    try {
      if (build_models) {
        build_run(configs[i]);  // checks the memory estimate, then builds and opens everything
      } else {
        require_fits_in_memory(configs[i]);
        make_source(configs[i].data);
      }
    } catch (const UsageError& e) {
      fail("{}: variant '{}': {}", v.where, v.name, e.what());
    }
  }
}

std::vector<VariantResult> run_sweep(const AblationSweep& sweep, std::ostream& log) {
  const std::vector<RunConfig> configs = resolve_variant_configs(sweep);
  check_variants(sweep, configs, false);  // before any variant trains
  std::vector<VariantResult> results;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const AblationVariant& v = sweep.variants[i];
    log << fmt::format("== variant {}/{}: {}\n", i + 1, configs.size(), v.name) << std::flush;
    try {
      results.push_back(run_variant(sweep, v.name, configs[i], log));
    } catch (const UsageError& e) {
      fail("{}: variant '{}': {}", v.where, v.name, e.what());
    }
  }
  write_ablation_report(sweep, results);
  return results;
}

void write_ablation_report(const AblationSweep& sweep, const std::vector<VariantResult>& results) {
  std::error_code error;
  fs::create_directories(sweep.out_dir, error);
  require(!error, "out_dir '{}': cannot create it: {}", sweep.out_dir.string(), error.message());
  write_file_atomic(sweep.out_dir / "results.md", results_markdown(sweep, results));
  write_file_atomic(sweep.out_dir / "results.csv", results_csv(results));
}

}  // namespace relpos
