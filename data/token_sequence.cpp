#include "data/token_sequence.h"

#include <algorithm>

#include "autograd/error.h"

namespace relpos {
namespace {

template <typename T>
std::vector<T> narrowed(std::span<const std::int64_t> tokens, std::int64_t vocab_size) {
  std::vector<T> out(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    require(tokens[i] >= 0 && tokens[i] < vocab_size,
            "token {} at index {} is outside the vocabulary [0, {})", tokens[i], i, vocab_size);
    out[i] = static_cast<T>(tokens[i]);
  }
  return out;
}

}  // namespace

std::size_t token_bytes_for(std::int64_t vocab_size) {
  require(vocab_size >= 1 && vocab_size <= std::int64_t{1} << 32,
          "a vocabulary of {} ids cannot be stored (expected 1 to 2^32)", vocab_size);
  if (vocab_size <= std::int64_t{1} << 8) return 1;
  if (vocab_size <= std::int64_t{1} << 16) return 2;
  return 4;
}

TokenSequence::TokenSequence(std::span<const std::int64_t> tokens, std::int64_t vocab_size) {
  switch (token_bytes_for(vocab_size)) {
    case 1:
      tokens_ = narrowed<std::uint8_t>(tokens, vocab_size);
      break;
    case 2:
      tokens_ = narrowed<std::uint16_t>(tokens, vocab_size);
      break;
    default:
      tokens_ = narrowed<std::uint32_t>(tokens, vocab_size);
  }
}

TokenSequence TokenSequence::from_bytes(std::string_view text) {
  TokenSequence sequence;
  sequence.tokens_ = std::vector<std::uint8_t>(text.begin(), text.end());
  return sequence;
}

std::size_t TokenSequence::size() const {
  return std::visit([](const auto& tokens) { return tokens.size(); }, tokens_);
}

std::size_t TokenSequence::bytes_per_token() const {
  return std::visit([](const auto& tokens) { return sizeof(tokens[0]); }, tokens_);
}

void TokenSequence::copy(std::size_t start, std::size_t count, std::int64_t* out) const {
  require(start <= size() && count <= size() - start,
          "tokens [{}, {}) are outside a sequence of {}", start, start + count, size());
  std::visit(
      [&](const auto& tokens) {
        std::copy_n(tokens.begin() + static_cast<std::ptrdiff_t>(start), count, out);
      },
      tokens_);
}

std::vector<std::int64_t> TokenSequence::to_vector() const {
  std::vector<std::int64_t> out(size());
  copy(0, out.size(), out.data());
  return out;
}

}  // namespace relpos
