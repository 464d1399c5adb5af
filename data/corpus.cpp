#include "data/corpus.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <limits>

#include "autograd/error.h"
#include "data/input_file.h"
#include "data/tokenizer.h"

namespace relpos {
namespace {

std::string read_file_bytes(const std::string& path) {
  std::string bytes = read_regular_file(path, fmt::format("corpus file '{}'", path),
                                        std::numeric_limits<std::uint64_t>::max());
  require(!bytes.empty(), "corpus file '{}' is empty", path);
  return bytes;
}

}  // namespace

std::string_view name_of(Split split) { return split == Split::train ? "train" : "validation"; }

Corpus load_corpus(const std::string& path, double val_fraction, const Tokenizer& tokenizer) {
  require(val_fraction > 0.0 && val_fraction < 1.0,
          "val_fraction must be in (0, 1), got {} (corpus '{}')", val_fraction, path);
  const std::string bytes = read_file_bytes(path);
  const auto size = static_cast<std::int64_t>(bytes.size());
  const auto validation_size =
      static_cast<std::int64_t>(std::floor(static_cast<double>(size) * val_fraction));
  const std::string_view text(bytes);
  const auto boundary = static_cast<std::size_t>(size - validation_size);
  // Byte-level tokens are the file's bytes: stored as they are, never as int64 ids.
  if (dynamic_cast<const ByteTokenizer*>(&tokenizer) != nullptr)
    return {path, TokenSequence::from_bytes(text.substr(0, boundary)),
            TokenSequence::from_bytes(text.substr(boundary))};
  const std::int64_t vocab = tokenizer.vocab_size();
  return {path, TokenSequence(tokenizer.encode(text.substr(0, boundary)), vocab),
          TokenSequence(tokenizer.encode(text.substr(boundary)), vocab)};
}

void require_enough(const Corpus& corpus, Split split, std::int64_t seq_len,
                    std::int64_t batch_size) {
  const auto have = static_cast<std::int64_t>(corpus.tokens(split).size());
  const std::int64_t need = batch_size * seq_len + 1;
  require(have >= need,
          "corpus '{}': the {} split has {} tokens but one batch needs {} "
          "(batch_size {} × seq_len {} + 1); use a longer text, a smaller seq_len or batch_size, "
          "or a different val_fraction",
          corpus.path, name_of(split), have, need, batch_size, seq_len);
}

std::string bundled_corpus_path(std::string_view file) {
  const char* data_dir = std::getenv("RELPOS_DATA_DIR");
  const std::string root =
      data_dir != nullptr && *data_dir != '\0' ? std::string(data_dir) : RELPOS_SOURCE_DIR "/data";
  return root + "/corpus/" + std::string(file);
}

}  // namespace relpos
