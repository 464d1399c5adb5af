// `relpos tokenizer train TEXT --vocab-size N -o PATH [--type bpe|unigram]`: a
// SentencePiece model for data.tokenizer (data/sentencepiece_tokenizer.h).
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>

#include "data/sentencepiece_tokenizer.h"
#include "train/commands/commands.h"
#include "train/store/atomic_file.h"
#include "train/store/input_output.h"

namespace relpos {
namespace {

struct TokenizerTrainOptions {
  SentencePieceTraining training;
  std::string output;
};

void run_train(const TokenizerTrainOptions& o) {
  require_not_an_input(o.output, "-o", {{o.training.text_path, "the training text"}});
  std::cout << fmt::format("training a {} tokenizer of {} pieces on {}\n", o.training.model_type,
                           o.training.vocab_size, o.training.text_path)
            << std::flush;
  const auto start = std::chrono::steady_clock::now();
  const std::string model = train_sentencepiece(o.training);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_file_atomic(o.output, model);
  std::cout << fmt::format(
      "wrote {} ({} bytes) in {:.1f} s; use it with "
      "data.tokenizer.kind=sentencepiece data.tokenizer.model={}\n",
      o.output, model.size(), seconds, o.output);
}

}  // namespace

void add_tokenizer_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("tokenizer", "SentencePiece tokenizers for data.tokenizer");
  cmd->require_subcommand(1);
  auto options = std::make_shared<TokenizerTrainOptions>();
  CLI::App* train =
      cmd->add_subcommand("train", "Train a SentencePiece model (BPE or unigram) on a text file");
  train->add_option("text", options->training.text_path, "the training text")->required();
  train
      ->add_option("--vocab-size", options->training.vocab_size,
                   "pieces, the 256 byte tokens and <unk>, <s>, </s> included")
      ->capture_default_str();
  train->add_option("--type", options->training.model_type, "bpe or unigram")
      ->capture_default_str();
  train->add_option("-o,--output", options->output, "the .model file to write")->required();
  train->callback([options] { run_train(*options); });
}

}  // namespace relpos
