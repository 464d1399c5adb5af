#pragma once
// Byte-level tokenizer: every byte of the text is one token, so the vocabulary
// is exactly the 256 byte values and any byte string round-trips.
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

}  // namespace relpos
