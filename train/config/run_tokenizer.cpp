#include "train/config/run_tokenizer.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "autograd/error.h"
#include "data/sentencepiece_tokenizer.h"

namespace relpos {

std::string read_tokenizer_model(const std::string& path) {
  require(std::filesystem::is_regular_file(path),
          "data.tokenizer.model: '{}' does not exist or is not a file", path);
  std::ifstream in(path, std::ios::binary);
  require(in.good(), "data.tokenizer.model: cannot open '{}': {}", path, std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  require(!in.bad(), "data.tokenizer.model: cannot read '{}': {}", path, std::strerror(errno));
  return bytes;
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
