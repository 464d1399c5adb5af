#include "train/config/run_tokenizer.h"

#include <fmt/format.h>

#include <cstdint>

#include "autograd/error.h"
#include "data/input_file.h"
#include "data/sentencepiece_tokenizer.h"

namespace relpos {

std::string read_tokenizer_model(const std::string& path) {
  constexpr std::uint64_t kMaxModelBytes = std::uint64_t{1} << 30;  // models are a few MB
  return read_regular_file(path, fmt::format("data.tokenizer.model '{}'", path), kMaxModelBytes);
}

std::shared_ptr<const Tokenizer> make_run_tokenizer(const RunConfig& config,
                                                    const std::string& model_bytes,
                                                    const std::string& origin) {
  if (config.data.tokenizer_kind == "bytes") return nullptr;
  std::shared_ptr<const Tokenizer> tokenizer = load_sentencepiece(model_bytes, origin);
  require(config.model.vocab == tokenizer->vocab_size(),
          "model.vocab={} but the SentencePiece model {} has {} pieces (leave model.vocab unset: "
          "it follows the tokenizer)",
          config.model.vocab, origin, tokenizer->vocab_size());
  return tokenizer;
}

}  // namespace relpos
