#pragma once
// SentencePiece tokenizers (Kudo & Richardson 2018) through Debian's libsentencepiece:
// loading a model from its bytes, and training one (BPE or unigram) on a text file.
#include <cstdint>
#include <memory>
#include <string>

#include "data/tokenizer.h"

namespace relpos {

// A tokenizer from the bytes of a SentencePiece .model file; `origin` names where they
// came from. Bytes that are not a model are a UsageError "<origin>: not a SentencePiece
// model (<the library's reason>)".
std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& model_bytes,
                                              const std::string& origin);

struct SentencePieceTraining {
  std::string text_path;  // the training text, read line by line
  std::int64_t vocab_size = 1024;
  std::string model_type = "bpe";  // bpe | unigram
};

// Trains a model and returns its bytes. The model keeps every byte of any text: no
// normalisation, whitespace kept as it is, unknown characters and newlines as byte
// tokens (byte fallback), no dummy prefix; so decode(encode(text)) == text.
std::string train_sentencepiece(const SentencePieceTraining& options);

}  // namespace relpos
