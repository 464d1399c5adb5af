#include "train/ablation/ablation.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>

#include "autograd/error.h"
#include "train/config/config_schema.h"
#include "train/config/config_value.h"
#include "train/config/memory_estimate.h"
#include "train/evaluate.h"
#include "train/metrics.h"
#include "train/run_summary.h"
#include "train/stop_signal.h"
#include "train/store/atomic_file.h"
#include "train/store/checkpoint.h"
#include "train/trainer.h"

namespace relpos {
namespace fs = std::filesystem;
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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

// What a sweep writes into its out_dir besides the variants' folders: the report
// (train/ablation_report.cpp), the logs, and tools/plot.py's figures, each also as a
// .tmp while it is written. A variant folder of one of these names would collide.
bool names_a_sweep_output(const std::string& name) {
  static const std::set<std::string> outputs = {
      "results.md",        "results.csv",  "logs",         "train_loss.png",
      "train_loss.svg",    "val_loss.png", "val_loss.svg", "extrapolation.png",
      "extrapolation.svg", "accuracy.png", "accuracy.svg"};
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
  r.seed = config.train.seed;
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
      const EvalPoint point = evaluate(*run.model, *run.data, {length}, r.eval_batches)[0];
      curve.push_back({length, point.loss, "", point.accuracy, point.exact_match});
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
                     {"accuracy", number_or_null(p.accuracy)},
                     {"exact_match", number_or_null(p.exact_match)},
                     {"note", p.note}});
  const nlohmann::json j = {{"name", r.name},
                            {"seed", r.seed},
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
    r.seed = j.at("seed").get<std::uint64_t>();
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
                                 p.at("note").get<std::string>(), number_or_nan(p.at("accuracy")),
                                 number_or_nan(p.at("exact_match"))});
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

std::int64_t eval_batches_for(const AblationSweep& sweep, const RunConfig& config) {
  return sweep.eval_batches > 0 ? sweep.eval_batches : config.train.eval_batches;
}

bool finished_training(const RunConfig& config) {
  // A summary of fewer steps is that of a stopped run: it is resumed.
  const auto summary = read_summary(config.train.out_dir);
  return summary && summary->steps >= config.train.steps;
}

// The stored results of a run that is finished and evaluated with the sweep's settings.
std::optional<VariantResult> finished_result(const AblationSweep& sweep, const RunConfig& config) {
  if (!finished_training(config)) return std::nullopt;
  auto previous = read_result(fs::path(config.train.out_dir) / "ablation.json");
  if (!previous ||
      !evaluated_with(*previous, lengths_for(sweep, config), eval_batches_for(sweep, config)))
    return std::nullopt;
  return previous;
}

// Trains (or resumes) and evaluates one run; `label` names it in the log and notes.
VariantResult run_variant(const AblationSweep& sweep, const std::string& variant,
                          const std::string& label, const RunConfig& config, std::ostream& log) {
  const fs::path dir = config.train.out_dir;
  const std::vector<std::int64_t> lengths = lengths_for(sweep, config);
  const std::optional<VariantResult> previous = read_result(dir / "ablation.json");
  VariantResult result;
  if (finished_training(config)) {
    log << fmt::format("skip {}: finished\n", label);
    if (previous && evaluated_with(*previous, lengths, eval_batches_for(sweep, config)))
      return *previous;
    result = previous ? *previous : training_result(label, config, *read_summary(dir), 0);
  } else {
    result = train_variant(label, config, log);
  }
  result.name = variant;
  result.eval_batches = eval_batches_for(sweep, config);
  result.extrapolation = extrapolation_curve(result, dir, lengths);
  write_result(dir / "ablation.json", result);
  return result;
}

fs::path log_file(const AblationSweep& sweep, std::size_t run) {
  std::string name = sweep.run_label(run);
  std::replace(name.begin(), name.end(), '/', '.');
  return sweep.out_dir / "logs" / (name + ".log");
}

// Starts `<executable> ablate <sweep> --run-index <run> --parent-pid <this process>`
// (it stops when this process ends, however it ends) with stdout and stderr appended to
// the run's log file.
pid_t start_child(const AblationSweep& sweep, std::size_t run, const fs::path& executable) {
  const fs::path log = log_file(sweep, run);
  std::error_code error;
  fs::create_directories(log.parent_path(), error);
  require(!error, "out_dir '{}': cannot create {}: {}", sweep.out_dir.string(),
          log.parent_path().string(), error.message());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  // Its own process group: a Ctrl-C reaches the sweep alone, which passes it on once.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  const std::string index = std::to_string(run), sweep_file = sweep.file.string();
  std::vector<std::string> args = {
      executable.string(),       "ablate", sweep_file, "--run-index", index, "--parent-pid",
      std::to_string(::getpid())};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int status =
      posix_spawn(&pid, executable.c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  require(status == 0, "cannot start '{}': {}", executable.string(), std::strerror(status));
  return pid;
}

// The size of a child's log before it starts (the log is appended to).
std::uintmax_t log_size(const fs::path& file) {
  std::error_code missing;
  const std::uintmax_t size = fs::file_size(file, missing);
  return missing ? 0 : size;
}

// The reason a child failed, for the sweep's error: its own error line ("relpos: ...")
// written after `from`, else its last line. Another process may write to the same log
// (a run of an earlier sweep still stopping), so the last line alone can be its.
std::string failure_line(const fs::path& file, std::uintmax_t from) {
  std::ifstream in(file);
  in.seekg(static_cast<std::streamoff>(from));
  std::string line, last, error;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    last = line;
    if (line.starts_with("relpos: ")) error = line;
  }
  return error.empty() ? last : error;
}

// Runs every run not yet finished, `jobs` at a time, in child processes. SIGINT or
// SIGTERM is passed on to the running children (which stop after their current step and
// save), no new run starts, and StopRequested is thrown once they have ended.
void run_children(const AblationSweep& sweep, const std::vector<std::size_t>& pending,
                  const fs::path& executable, const std::function<void(std::size_t)>& finished,
                  std::ostream& log) {
  require(!executable.empty(), "jobs {}: running runs in parallel needs the relpos executable",
          sweep.jobs);
  std::map<pid_t, std::size_t> running;
  std::map<pid_t, std::uintmax_t> log_start;  // each child's log size when it started
  std::size_t next = 0;
  std::string failure;
  const StopSignals stop;
  int forwarded = 0;
  while (next < pending.size() || !running.empty()) {
    if (stop.requested() != 0 && forwarded == 0) {
      forwarded = stop.requested();
      log << fmt::format("{}: stopping the running runs after their current step\n",
                         signal_name(forwarded))
          << std::flush;
      for (const auto& [pid, run] : running) ::kill(pid, forwarded);
    }
    while (failure.empty() && forwarded == 0 && next < pending.size() &&
           running.size() < static_cast<std::size_t>(sweep.jobs)) {
      const std::size_t run = pending[next++];
      const std::uintmax_t start = log_size(log_file(sweep, run));
      const pid_t child = start_child(sweep, run, executable);
      running[child] = run;
      log_start[child] = start;
      log << fmt::format("start {} (log: {})\n", sweep.run_label(run),
                         log_file(sweep, run).string())
          << std::flush;
    }
    if (running.empty()) break;
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid == 0 || (pid < 0 && errno == EINTR)) {
      ::usleep(50'000);  // polled, so that a stop request is seen while the children run
      continue;
    }
    require(pid > 0, "waiting for the sweep's runs: {}", std::strerror(errno));
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const std::size_t run = it->second;
    running.erase(it);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      finished(run);
    } else if (forwarded != 0) {
      log << fmt::format("stopped {}\n", sweep.run_label(run)) << std::flush;
    } else if (failure.empty()) {
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      failure = fmt::format("run {} failed (exit {}; {}): {}", sweep.run_label(run), code,
                            log_file(sweep, run).string(),
                            failure_line(log_file(sweep, run), log_start[pid]));
      log << failure << "\n" << std::flush;  // the others finish their current run first
    }
  }
  if (forwarded != 0)
    throw StopRequested(forwarded, fmt::format("the sweep stopped on {}; rerun it to continue",
                                               signal_name(forwarded)));
  require(failure.empty(), "{}", failure);
}

}  // namespace

AblationSweep load_sweep(const fs::path& file) {
  const SweepText sweep{file};
  const YAML::Node root = parse_sweep(file);
  require(root.IsMap(), "{}: expected a mapping with out_dir and variants, got {}", sweep.at(root),
          describe_node(root));
  require_known_keys(
      root,
      {"base", "overrides", "out_dir", "eval_lengths", "eval_batches", "seeds", "jobs", "variants"},
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
  return configs;
}

void check_variants(const AblationSweep& sweep, const std::vector<RunConfig>& configs,
                    bool build_models) {
  // A variant's runs differ only in their seed: its first one is checked.
  for (std::size_t i = 0; i < configs.size(); i += sweep.runs_per_variant()) {
    const AblationVariant& v = sweep.variants[i / sweep.runs_per_variant()];
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

namespace {

VariantResult run_at(const AblationSweep& sweep, const std::vector<RunConfig>& configs,
                     std::size_t run, std::ostream& log) {
  const AblationVariant& v = sweep.variants[run / sweep.runs_per_variant()];
  try {
    return run_variant(sweep, v.name, sweep.run_label(run), configs[run], log);
  } catch (const UsageError& e) {
    fail("{}: variant '{}': {}", v.where, v.name, e.what());
  }
}

}  // namespace

VariantResult run_one(const AblationSweep& sweep, std::size_t run, std::ostream& log) {
  const std::vector<RunConfig> configs = resolve_variant_configs(sweep);
  require(run < configs.size(), "--run-index {}: the sweep has {} runs (0..{})", run,
          configs.size(), configs.size() - 1);
  return run_at(sweep, configs, run, log);
}

std::vector<VariantResult> run_sweep(const AblationSweep& sweep, std::ostream& log,
                                     const fs::path& executable) {
  const std::vector<RunConfig> configs = resolve_variant_configs(sweep);
  check_variants(sweep, configs, false);  // before any variant trains
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::optional<VariantResult>> results(configs.size());
  SweepProgress progress{0, configs.size(), 0, sweep.variants.size(), 0, 0.0};
  const auto record = [&](std::size_t run, VariantResult result, bool measured) {
    results[run] = std::move(result);
    ++progress.runs_done;
    progress.measured += measured ? 1 : 0;
    const std::size_t per = sweep.runs_per_variant(), first = run / per * per;
    if (std::all_of(results.begin() + static_cast<std::ptrdiff_t>(first),
                    results.begin() + static_cast<std::ptrdiff_t>(first + per),
                    [](const auto& r) { return r.has_value(); }))
      ++progress.variants_done;
    progress.elapsed_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<std::size_t> pending;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    if (auto done = finished_result(sweep, configs[i])) {
      log << fmt::format("skip {}: finished\n", sweep.run_label(i));
      record(i, std::move(*done), false);
    } else {
      pending.push_back(i);
    }
  }
  if (!pending.empty()) log << progress_line(progress) << "\n" << std::flush;
  if (sweep.jobs > 1) {
    run_children(
        sweep, pending, executable,
        [&](std::size_t run) {
          const auto result = read_result(fs::path(configs[run].train.out_dir) / "ablation.json");
          require(result.has_value(), "run {}: its process ended without writing {}",
                  sweep.run_label(run), configs[run].train.out_dir + "/ablation.json");
          record(run, *result, true);
          log << fmt::format("done {}\n{}\n", sweep.run_label(run), progress_line(progress))
              << std::flush;
        },
        log);
  } else {
    for (const std::size_t run : pending) {
      log << fmt::format("== run {}/{}: {}\n", run + 1, configs.size(), sweep.run_label(run))
          << std::flush;
      record(run, run_at(sweep, configs, run, log), true);
      log << progress_line(progress) << "\n" << std::flush;
    }
  }
  std::vector<VariantResult> out;
  for (auto& r : results) out.push_back(std::move(*r));
  write_ablation_report(sweep, out);
  return out;
}

}  // namespace relpos
