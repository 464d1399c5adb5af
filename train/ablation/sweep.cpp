#include "train/ablation/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <ostream>

#include "autograd/error.h"
#include "train/ablation/child_processes.h"
#include "train/ablation/report.h"
#include "train/config/memory_estimate.h"
#include "train/evaluate.h"
#include "train/run_summary.h"
#include "train/store/checkpoint.h"
#include "train/store/checkpoint_folder.h"
#include "train/trainer.h"

namespace relpos {
namespace fs = std::filesystem;
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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
  r.scheme = position_label(config.model);
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
                                            const std::vector<std::int64_t>& lengths,
                                            std::ostream& log) {
  const fs::path checkpoint = resolve_checkpoint(dir);
  RunState run = load_run_for_inference(checkpoint);
  require(run.step == r.steps,
          "variant '{}': the latest checkpoint {} is at step {} but summary.json says the run "
          "finished at step {}",
          r.name, checkpoint.string(), run.step, r.steps);
  std::vector<LengthLoss> curve;
  for (const std::int64_t length : lengths) {
    try {
      const EvalAmount amount{r.eval_batches, r.eval_sequences};
      const EvalPoint point =
          evaluate(*run.model, *run.data, {length}, amount, {}, [&](const EvalProgress& p) {
            log << fmt::format("{}: {}\n", r.name, progress_text(p)) << std::flush;
          })[0];
      curve.push_back({length, point.loss, "", point.accuracy, point.exact_match});
    } catch (const UsageError& e) {
      curve.push_back({length, kNaN, e.what()});
    }
  }
  return curve;
}

// Batches per length; 0: the whole validation split (eval_batches: all).
std::int64_t eval_batches_for(const AblationSweep& sweep, const RunConfig& config) {
  if (sweep.eval_whole) return 0;
  return sweep.eval_batches > 0 ? sweep.eval_batches : config.train.eval_batches;
}

std::int64_t eval_sequences_for(const AblationSweep& sweep) {
  return sweep.eval_whole ? sweep.eval_sequences : 0;
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
  if (!previous || !evaluated_with(*previous, lengths_for(sweep, config),
                                   eval_batches_for(sweep, config), eval_sequences_for(sweep)))
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
    if (previous && evaluated_with(*previous, lengths, eval_batches_for(sweep, config),
                                   eval_sequences_for(sweep)))
      return *previous;
    result = previous ? *previous : training_result(label, config, *read_summary(dir), 0);
  } else {
    result = train_variant(label, config, log);
  }
  result.name = variant;
  result.eval_batches = eval_batches_for(sweep, config);
  result.eval_sequences = eval_sequences_for(sweep);
  result.extrapolation = extrapolation_curve(result, dir, lengths, log);
  write_result(dir / "ablation.json", result);
  return result;
}

}  // namespace

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
