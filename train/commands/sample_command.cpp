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
  const Tokenizer& tokenizer = state.data->tokenizer();  // the run's: bytes or its model
  // Each token is printed as soon as it decodes to whole characters, so a long sample
  // shows its progress (a SentencePiece byte piece may be a part of a character, which
  // decodes alone to U+FFFD: it waits, at most 4 tokens, for the rest).
  std::cout << o.prompt << std::flush;
  std::vector<std::int64_t> pending;
  const auto print_pending = [&] {
    std::cout << tokenizer.decode(pending) << std::flush;
    pending.clear();
  };
  generate(*state.model, tokenizer.encode(o.prompt), o.sample, [&](std::int64_t token) {
    pending.push_back(token);
    if (!tokenizer.decode(pending).ends_with("\xEF\xBF\xBD") || pending.size() >= 4)
      print_pending();
  });
  if (!pending.empty()) print_pending();
  std::cout << "\n";
}

}  // namespace

void add_sample_command(CLI::App& app) {
  auto options = std::make_shared<SampleCommandOptions>();
  CLI::App* cmd = app.add_subcommand("sample", "Generate text from a checkpoint (KV cache)");
  cmd->add_option("checkpoint", options->checkpoint, "an HDF5 checkpoint")->required();
  cmd->add_option("--prompt", options->prompt, "the text to continue")->required();
  cmd->add_option("--tokens", options->sample.tokens,
                  "tokens to generate (bytes with the byte tokenizer)")
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
