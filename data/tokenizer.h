#pragma once
// Tokenizers: text to token ids and back (data.tokenizer). The byte-level one, the
// default, makes every byte of the text one token, so the vocabulary is exactly the 256
// byte values and any byte string round-trips; SentencePiece models are in
// sentencepiece_tokenizer.h.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace relpos {

inline constexpr std::int64_t kByteVocabSize = 256;

// Token i is the unsigned value of byte i of `text`.
std::vector<std::int64_t> encode_bytes(std::string_view text);

// The inverse of encode_bytes; a token outside [0, 256) is a UsageError
// naming its value and index.
std::string decode_bytes(std::span<const std::int64_t> tokens);

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::int64_t vocab_size() const = 0;
  virtual std::vector<std::int64_t> encode(std::string_view text) const = 0;
  // A token outside [0, vocab_size()) is a UsageError naming its value and index.
  virtual std::string decode(std::span<const std::int64_t> tokens) const = 0;
  // The bytes of text that token `id` stands for: the divisor of losses per byte.
  virtual std::int64_t byte_length(std::int64_t id) const = 0;
};

// encode_bytes / decode_bytes behind the Tokenizer interface.
class ByteTokenizer final : public Tokenizer {
 public:
  std::int64_t vocab_size() const override { return kByteVocabSize; }
  std::vector<std::int64_t> encode(std::string_view text) const override {
    return encode_bytes(text);
  }
  std::string decode(std::span<const std::int64_t> tokens) const override {
    return decode_bytes(tokens);
  }
  std::int64_t byte_length(std::int64_t) const override { return 1; }
};

}  // namespace relpos
