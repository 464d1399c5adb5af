#pragma once
// The ablation runner (`relpos ablate SWEEP.yaml`, docs/ablation.md): a sweep
// file names config variants; each is trained in <out_dir>/<name> (skipped when
// finished, resumed when interrupted), evaluated at several lengths, and the
// results are written as results.md and results.csv (tools/plot.py draws them).
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "train/config.h"

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
};

// Reads and checks a sweep file. Throws a one-line UsageError naming the file,
// the line where yaml-cpp knows it, and the key.
AblationSweep load_sweep(const std::filesystem::path& file);

// Every variant's resolved config (base files, the variant's files, the sweep's
// overrides, the variant's overrides; train.out_dir = <out_dir>/<name>), in
// sweep order. Throws on the first invalid one, naming the sweep file:line and
// the variant, and when a variant's folder holds a run of a different config.
std::vector<RunConfig> resolve_variant_configs(const AblationSweep& sweep);

// Checks, before any variant trains, that each one can: its memory estimate fits
// (train/memory_estimate.h) and its data opens (e.g. a corpus file exists and is long
// enough). With `build_models` (--dry-run), each variant's model, optimizer and data are
// built, and nothing is trained. Errors name the sweep file:line and the variant.
void check_variants(const AblationSweep& sweep, const std::vector<RunConfig>& configs,
                    bool build_models);

// The loss of the final model at one evaluation length; NaN (with a note saying
// why) where the scheme cannot run at that length.
struct LengthLoss {
  std::int64_t length = 0;
  double loss = 0.0;  // nats per scored token
  std::string note;
};

struct VariantResult {
  std::string name;
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

// Trains, resumes or skips each variant in turn (printing one line per decision
// to `log`), collects its results into <out_dir>/<name>/ablation.json (reused on
// a rerun when the evaluation settings match), then writes the report.
std::vector<VariantResult> run_sweep(const AblationSweep& sweep, std::ostream& log);

// Writes results.md and results.csv into sweep.out_dir, each atomically.
void write_ablation_report(const AblationSweep& sweep, const std::vector<VariantResult>& results);

}  // namespace relpos
