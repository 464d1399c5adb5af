// `relpos eval CHECKPOINT [--data SOURCE] [--lengths 128,256,...] [--batches N] [--json FILE]`
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "autograd/error.h"
#include "train/atomic_file.h"
#include "train/commands/commands.h"
#include "train/distributed.h"
#include "train/evaluate.h"
#include "train/memory_estimate.h"
#include "train/metrics.h"
#include "train/trainer.h"

namespace relpos {
namespace {

// A fraction for the table: "-" where the metric does not apply (NaN).
std::string fraction_cell(double value) {
  return std::isnan(value) ? std::string("-") : fmt::format("{:.4f}", value);
}

struct EvalOptions {
  std::string checkpoint;
  std::string data;
  std::vector<std::int64_t> lengths;
  std::int64_t batches = 0;  // 0: the run's train.eval_batches
  std::string json;
};

void run(const EvalOptions& o) {
  require_single_rank("relpos eval");
  RunState state = load_run_for_inference(o.checkpoint, o.data);
  std::vector<std::int64_t> lengths = o.lengths;
  if (lengths.empty()) lengths = state.config.eval.lengths;
  if (lengths.empty()) lengths = {state.config.data.seq_len};
  for (std::int64_t l : lengths) require(l >= 2, "--lengths: each length must be >= 2, got {}", l);
  const std::int64_t batches = o.batches > 0 ? o.batches : state.config.train.eval_batches;
  RunConfig asked = state.config;  // the lengths and batches asked for, bounded like the config's
  asked.eval.lengths = lengths;
  asked.train.eval_batches = batches;
  try {
    require_fits_in_memory(asked);
  } catch (const UsageError& e) {
    fail("--lengths, --batches: {}", e.what());
  }
  const auto points = evaluate(*state.model, *state.data, lengths, batches);
  std::cout << fmt::format("{} at step {} on {}\n", o.checkpoint, state.step,
                           state.data->describe());
  std::cout << fmt::format("{:>8} {:>10} {:>12} {:>10} {:>10} {:>10} {:>11}\n", "length", "loss",
                           "perplexity", "bits/byte", "tokens", "accuracy", "exact_match");
  nlohmann::json out = {{"checkpoint", o.checkpoint},
                        {"step", state.step},
                        {"data", state.data->describe()},
                        {"results", nlohmann::json::array()}};
  for (const EvalPoint& p : points) {
    std::cout << fmt::format("{:>8} {:>10.4f} {:>12.3f} {:>10.4f} {:>10} {:>10} {:>11}\n", p.length,
                             p.loss, p.perplexity, p.bits_per_byte, p.tokens,
                             fraction_cell(p.accuracy), fraction_cell(p.exact_match));
    out["results"].push_back({{"length", p.length},
                              {"loss", p.loss},
                              {"perplexity", p.perplexity},
                              {"bits_per_byte", p.bits_per_byte},
                              {"tokens", p.tokens},
                              // null (NaN) where the data has no answer tokens
                              {"accuracy", p.accuracy},
                              {"exact_match", p.exact_match}});
  }
  const std::filesystem::path json =
      o.json.empty() ? std::filesystem::path(o.checkpoint).replace_extension(".eval.json")
                     : std::filesystem::path(o.json);
  write_file_atomic(json, out.dump(2) + "\n");
  std::cout << "wrote " << json.string() << "\n";
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto options = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Validation loss, perplexity and bits/byte at one or more lengths");
  cmd->add_option("checkpoint", options->checkpoint, "an HDF5 checkpoint")->required();
  cmd->add_option("--data", options->data, "data source (default: the run's)");
  cmd->add_option("--lengths", options->lengths, "evaluation lengths, e.g. 128,256,512")
      ->delimiter(',');
  cmd->add_option("--batches", options->batches,
                  "batches per length (default: train.eval_batches)");
  cmd->add_option("--json", options->json,
                  "where to write the JSON (default: CHECKPOINT.eval.json)");
  cmd->callback([options] { run(*options); });
}

}  // namespace relpos
