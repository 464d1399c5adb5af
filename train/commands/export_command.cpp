// `relpos export CHECKPOINT --format safetensors -o FILE [--dtype f32|bf16]`: the
// parameters under their dotted names and the resolved config as metadata, for
// tools outside relpos (PyTorch: tools/relpos_torch.py; docs/export.md).
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "autograd/error.h"
#include "autograd/random.h"
#include "layers/transformer.h"
#include "train/commands/commands.h"
#include "train/config/config.h"
#include "train/config/config_json.h"
#include "train/store/checkpoint.h"
#include "train/store/input_output.h"
#include "train/store/safetensors.h"

namespace relpos {
namespace {

// Bumped when the metadata keys or the naming of the tensors change.
constexpr int kExportFormatVersion = 1;

struct ExportOptions {
  std::string checkpoint;
  std::string format = "safetensors";
  std::string output;
  std::string dtype = "f32";
};

void run(const ExportOptions& o) {
  require(o.format == "safetensors", "--format: expected safetensors, got '{}'", o.format);
  const ExportDType dtype = export_dtype_from_name(o.dtype, "--dtype");
  require_not_an_input(o.output, "-o", checkpoint_inputs(o.checkpoint));
  // The file's parameters must be those of the model its config builds: checked on the
  // declared shapes, before any tensor is read.
  RunConfig config;
  const Checkpoint ckpt = load_checkpoint(
      o.checkpoint, [&](const std::string& yaml, const std::map<std::string, Shape>& shapes) {
        config = config_from_yaml(yaml, o.checkpoint + " (saved config)");
        Rng rng(config.train.seed);
        const TransformerLM model(config.model, rng);
        std::map<std::string, Shape> expected;
        for (const NamedParameter& p : model.parameters()) expected[p.name] = p.tensor.shape();
        check_shapes_match(expected, shapes, o.checkpoint);
      });
  const std::map<std::string, std::string> metadata = {
      {"format", "relpos"},
      {"relpos_export_version", std::to_string(kExportFormatVersion)},
      {"config", config_to_json(config).dump()},
      {"config_yaml", ckpt.config_yaml},
      {"step", std::to_string(ckpt.step)},
      {"tokens_seen", std::to_string(ckpt.tokens_seen)},
  };
  write_safetensors(o.output, ckpt.params, metadata, dtype);
  std::int64_t total = 0;
  for (const auto& [name, tensor] : ckpt.params) total += tensor.numel();
  std::cout << fmt::format("wrote {}: {} tensors, {} parameters as {}, step {}\n", o.output,
                           ckpt.params.size(), total, safetensors_dtype_name(dtype), ckpt.step);
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto options = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Write a checkpoint's parameters and config for other tools (safetensors)");
  cmd->add_option("checkpoint", options->checkpoint, "an HDF5 checkpoint")->required();
  cmd->add_option("--format", options->format, "file format: safetensors")->capture_default_str();
  cmd->add_option("-o,--output", options->output, "the file to write")->required();
  cmd->add_option("--dtype", options->dtype, "f32 or bf16 (rounded to nearest even)")
      ->capture_default_str();
  cmd->callback([options] { run(*options); });
}

}  // namespace relpos
