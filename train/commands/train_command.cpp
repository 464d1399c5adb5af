// `relpos train CONFIG.yaml [more.yaml] [key.path=value ...] [--resume PATH | --overwrite]
// [--init-from CHECKPOINT] [--dump-config]`
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "autograd/error.h"
#include "train/commands/commands.h"
#include "train/distributed/distributed.h"
#include "train/metrics.h"
#include "train/run_summary.h"
#include "train/store/input_output.h"
#include "train/store/run_folder.h"
#include "train/trainer.h"

namespace relpos {
namespace {

struct TrainOptions {
  std::vector<std::string> arguments;  // config files and key.path=value overrides
  std::string resume;
  std::string init_from;  // a checkpoint whose weights start the run
  bool overwrite = false;
  bool dump_config = false;
};

// The files the run reads: its config files, data.source, the tokenizer model and the
// --init-from checkpoint.
std::vector<InputFile> run_inputs(const TrainOptions& o, const std::vector<std::string>& files,
                                  const RunConfig& config) {
  std::vector<InputFile> inputs;
  for (const std::string& file : files) inputs.push_back({file, "the config file"});
  if (!o.init_from.empty()) inputs.push_back({o.init_from, "the --init-from checkpoint"});
  std::error_code missing;
  if (std::filesystem::exists(config.data.source, missing))
    inputs.push_back({config.data.source, "the data.source file"});
  if (config.data.tokenizer_kind != "bytes")
    inputs.push_back({config.data.tokenizer_model, "the data.tokenizer.model file"});
  return inputs;
}

// --overwrite moves everything in train.out_dir aside: no file the run reads may be there.
void require_inputs_outside(const std::vector<InputFile>& inputs, const RunConfig& config) {
  for (const InputFile& input : inputs)
    require(!inside_folder(input.path, config.train.out_dir),
            "--overwrite: {} '{}' lies inside train.out_dir '{}', whose contents would be moved "
            "aside; move it out first or choose another train.out_dir",
            input.role, input.path.string(), config.train.out_dir);
}

// No file the run reads is one it writes in train.out_dir; a resume may read the run's own
// config.yaml, which it replaces with the resolved config (the same settings, plus the
// command line's overrides, which config.<step>.yaml records as well). The --init-from
// checkpoint is left to the folder's own rule: a checkpoint there makes the folder a run,
// refused without --overwrite, and --overwrite refuses every input inside it.
void require_inputs_not_written(std::vector<InputFile> inputs, const TrainOptions& o,
                                const RunConfig& config) {
  const std::filesystem::path saved_config =
      std::filesystem::path(config.train.out_dir) / "config.yaml";
  std::erase_if(inputs, [&](const InputFile& input) {
    return input.role == "the --init-from checkpoint" ||
           (!o.resume.empty() && input.role == "the config file" &&
            same_file(input.path, saved_config));
  });
  require_not_written(inputs, run_output_folder(config.train.out_dir));
}

void run(const TrainOptions& o) {
  std::vector<std::string> files, overrides;
  for (const std::string& a : o.arguments)
    (a.find('=') != std::string::npos ? overrides : files).push_back(a);
  require(!files.empty(), "train: give at least one config file (e.g. configs/quickstart.yaml)");
  require(o.resume.empty() || o.init_from.empty(),
          "train: give --resume (continue a run) or --init-from (start a new run from a "
          "checkpoint's weights), not both");
  // Under mpirun every rank builds the same run; only rank 0 prints (docs/distributed.md).
  RunState state;
  bool dumped = false;
  run_collectively([&] {
    const RunConfig config = load_config(files, overrides);
    if (o.dump_config) {
      if (is_root()) std::cout << to_yaml(config);
      dumped = true;
      return;
    }
    // --overwrite with --resume: only a checkpoint from elsewhere, into a folder whose
    // run is moved aside.
    require(o.resume.empty() || !o.overwrite || !inside_folder(o.resume, config.train.out_dir),
            "train: give --resume (continue the run) or --overwrite (start over), not both, "
            "unless the checkpoint comes from outside train.out_dir");
    const std::vector<InputFile> inputs = run_inputs(o, files, config);
    if (o.overwrite) require_inputs_outside(inputs, config);
    require_inputs_not_written(inputs, o, config);
    if (is_root()) std::cout << "# resolved config\n" << to_yaml(config) << std::flush;
    state = build_run(config);
    if (!o.resume.empty()) {
      const auto path = resolve_checkpoint(o.resume);
      restore_run(state, load_checkpoint_for(state, path), path);
      if (is_root())
        std::cout << "resumed from " << path.string() << " at step " << state.step << "\n";
    }
    if (!o.init_from.empty()) {
      const auto path = resolve_checkpoint(o.init_from, "--init-from");
      initialise_from(state, path);
      if (is_root())
        std::cout << "initialised the weights from " << path.string()
                  << " (new optimizer, step 0)\n";
    }
  });
  if (dumped) return;
  const TrainSummary summary = train(state, o.overwrite ? RunStart::overwrite : RunStart::fresh);
  if (is_root()) std::cout << format_summary(summary);
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto options = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand("train", "Train a model from YAML config(s) and overrides");
  cmd->add_option("configs", options->arguments,
                  "config files, then key.path=value overrides (values parsed as YAML)")
      ->required();
  cmd->add_option("--resume", options->resume,
                  "continue bit-exactly from a checkpoint file or a run directory");
  cmd->add_option("--init-from", options->init_from,
                  "start a new run from the weights of a checkpoint file or run directory "
                  "(same architecture; fresh optimizer, data stream and step 0), e.g. to "
                  "fine-tune at a longer data.seq_len with model.position.rope_scaling");
  cmd->add_flag("--overwrite", options->overwrite,
                "start over in a train.out_dir that holds a run, moving its contents to "
                "<out_dir>.old-<n>");
  cmd->add_flag("--dump-config", options->dump_config, "print the resolved config and exit");
  cmd->callback([options] { run(*options); });
}

}  // namespace relpos
