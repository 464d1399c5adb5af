// `relpos ablate SWEEP.yaml [--dry-run]`: trains every variant of a sweep (skipping
// finished ones, resuming interrupted ones), writes the comparison report and
// has tools/plot.py draw its figures.
#include <fmt/format.h>

#include <iostream>

#include "train/ablation.h"
#include "train/commands/commands.h"
#include "train/distributed.h"
#include "train/memory_estimate.h"
#include "train/plot_script.h"

namespace relpos {
namespace {

struct AblateOptions {
  std::string sweep;
  bool dry_run = false;
};

void run(const AblateOptions& o) {
  require_single_rank("relpos ablate");
  const AblationSweep sweep = load_sweep(o.sweep);
  if (o.dry_run) {
    const std::vector<RunConfig> configs = resolve_variant_configs(sweep);
    check_variants(sweep, configs, true);
    for (std::size_t i = 0; i < configs.size(); ++i)
      std::cout << fmt::format(
          "{:<28} scheme {:<10} data {:<20} {} steps -> {} (about {:.3g} "
          "GiB)\n",
          sweep.variants[i].name, configs[i].model.position.scheme, configs[i].data.source,
          configs[i].train.steps, configs[i].train.out_dir,
          estimate_memory(configs[i]).total() / (1024.0 * 1024.0 * 1024.0));
    std::cout << fmt::format("{}: {} variants are valid\n", o.sweep, configs.size());
    return;
  }
  run_sweep(sweep, std::cout);
  for (const char* file : {"results.md", "results.csv"})
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
  cmd->callback([options] { run(*options); });
}

}  // namespace relpos
