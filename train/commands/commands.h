#pragma once
// The relpos subcommands; each registers itself on the CLI11 app and runs when chosen.
#include <CLI/CLI.hpp>

namespace relpos {

void add_train_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_sample_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_positions_command(CLI::App& app);
void add_ablate_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_tokenizer_command(CLI::App& app);

}  // namespace relpos
