#include "data/tokenizer.h"

#include "autograd/error.h"

namespace relpos {

std::vector<std::int64_t> encode_bytes(std::string_view text) {
  std::vector<std::int64_t> tokens(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) tokens[i] = static_cast<unsigned char>(text[i]);
  return tokens;
}

std::string decode_bytes(std::span<const std::int64_t> tokens) {
  std::string text(tokens.size(), '\0');
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    require(tokens[i] >= 0 && tokens[i] < kByteVocabSize,
            "decode_bytes: token {} at index {} is not a byte (expected 0..255)", tokens[i], i);
    text[i] = static_cast<char>(static_cast<unsigned char>(tokens[i]));
  }
  return text;
}

}  // namespace relpos
