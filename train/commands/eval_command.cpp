// `relpos eval CHECKPOINT [--data SOURCE] [--lengths 128,256,...] [--mem-len 0,256,...]
//  [--knn-size 0,512,...] [--batches N] [--sequences N] [--stride S] [--by-position CSV]
//  [--copy-span N --copy-distances 64,256,...] [--set key.path=value ...] [--json FILE]`
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "autograd/error.h"
#include "layers/position/registry.h"
#include "train/commands/commands.h"
#include "train/config/memory_estimate.h"
#include "train/copy_check.h"
#include "train/distributed/distributed.h"
#include "train/evaluate.h"
#include "train/evaluate_stream.h"
#include "train/metrics.h"
#include "train/plot_script.h"
#include "train/store/atomic_file.h"
#include "train/store/input_output.h"
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
  std::vector<std::int64_t> mem_lens;   // non-empty: segment-recurrent evaluation
  std::vector<std::int64_t> knn_sizes;  // kNN memory sizes (implies streams, --mem-len 0)
  std::int64_t batches = 0;             // 0: the whole validation split
  std::int64_t sequences = 256;         // a task's sequences per length when batches is 0
  std::int64_t stride = 0;              // sliding windows (0: non-overlapping)
  std::string by_position;              // CSV of the loss by position in the window
  std::int64_t copy_span = 0;           // the in-context copy check's span (0: none)
  std::vector<std::int64_t> copy_distances;
  std::vector<std::string> overrides;  // --set: changes to the saved config
  std::string json;
};

// --mem-len and --knn-size: what a model must allow to be read with memory.
void check_memory_options(const EvalOptions& o, const RunState& state) {
  const RunConfig& c = state.config;
  for (std::int64_t m : o.mem_lens)
    require(m >= 0 && m <= (std::int64_t{1} << 20), "--mem-len: each must be in [0, 2^20], got {}",
            m);
  for (std::int64_t s : o.knn_sizes)
    require(s >= 0 && s <= (std::int64_t{1} << 20), "--knn-size: each must be in [0, 2^20], got {}",
            s);
  require(o.knn_sizes.empty() || c.model.knn_memory.enabled(),
          "--knn-size: the model has no kNN layer (model.knn_memory.layer: -1)");
  const bool segment_memory =
      std::any_of(o.mem_lens.begin(), o.mem_lens.end(), [](std::int64_t m) { return m > 0; });
  require(!segment_memory || !find_position_scheme(layer_position(c.model, 0).scheme)->absolute,
          "--mem-len: the model's position scheme '{}' is absolute; memory needs a relative one",
          layer_position(c.model, 0).scheme);
  require(c.model.causal, "--mem-len: the model is bidirectional (model.causal: false)");
  require(!segment_memory || !state.model->positions_depend_on_length(),
          "--mem-len: model.position.rope_scaling.kind=dynamic_ntk rotates every position by the "
          "sequence length, so earlier segments' hidden states cannot be reused");
  require(!segment_memory || !c.model.attention_temperature.reads_positions(),
          "--mem-len: model.attention_temperature.kind=log_length reads absolute query positions, "
          "which segment memory does not keep");
  require(dynamic_cast<const CorpusSource*>(state.data.get()) != nullptr,
          "--mem-len: needs a text corpus as data source, not '{}'", c.data.source);
}

// --mem-len: the validation streams read segment by segment with memory; the table has
// one row per (length, memory).
nlohmann::json run_with_memory(const EvalOptions& o, RunState& state,
                               const std::vector<std::int64_t>& lengths, std::int64_t batches) {
  const RunConfig& c = state.config;
  check_memory_options(o, state);
  const auto* corpus = dynamic_cast<const CorpusSource*>(state.data.get());
  // --batches 0: every whole segment of each stream.
  const std::int64_t segments = batches > 0 ? batches : std::numeric_limits<std::int64_t>::max();
  const auto points =
      evaluate_streams(*state.model, corpus->corpus().validation, lengths, o.mem_lens,
                       c.data.batch_size, segments, o.knn_sizes, state.data->tokenizer());
  std::cout << fmt::format("{} streams of the validation text, {} segments each\n",
                           c.data.batch_size,
                           batches > 0 ? fmt::format("up to {}", batches) : std::string("all"));
  std::cout << fmt::format("{:>8} {:>8} {:>8} {:>10} {:>10} {:>12} {:>10}\n", "length", "memory",
                           "knn", "bits/byte", "loss", "perplexity", "tokens");
  nlohmann::json results = nlohmann::json::array();
  for (const StreamEvalPoint& p : points) {
    std::cout << fmt::format("{:>8} {:>8} {:>8} {:>10.4f} {:>10.4f} {:>12.3f} {:>10}\n", p.length,
                             p.mem_len, p.knn_size, p.bits_per_byte, p.loss, p.perplexity,
                             p.tokens);
    results.push_back({{"length", p.length},
                       {"mem_len", p.mem_len},
                       {"knn_size", p.knn_size},
                       {"loss", p.loss},
                       {"perplexity", p.perplexity},
                       {"bits_per_byte", p.bits_per_byte},
                       {"tokens", p.tokens}});
  }
  return results;
}

// --copy-span: the in-context copy check (train/copy_check.h) at each distance, in one
// window, or with --mem-len/--knn-size as segments of the training length with each memory.
nlohmann::json run_copy_check(const EvalOptions& o, RunState& state) {
  const RunConfig& c = state.config;
  require(o.copy_span >= 2 && !o.copy_distances.empty(),
          "--copy-span {}: expected a span >= 2 and --copy-distances D,... (each >= the span)",
          o.copy_span);
  for (std::int64_t d : o.copy_distances)
    require(d >= o.copy_span && d <= (std::int64_t{1} << 20),
            "--copy-distances: each must be in [--copy-span, 2^20], got {}", d);
  const auto* corpus = dynamic_cast<const CorpusSource*>(state.data.get());
  require(corpus != nullptr, "--copy-span: needs a text corpus as data source, not '{}'",
          c.data.source);
  require(c.model.causal, "--copy-span: the model is bidirectional (model.causal: false)");
  check_memory_options(o, state);
  const bool segments = !o.mem_lens.empty() || !o.knn_sizes.empty();
  const std::vector<std::int64_t> mem_lens =
      o.mem_lens.empty() ? std::vector<std::int64_t>{0} : o.mem_lens;
  const std::vector<std::int64_t> knn_sizes =
      o.knn_sizes.empty()
          ? std::vector<std::int64_t>{c.model.knn_memory.enabled() ? c.model.knn_memory.size : 0}
          : o.knn_sizes;
  std::cout << fmt::format(
      "in-context copy check: {} sequences of a {}-token span, the text after it and the span "
      "again; {}\n",
      o.sequences, o.copy_span,
      segments ? fmt::format("read as segments of {}", c.data.seq_len) : "each one window");
  std::cout << fmt::format("{:>9} {:>8} {:>8} {:>12} {:>12} {:>10} {:>10}\n", "distance", "memory",
                           "knn", "repeat loss", "control loss", "gain", "tokens");
  nlohmann::json results = nlohmann::json::array();
  for (const std::int64_t mem_len : mem_lens)
    for (const std::int64_t knn_size : knn_sizes) {
      const CopyReading reading{segments ? c.data.seq_len : 0, mem_len, knn_size};
      for (const CopyCheckPoint& p :
           copy_check(*state.model, corpus->corpus().validation, o.copy_span, o.copy_distances,
                      o.sequences, c.data.batch_size, kCopyCheckSeed, reading)) {
        std::cout << fmt::format("{:>9} {:>8} {:>8} {:>12.4f} {:>12.4f} {:>+10.4f} {:>10}\n",
                                 p.distance, p.mem_len, p.knn_size, p.loss_repeat, p.loss_control,
                                 p.gain(), p.tokens);
        results.push_back({{"distance", p.distance},
                           {"span", p.span},
                           {"segment", reading.segment},
                           {"mem_len", p.mem_len},
                           {"knn_size", p.knn_size},
                           {"loss_repeat", p.loss_repeat},
                           {"loss_control", p.loss_control},
                           {"gain", p.gain()},
                           {"sequences", p.sequences},
                           {"tokens", p.tokens}});
      }
    }
  return results;
}

// Where the JSON goes: --json, or CHECKPOINT.eval.json; never one of the files read: the
// checkpoint, its digest and the data source (the saved one, --data's or --set's).
std::filesystem::path json_path(const EvalOptions& o, const std::string& data_source) {
  const std::filesystem::path json =
      o.json.empty() ? std::filesystem::path(o.checkpoint).replace_extension(".eval.json")
                     : std::filesystem::path(o.json);
  std::vector<InputFile> inputs = checkpoint_inputs(o.checkpoint);
  inputs.push_back({data_source, "the data.source file"});
  require_not_an_input(json, "--json", inputs);
  return json;
}

// --by-position: length,position,loss,tokens for every position that scored a token, and
// the figure beside the CSV (tools/plot.py position-loss).
void write_position_loss(const std::filesystem::path& csv, const std::vector<EvalPoint>& points) {
  std::string out = "length,position,loss,tokens\n";
  for (const EvalPoint& p : points)
    for (std::size_t k = 0; k < p.loss_by_position.size(); ++k)
      if (p.tokens_by_position[k] > 0)
        out += fmt::format("{},{},{:.6f},{}\n", p.length, k, p.loss_by_position[k],
                           p.tokens_by_position[k]);
  write_file_atomic(csv, out);
  std::cout << "wrote " << csv.string() << "\n";
  std::filesystem::path png = csv;
  png.replace_extension(".png");
  run_plot_script({"position-loss", csv.string(), png.string()}, std::cout);
}

// The non-overlapping (or --stride) windows of a corpus, or a task's sequences.
nlohmann::json run_windows(const EvalOptions& o, RunState& state,
                           const std::vector<std::int64_t>& lengths, const EvalAmount& amount) {
  const auto points =
      evaluate(*state.model, *state.data, lengths, amount, {},
               [](const EvalProgress& p) { std::cerr << progress_text(p) << "\n"; });
  std::cout << fmt::format("{:>8} {:>10} {:>10} {:>12} {:>10} {:>10} {:>10} {:>11}\n", "length",
                           "bits/byte", "loss", "perplexity", "tokens", "sequences", "accuracy",
                           "exact_match");
  nlohmann::json results = nlohmann::json::array();
  for (const EvalPoint& p : points) {
    std::cout << fmt::format("{:>8} {:>10.4f} {:>10.4f} {:>12.3f} {:>10} {:>10} {:>10} {:>11}\n",
                             p.length, p.bits_per_byte, p.loss, p.perplexity, p.tokens, p.sequences,
                             fraction_cell(p.accuracy), fraction_cell(p.exact_match));
    nlohmann::json point = {{"length", p.length},
                            {"bits_per_byte", p.bits_per_byte},
                            {"loss", p.loss},
                            {"perplexity", p.perplexity},
                            {"tokens", p.tokens},
                            {"bytes", p.bytes},
                            {"sequences", p.sequences},
                            {"stride", amount.stride > 0 ? amount.stride : p.length},
                            // null (NaN) where the data has no answer tokens
                            {"accuracy", p.accuracy},
                            {"exact_match", p.exact_match}};
    if (amount.by_position) {
      point["loss_by_position"] = p.loss_by_position;
      point["tokens_by_position"] = p.tokens_by_position;
    }
    results.push_back(point);
  }
  if (amount.by_position) write_position_loss(o.by_position, points);
  return results;
}

void run(const EvalOptions& o) {
  require_single_rank("relpos eval");
  for (const std::string& text : o.overrides)
    require(text.find('=') != std::string::npos, "--set: expected key.path=value, got '{}'", text);
  RunState state = load_run_for_inference(o.checkpoint, o.data, o.overrides);
  const std::filesystem::path json = json_path(o, state.config.data.source);
  std::vector<std::int64_t> lengths = o.lengths;
  if (lengths.empty()) lengths = state.config.eval.lengths;
  if (lengths.empty()) lengths = {state.config.data.seq_len};
  for (std::int64_t l : lengths) require(l >= 2, "--lengths: each length must be >= 2, got {}", l);
  const bool streams = !o.mem_lens.empty() || !o.knn_sizes.empty();
  const bool copy = o.copy_span > 0 || !o.copy_distances.empty();
  require(!copy || (o.stride == 0 && o.by_position.empty() && o.lengths.empty() && o.batches == 0),
          "--copy-span: the copy check sets its own lengths and amount (--copy-distances, "
          "--sequences); --lengths, --batches, --stride and --by-position do not apply");
  require(o.sequences >= 1, "--sequences: expected an integer >= 1, got {}", o.sequences);
  require(o.stride == 0 || !streams,
          "--stride: sliding windows and --mem-len/--knn-size streams are two protocols; give one");
  require(
      o.by_position.empty() || !streams,
      "--by-position: the loss by position is measured on windows, not with --mem-len/--knn-size");
  for (std::int64_t l : lengths)
    require(o.stride <= l, "--stride {}: must be <= every length (here {})", o.stride, l);
  if (!o.by_position.empty()) {
    std::vector<InputFile> inputs = checkpoint_inputs(o.checkpoint);
    inputs.push_back({state.config.data.source, "the data.source file"});
    require_not_an_input(o.by_position, "--by-position", inputs);
  }
  const EvalAmount amount{o.batches, o.sequences, o.stride, !o.by_position.empty()};
  RunConfig asked = state.config;  // the lengths and batches asked for, bounded like the config's
  asked.eval.lengths = lengths;
  asked.train.eval_batches = 1;
  if (copy && !streams) {  // one window of D + N − 1 tokens per copy sequence
    asked.eval.lengths.clear();
    for (std::int64_t d : o.copy_distances)
      asked.eval.lengths.push_back(std::max<std::int64_t>(2, d + o.copy_span - 1));
  }
  if (!streams && !copy)
    for (std::int64_t l : lengths)
      asked.train.eval_batches = std::max(
          asked.train.eval_batches,
          o.batches > 0 ? o.batches : state.data->whole_eval_batches(l, o.sequences, o.stride));
  try {
    require_fits_in_memory(asked);
  } catch (const UsageError& e) {
    fail("--lengths, --batches: {}", e.what());
  }
  std::cout << fmt::format("{} at step {} on {}\n", o.checkpoint, state.step,
                           state.data->describe());
  nlohmann::json out = {{"checkpoint", o.checkpoint},
                        {"step", state.step},
                        {"data", state.data->describe()},
                        {"batches", o.batches},
                        {"results", nlohmann::json::array()}};
  for (const ConfigChange& change : state.config_changes) {
    out["changes"][change.key] = {change.before, change.after};
    std::cout << fmt::format("--set {}: {} -> {}\n", change.key, change.before, change.after);
  }
  if (copy) {
    out["results"] = run_copy_check(o, state);
  } else if (streams) {
    EvalOptions with_memory = o;
    if (with_memory.mem_lens.empty()) with_memory.mem_lens = {0};
    out["results"] = run_with_memory(with_memory, state, lengths, o.batches);
  } else {
    out["results"] = run_windows(o, state, lengths, amount);
  }
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
  cmd->add_option("--mem-len", options->mem_lens,
                  "memory lengths, e.g. 0,256,512: read the validation text as streams, segment "
                  "by segment, each layer attending to that many earlier hidden states")
      ->delimiter(',');
  cmd->add_option("--knn-size", options->knn_sizes,
                  "kNN memory sizes, e.g. 0,256,1024, for a model with a kNN layer: read the "
                  "validation text as streams, the layer retrieving from that many earlier "
                  "(key, value) pairs (0: none)")
      ->delimiter(',');
  cmd->add_option("--batches", options->batches,
                  "batches per length; with --mem-len, segments per stream (default 0: the "
                  "whole validation split, or --sequences task sequences)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--sequences", options->sequences,
                  "a synthetic task's sequences per length when --batches is 0 (default 256)");
  cmd->add_option("--stride", options->stride,
                  "sliding windows on a corpus: a window every S tokens, each token scored once "
                  "with at least L - S tokens of context (default 0: S = L, non-overlapping)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--by-position", options->by_position,
                  "write the loss by position in the window to this CSV (and a figure beside it)");
  cmd->add_option("--copy-span", options->copy_span,
                  "the in-context copy check: a span of N validation tokens, the text after it "
                  "and the span again; reports the loss on the repeat against a control whose "
                  "first span is other text (with --copy-distances; --sequences of them)");
  cmd->add_option("--copy-distances", options->copy_distances,
                  "copy check distances D from each span token to its repeat, e.g. 64,256,1024; "
                  "with --mem-len/--knn-size read as segments of the training length")
      ->delimiter(',');
  cmd->add_option("--set", options->overrides,
                  "key.path=value: change a setting of the saved config that is not "
                  "architecture, e.g. model.position.rope_scaling.kind=yarn or "
                  "model.attention=composed (repeatable)");
  cmd->add_option("--json", options->json,
                  "where to write the JSON (default: CHECKPOINT.eval.json)");
  cmd->callback([options] { run(*options); });
}

}  // namespace relpos
