#include "train/ablation/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <ostream>
#include <set>

#include "autograd/error.h"
#include "data/data_source.h"
#include "data/tasks.h"
#include "train/ablation/child_processes.h"
#include "train/ablation/report.h"
#include "train/config/memory_estimate.h"
#include "train/copy_check.h"
#include "train/evaluate.h"
#include "train/evaluate_stream.h"
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
std::vector<LengthLoss> extrapolation_curve(const VariantResult& r, RunState& run,
                                            const std::vector<std::int64_t>& lengths,
                                            std::ostream& log) {
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

// The final model's loss on the validation streams at its training length at each memory
// point (eval_batches segments per stream, or all), one data.batch_size rows of streams as
// `relpos eval --mem-len --knn-size` reads them; a UsageError gives NaN and the note.
std::vector<MemoryLoss> memory_curve(const VariantResult& r, RunState& run,
                                     std::vector<MemoryLoss> points, std::ostream& log) {
  const auto* corpus = dynamic_cast<const CorpusSource*>(run.data.get());
  const std::int64_t segments =
      r.eval_batches > 0 ? r.eval_batches : std::numeric_limits<std::int64_t>::max();
  const bool has_knn = run.config.model.knn_memory.enabled();
  for (MemoryLoss& p : points) {
    log << fmt::format("{}: loss with memory {} at {}\n", r.name,
                       memory_label(p.mem_len, p.knn_size), r.train_length)
        << std::flush;
    try {
      require(corpus != nullptr, "memory evaluation needs a text corpus, not '{}'",
              run.config.data.source);
      const std::vector<std::int64_t> knn_sizes =
          has_knn ? std::vector<std::int64_t>{p.knn_size} : std::vector<std::int64_t>{};
      p.loss = evaluate_streams(*run.model, corpus->corpus().validation, {r.train_length},
                                {p.mem_len}, run.config.data.batch_size, segments, knn_sizes,
                                run.data->tokenizer())[0]
                   .loss;
    } catch (const UsageError& e) {
      p.note = e.what();
    }
  }
  return points;
}

// Batches per length; 0: the whole validation split (eval_batches: all).
std::int64_t eval_batches_for(const AblationSweep& sweep, const RunConfig& config) {
  if (sweep.eval_whole) return 0;
  return sweep.eval_batches > 0 ? sweep.eval_batches : config.train.eval_batches;
}

std::int64_t eval_sequences_for(const AblationSweep& sweep) {
  return sweep.eval_whole ? sweep.eval_sequences : 0;
}

// What the sweep evaluates a run at, as a VariantResult without values: the lengths, the
// amount, the memory points and the copy check's readings and distances. The memory
// points vary one memory at a time: every eval_mem_lengths entry with the kNN memory as
// trained (model.knn_memory.size; 0 without a kNN layer), and, for a model with a kNN
// layer, every eval_knn_sizes entry without segment memory; ordered, duplicates dropped.
// The copy check reads one window without eval_mem_lengths, else segments at each point.
VariantResult planned_evaluation(const AblationSweep& sweep, const RunConfig& config) {
  VariantResult plan;
  plan.eval_batches = eval_batches_for(sweep, config);
  plan.eval_sequences = eval_sequences_for(sweep);
  for (const std::int64_t length : lengths_for(sweep, config))
    plan.extrapolation.push_back({length, kNaN, ""});
  const bool has_knn = config.model.knn_memory.enabled();
  std::set<std::pair<std::int64_t, std::int64_t>> points;  // (mem_len, knn_size)
  for (const std::int64_t mem_len : sweep.eval_mem_lengths)
    points.emplace(mem_len, has_knn ? config.model.knn_memory.size : 0);
  if (has_knn)
    for (const std::int64_t knn_size : sweep.eval_knn_sizes) points.emplace(0, knn_size);
  for (const auto& point : points) plan.memory.push_back({point.first, point.second, kNaN, ""});
  if (sweep.copy_span > 0) {
    plan.copy_span = sweep.copy_span;
    plan.copy_sequences = sweep.copy_sequences;
    const bool segments = !plan.memory.empty();
    const std::vector<MemoryLoss> readings =
        segments ? plan.memory : std::vector<MemoryLoss>{{0, 0, kNaN, ""}};
    for (const MemoryLoss& m : readings)
      for (const std::int64_t distance : sweep.copy_distances)
        plan.copy.push_back({distance, segments, m.mem_len, m.knn_size, kNaN, kNaN, ""});
  }
  return plan;
}

// The copy check of the run's final model at each planned point (train/copy_check.h, the
// sequences of kCopyCheckSeed); a UsageError gives NaN and the note.
std::vector<CopyGain> copy_curve(const VariantResult& r, RunState& run,
                                 std::vector<CopyGain> points, std::ostream& log) {
  const auto* corpus = dynamic_cast<const CorpusSource*>(run.data.get());
  for (CopyGain& p : points) {
    log << fmt::format("{}: {} ({} sequences, span {})\n", r.name, copy_label(p), r.copy_sequences,
                       r.copy_span)
        << std::flush;
    try {
      require(corpus != nullptr, "the copy check needs a text corpus, not '{}'",
              run.config.data.source);
      const CopyReading reading{p.segments ? r.train_length : 0, p.mem_len, p.knn_size};
      const CopyCheckPoint c =
          copy_check(*run.model, corpus->corpus().validation, r.copy_span, {p.distance},
                     r.copy_sequences, run.config.data.batch_size, kCopyCheckSeed, reading)[0];
      p.loss_repeat = c.loss_repeat;
      p.loss_control = c.loss_control;
    } catch (const UsageError& e) {
      p.note = e.what();
    }
  }
  return points;
}

// Evaluates the run's final model (the latest checkpoint) into `r` as `plan` says.
void evaluate_final_model(VariantResult& r, const fs::path& dir, const VariantResult& plan,
                          std::ostream& log) {
  const fs::path checkpoint = resolve_checkpoint(dir);
  RunState run = load_run_for_inference(checkpoint);
  require(run.step == r.steps,
          "variant '{}': the latest checkpoint {} is at step {} but summary.json says the run "
          "finished at step {}",
          r.name, checkpoint.string(), run.step, r.steps);
  r.eval_batches = plan.eval_batches;
  r.eval_sequences = plan.eval_sequences;
  std::vector<std::int64_t> lengths;
  for (const LengthLoss& p : plan.extrapolation) lengths.push_back(p.length);
  r.extrapolation = extrapolation_curve(r, run, lengths, log);
  r.memory = memory_curve(r, run, plan.memory, log);
  r.copy_span = plan.copy_span;
  r.copy_sequences = plan.copy_sequences;
  r.copy = copy_curve(r, run, plan.copy, log);
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
  if (!previous || !evaluated_with(*previous, planned_evaluation(sweep, config)))
    return std::nullopt;
  return previous;
}

// Trains (or resumes) and evaluates one run; `label` names it in the log and notes.
VariantResult run_variant(const AblationSweep& sweep, const std::string& variant,
                          const std::string& label, const RunConfig& config, std::ostream& log) {
  const fs::path dir = config.train.out_dir;
  const VariantResult plan = planned_evaluation(sweep, config);
  const std::optional<VariantResult> previous = read_result(dir / "ablation.json");
  VariantResult result;
  if (finished_training(config)) {
    log << fmt::format("skip {}: finished\n", label);
    if (previous && evaluated_with(*previous, plan)) return *previous;
    result = previous ? *previous : training_result(label, config, *read_summary(dir), 0);
  } else {
    result = train_variant(label, config, log);
  }
  result.name = variant;
  evaluate_final_model(result, dir, plan, log);
  write_result(dir / "ablation.json", result);
  return result;
}

// Memory evaluation reads the validation text as streams with a segment memory, which a
// variant can only do where training with train.mem_len could (a relative scheme, a causal
// model, a text corpus: validate_recurrence, the one place that says so). The copy check
// reads sequences of the validation text.
void require_memory_applies(const AblationSweep& sweep, const RunConfig& config,
                            const AblationVariant& v) {
  require(sweep.copy_span == 0 || !task_from_name(config.data.source),
          "{}: variant '{}': eval_copy needs a text corpus as data.source, not the task '{}'",
          v.where, v.name, config.data.source);
  if (sweep.eval_mem_lengths.empty()) return;
  RunConfig with_memory = config;
  with_memory.train.mem_len = std::max<std::int64_t>(1, sweep.eval_mem_lengths.back());
  try {
    validate_recurrence(with_memory);
  } catch (const UsageError& e) {
    fail("{}: variant '{}': eval_mem_lengths cannot apply to it: {}", v.where, v.name, e.what());
  }
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
    require_memory_applies(sweep, configs[i], v);
  }
  require(sweep.eval_knn_sizes.empty() ||
              std::any_of(configs.begin(), configs.end(),
                          [](const RunConfig& c) { return c.model.knn_memory.enabled(); }),
          "{}: eval_knn_sizes: no variant has a kNN layer (model.knn_memory.layer)",
          sweep.file.string());
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
  const std::size_t per = sweep.runs_per_variant();  // runs i / per * per ... are one variant's
  const auto record = [&](std::size_t run, VariantResult result, bool measured) {
    results[run] = std::move(result);
    ++progress.runs_done;
    progress.measured += measured ? 1 : 0;
    const std::size_t first = run / per * per;
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
  // Seed by seed: every variant's seed 0, then every variant's seed 1, ... so a sweep stopped
  // part way leaves all variants at the same seeds, which the paired differences need.
  std::stable_sort(pending.begin(), pending.end(),
                   [per](std::size_t a, std::size_t b) { return a % per < b % per; });
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
