// `relpos sample CHECKPOINT --prompt TEXT [--tokens N] [--temperature T] [--top-k K] [--seed S]`
#include <iostream>

#include "data/tokenizer.h"
#include "train/commands/commands.h"
#include "train/distributed/distributed.h"
#include "train/sample.h"
#include "train/trainer.h"

namespace relpos {
namespace {

struct SampleCommandOptions {
  std::string checkpoint;
  std::string prompt;
  SampleOptions sample;
  bool no_cache = false;
};

void run(SampleCommandOptions o) {
  require_single_rank("relpos sample");
  RunState state = load_run_for_inference(o.checkpoint);
  o.sample.use_cache = !o.no_cache;
  // Each byte is printed as it is drawn, so a long sample shows its progress.
  std::cout << o.prompt << std::flush;
  generate(*state.model, encode_bytes(o.prompt), o.sample, [](std::int64_t token) {
    const std::int64_t one[1] = {token};
    std::cout << decode_bytes(one) << std::flush;
  });
  std::cout << "\n";
}

}  // namespace

void add_sample_command(CLI::App& app) {
  auto options = std::make_shared<SampleCommandOptions>();
  CLI::App* cmd = app.add_subcommand("sample", "Generate text from a checkpoint (KV cache)");
  cmd->add_option("checkpoint", options->checkpoint, "an HDF5 checkpoint")->required();
  cmd->add_option("--prompt", options->prompt, "the text to continue")->required();
  cmd->add_option("--tokens", options->sample.tokens, "bytes to generate")
      ->check(CLI::Range(std::int64_t{0}, kMaxSampleTokens))
      ->capture_default_str();
  cmd->add_option("--temperature", options->sample.temperature, "0 for greedy")
      ->capture_default_str();
  cmd->add_option("--top-k", options->sample.top_k, "sample among the k most likely (0: all)")
      ->capture_default_str();
  cmd->add_option("--seed", options->sample.seed, "random seed")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--no-cache", options->no_cache, "recompute the whole context every token");
  cmd->callback([options] { run(*options); });
}

}  // namespace relpos
