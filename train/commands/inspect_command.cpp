// `relpos inspect CHECKPOINT`: config, step and every parameter's name and shape.
#include <fmt/format.h>

#include <iostream>

#include "train/commands/commands.h"
#include "train/store/checkpoint.h"

namespace relpos {
namespace {

void run(const std::string& path) {
  const Checkpoint c = load_checkpoint(path);
  std::cout << fmt::format("checkpoint {}: step {}, {} tokens seen, format {}\n", path, c.step,
                           c.tokens_seen, c.format_version);
  std::cout << "# config\n" << c.config_yaml << "\n# parameters\n";
  std::int64_t total = 0;
  for (const auto& [name, tensor] : c.params) {
    std::cout << fmt::format("{:<40} {:<16} {}\n", name, to_string(tensor.shape()),
                             name_of(tensor.dtype()));
    total += tensor.numel();
  }
  std::cout << fmt::format("{} parameters in {} tensors; {} optimizer state tensors\n", total,
                           c.params.size(), c.optim.size());
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("inspect", "Print a checkpoint's config, step and parameters");
  cmd->add_option("checkpoint", *path, "an HDF5 checkpoint")->required();
  cmd->callback([path] { run(*path); });
}

}  // namespace relpos
