#pragma once
// A corpus split's token ids, stored in the narrowest unsigned type that holds the
// vocabulary: one byte a token for the byte-level vocabulary (256), two for
// vocabularies up to 65,536 (SentencePiece's usual sizes), four above. A corpus of N
// bytes costs N bytes of tokens, not the 8N of int64 ids; batches get int64 ids.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

namespace relpos {

// The bytes one token takes in a TokenSequence of a vocabulary of `vocab_size` ids.
std::size_t token_bytes_for(std::int64_t vocab_size);

class TokenSequence {
 public:
  TokenSequence() = default;
  // `tokens`, each in [0, vocab_size): a UsageError naming the value and index otherwise.
  TokenSequence(std::span<const std::int64_t> tokens, std::int64_t vocab_size);
  // The bytes of `text` as byte-level tokens (vocabulary 256), one byte each.
  static TokenSequence from_bytes(std::string_view text);

  std::size_t size() const;
  std::size_t bytes_per_token() const;
  // Token ids [start, start + count) as int64, into out[0 .. count).
  void copy(std::size_t start, std::size_t count, std::int64_t* out) const;
  std::vector<std::int64_t> to_vector() const;

 private:
  std::variant<std::vector<std::uint8_t>, std::vector<std::uint16_t>, std::vector<std::uint32_t>>
      tokens_;
};

}  // namespace relpos
