#include "data/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <filesystem>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "autograd/error.h"

namespace relpos {
namespace {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  SentencePieceTokenizer(const std::string& model_bytes, const std::string& origin) {
    const auto status = processor_.LoadFromSerializedProto(model_bytes);
    require(status.ok(), "{}: not a SentencePiece model ({})", origin, status.ToString());
    const int pieces = processor_.GetPieceSize();
    byte_lengths_.resize(static_cast<std::size_t>(pieces));
    for (int id = 0; id < pieces; ++id) {
      std::int64_t length = 0;
      if (processor_.IsByte(id)) {
        length = 1;
      } else if (!processor_.IsControl(id) && !processor_.IsUnknown(id)) {
        // U+2581 (3 bytes in UTF-8) stands for one space.
        const std::string_view piece = processor_.IdToPiece(id);
        for (std::size_t at = 0; at < piece.size(); ++length)
          at += piece.substr(at).starts_with("\xE2\x96\x81") ? 3 : 1;
      }
      byte_lengths_[static_cast<std::size_t>(id)] = length;
    }
  }

  std::int64_t vocab_size() const override { return std::ssize(byte_lengths_); }

  std::vector<std::int64_t> encode(std::string_view text) const override {
    std::vector<int> ids;
    const auto status = processor_.Encode(text, &ids);
    require(status.ok(), "SentencePiece: cannot encode the text ({})", status.ToString());
    return {ids.begin(), ids.end()};
  }

  std::string decode(std::span<const std::int64_t> tokens) const override {
    std::vector<int> ids(tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      require(tokens[i] >= 0 && tokens[i] < vocab_size(),
              "decode: token {} at index {} is outside the SentencePiece vocabulary (0..{})",
              tokens[i], i, vocab_size() - 1);
      ids[i] = static_cast<int>(tokens[i]);
    }
    std::string text;
    const auto status = processor_.Decode(ids, &text);
    require(status.ok(), "SentencePiece: cannot decode ({})", status.ToString());
    return text;
  }

  std::int64_t byte_length(std::int64_t id) const override {
    return byte_lengths_.at(static_cast<std::size_t>(id));
  }

 private:
  sentencepiece::SentencePieceProcessor processor_;
  std::vector<std::int64_t> byte_lengths_;  // per id
};

}  // namespace

std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& model_bytes,
                                              const std::string& origin) {
  return std::make_unique<SentencePieceTokenizer>(model_bytes, origin);
}

std::string train_sentencepiece(const SentencePieceTraining& o) {
  require(std::filesystem::is_regular_file(o.text_path),
          "tokenizer train: the text '{}' does not exist or is not a file", o.text_path);
  require(o.model_type == "bpe" || o.model_type == "unigram",
          "tokenizer train: --type must be bpe or unigram, got '{}'", o.model_type);
  require(o.vocab_size >= 260 && o.vocab_size <= (std::int64_t{1} << 20),
          "tokenizer train: --vocab-size must be in [260, 2^20] (256 byte tokens, <unk>, <s>, "
          "</s> and at least one piece), got {}",
          o.vocab_size);
  const std::unordered_map<std::string, std::string> args = {
      {"input", o.text_path},
      {"model_type", o.model_type},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "false"},
      {"byte_fallback", "true"},
      {"character_coverage", "1.0"},
      {"num_threads", "1"},
      {"minloglevel", "1"},  // the library's warnings and errors only
  };
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, nullptr, &model);
  require(status.ok(), "tokenizer train on '{}': {}", o.text_path, status.ToString());
  return model;
}

}  // namespace relpos
