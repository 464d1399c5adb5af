#pragma once
// The ablation runner (`relpos ablate SWEEP.yaml`, docs/ablation.md): a sweep
// file names config variants; each is trained in <out_dir>/<name> (skipped when
// finished, resumed when interrupted), evaluated at several lengths, and the
// results are written as results.md and results.csv (tools/plot.py draws them).
// With `seeds`, every variant is trained once per seed and the report gives each
// metric's mean, sample standard deviation and n over the seeds.
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <limits>
#include <string>
#include <vector>

#include "train/config/config.h"

namespace relpos {

struct AblationVariant {
  std::string name;                    // [A-Za-z0-9_.-]+, unique in the sweep
  std::string where;                   // "sweep.yaml:12", for error messages
  std::vector<std::string> files;      // extra config files, resolved against the sweep file
  std::vector<std::string> overrides;  // key.path=value, after the sweep's own
};

struct AblationSweep {
  std::filesystem::path file;              // the sweep file itself
  std::vector<std::string> base;           // config files, resolved against the sweep file
  std::vector<std::string> overrides;      // applied to every variant, before its own
  std::filesystem::path out_dir;           // relative to the current directory
  std::vector<std::int64_t> eval_lengths;  // sorted, unique; each variant adds its training length
  std::int64_t eval_batches = 0;           // batches per length; 0: each run's train.eval_batches
  std::vector<AblationVariant> variants;
  std::vector<std::uint64_t> seeds;  // empty: one run per variant, with its own train.seed
  std::int64_t jobs = 1;             // runs trained at once, each in a child process

  std::size_t runs_per_variant() const { return seeds.empty() ? 1 : seeds.size(); }
  std::size_t run_count() const { return variants.size() * runs_per_variant(); }
  // Run i is variant i / runs_per_variant() with seed i % runs_per_variant(): its label
  // ("t5", or "t5/seed-1" with seeds) and its folder relative to out_dir (the same text).
  std::string run_label(std::size_t run) const;
};

// Reads and checks a sweep file. Throws a one-line UsageError naming the file,
// the line where yaml-cpp knows it, and the key.
AblationSweep load_sweep(const std::filesystem::path& file);

// Every run's resolved config (base files, the variant's files, the sweep's
// overrides, the variant's overrides; train.out_dir = <out_dir>/<run label>, and
// train.seed = the run's seed where the sweep has seeds), in run order (see run_label). Throws on
// the first invalid one, naming the sweep file:line and the variant, and when a variant's folder
// holds a run of a different config.
std::vector<RunConfig> resolve_variant_configs(const AblationSweep& sweep);

// Checks, before any variant trains, that each one can: its memory estimate fits
// (train/config/memory_estimate.h) and its data opens (e.g. a corpus file exists and is long
// enough). With `build_models` (--dry-run), each variant's model, optimizer and data are
// built, and nothing is trained. Errors name the sweep file:line and the variant.
void check_variants(const AblationSweep& sweep, const std::vector<RunConfig>& configs,
                    bool build_models);

// The final model's metrics at one evaluation length; NaN (with a note saying why)
// where the scheme cannot run at that length. accuracy and exact_match are
// EvalPoint's (train/evaluate.h): NaN where the data has no answer tokens.
struct LengthLoss {
  std::int64_t length = 0;
  double loss = 0.0;  // nats per scored token
  std::string note;
  double accuracy = std::numeric_limits<double>::quiet_NaN();
  double exact_match = std::numeric_limits<double>::quiet_NaN();
};

// One run: a variant trained with one seed.
struct VariantResult {
  std::string name;         // the variant's
  std::uint64_t seed = 0;   // train.seed of the run
  std::string scheme;       // model.position.scheme
  std::string data_source;  // data.source
  std::int64_t train_length = 0;
  std::int64_t steps = 0;
  std::int64_t parameters = 0;
  double final_val_loss = 0.0;     // the trainer's last validation loss, nats per scored token
  double tokens_per_second = 0.0;  // NaN when not measured (see notes)
  double wall_seconds = 0.0;       // NaN when not measured
  std::size_t peak_rss_bytes = 0;
  std::size_t peak_tensor_bytes = 0;
  std::int64_t eval_batches = 0;
  std::vector<LengthLoss> extrapolation;  // ascending lengths, the training length included
  std::vector<std::string> notes;
};

// Trains, resumes or skips each run (printing one line per decision and a progress
// line after each run to `log`), collects its results into <out_dir>/<run>/ablation.json
// (reused on a rerun when the evaluation settings match), then writes the report, and
// returns the runs' results in run order. With jobs > 1, up to `jobs` runs train at once,
// each as `<executable> ablate <sweep file> --run-index <i>` (an ordinary resumable run;
// its output goes to <out_dir>/logs/<run>.log); `executable` is then required.
std::vector<VariantResult> run_sweep(const AblationSweep& sweep, std::ostream& log,
                                     const std::filesystem::path& executable = {});

// What a child of run_sweep does: trains, resumes or skips run `run` alone and writes its
// ablation.json (no report).
VariantResult run_one(const AblationSweep& sweep, std::size_t run, std::ostream& log);

// ---- aggregating runs ----

// Mean, sample standard deviation (n - 1) and n of the finite values; NaN mean for
// n = 0, NaN std for n < 2.
struct Stat {
  double mean = std::numeric_limits<double>::quiet_NaN();
  double std = std::numeric_limits<double>::quiet_NaN();
  std::size_t n = 0;
};
Stat stat_of(const std::vector<double>& values);

// The longest evaluated length, going up from the training length, before the loss first
// rises more than 1% above its training-length value (or cannot be computed). length 0
// where the training-length loss is unknown; `last_evaluated` when it never left the band.
struct TurningPoint {
  std::int64_t length = 0;
  bool last_evaluated = false;
};
TurningPoint turning_point(const std::vector<std::pair<std::int64_t, double>>& loss_by_length,
                           std::int64_t train_length);

// One variant over its seeds.
struct LengthStats {
  std::int64_t length = 0;
  Stat loss, accuracy, exact_match;
};
struct VariantStats {
  const VariantResult* first = nullptr;  // name, scheme, data, lengths, steps, parameters
  std::vector<const VariantResult*> runs;
  Stat final_val_loss, tokens_per_second, wall_seconds;
  std::size_t peak_rss_bytes = 0, peak_tensor_bytes = 0;  // the largest of the runs'
  std::vector<LengthStats> lengths;                       // ascending
  TurningPoint turning;                                   // of the mean loss curve
};
// Groups runs by variant name, in order of first appearance.
std::vector<VariantStats> aggregate(const std::vector<VariantResult>& runs);

// "progress: 4/27 runs, 1/9 variants done, 2m 05s elapsed, ETA 11m 40s": the ETA
// extrapolates the time of the runs this process trained or evaluated (`measured`;
// skipped ones take none) to the runs left; "ETA n/a" before the first one.
struct SweepProgress {
  std::size_t runs_done = 0, runs_total = 0, variants_done = 0, variants_total = 0;
  std::size_t measured = 0;
  double elapsed_seconds = 0.0;
};
std::string progress_line(const SweepProgress& p);

// Writes results.md and results.csv into sweep.out_dir, each atomically.
void write_ablation_report(const AblationSweep& sweep, const std::vector<VariantResult>& results);

}  // namespace relpos
