#pragma once
// The ablation runner (`relpos ablate SWEEP.yaml`, docs/ablation.md): each run of a sweep
// (train/ablation/sweep_file.h) is trained in <out_dir>/<run label> (skipped when
// finished, resumed when interrupted), evaluated at several lengths, and the results
// are written as results.md and results.csv (train/ablation/report.h; tools/plot.py
// draws them). With `seeds`, every variant is trained once per seed and the report
// gives each metric's mean, sample standard deviation and n over the seeds.
#include <filesystem>
#include <iosfwd>
#include <vector>

#include "train/ablation/results.h"
#include "train/ablation/sweep_file.h"

namespace relpos {

// Checks, before any variant trains, that each one can: its memory estimate fits
// (train/config/memory_estimate.h) and its data opens (e.g. a corpus file exists and is
// long enough). With `build_models` (--dry-run), each variant's model, optimizer and data
// are built, and nothing is trained. Errors name the sweep file:line and the variant.
void check_variants(const AblationSweep& sweep, const std::vector<RunConfig>& configs,
                    bool build_models);

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

}  // namespace relpos
