// `relpos ablate SWEEP.yaml [--dry-run]`: trains every variant of a sweep (skipping
// finished ones, resuming interrupted ones), writes the comparison report and
// has tools/plot.py draw its figures.
#include <fmt/format.h>

#include <iostream>

#include "train/ablation/parent_death.h"
#include "train/ablation/report.h"
#include "train/ablation/sweep.h"
#include "train/commands/commands.h"
#include "train/config/memory_estimate.h"
#include "train/distributed/distributed.h"
#include "train/plot_script.h"

namespace relpos {
namespace {

struct AblateOptions {
  std::string sweep;
  bool dry_run = false;
  std::int64_t jobs = 0;        // 0: the sweep file's
  std::int64_t run_index = -1;  // >= 0: a child of a parallel sweep runs this run alone
  std::int64_t parent_pid = 0;  // > 0: that child's parent, whose end stops it
};

void run(const AblateOptions& o) {
  require_single_rank("relpos ablate");
  if (o.parent_pid > 0) stop_with_parent(static_cast<pid_t>(o.parent_pid));
  AblationSweep sweep = load_sweep(o.sweep);
  if (o.jobs > 0) sweep.jobs = o.jobs;
  if (o.run_index >= 0) {
    run_one(sweep, static_cast<std::size_t>(o.run_index), std::cout);
    return;
  }
  if (o.dry_run) {
    const std::vector<RunConfig> configs = resolve_variant_configs(sweep);
    check_variants(sweep, configs, true);
    for (std::size_t i = 0; i < configs.size(); ++i)
      std::cout << fmt::format(
          "{:<28} scheme {:<10} data {:<20} {} steps -> {} (about {:.3g} "
          "GiB)\n",
          sweep.run_label(i), position_label(configs[i].model), configs[i].data.source,
          configs[i].train.steps, configs[i].train.out_dir,
          estimate_memory(configs[i]).total() / (1024.0 * 1024.0 * 1024.0));
    std::cout << fmt::format("{}: {} variants are valid ({} runs)\n", o.sweep,
                             sweep.variants.size(), configs.size());
    return;
  }
  run_sweep(sweep, std::cout, std::filesystem::read_symlink("/proc/self/exe"));
  for (const char* file : {"results.md", "results.csv", "differences.csv"})
    if (file != std::string("differences.csv") || !sweep.seeds.empty())
      std::cout << "wrote " << (sweep.out_dir / file).string() << "\n";
  run_plot_script({"ablation", sweep.out_dir.string()}, std::cout);
}

}  // namespace

void add_ablate_command(CLI::App& app) {
  auto options = std::make_shared<AblateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "ablate", "Train the variants of a sweep file and compare them (docs/ablation.md)");
  cmd->add_option("sweep", options->sweep, "the sweep file (YAML)")->required();
  cmd->add_flag(
      "--dry-run", options->dry_run,
      "check the sweep, every variant's config, data, model and memory estimate; train nothing");
  cmd->add_option("--jobs", options->jobs,
                  "runs trained at once, each in a child process (default: the sweep's jobs, 1)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}));
  // Internal: how a parallel sweep starts each of its runs.
  cmd->add_option("--run-index", options->run_index)->group("");
  cmd->add_option("--parent-pid", options->parent_pid)->group("");
  cmd->callback([options] { run(*options); });
}

}  // namespace relpos
