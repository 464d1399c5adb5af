#pragma once
// The tokenizer of a run (data.tokenizer): the SentencePiece model's bytes are read once
// from data.tokenizer.model, or taken from a checkpoint, which holds a copy.
#include <memory>
#include <string>

#include "data/tokenizer.h"
#include "train/config/config.h"

namespace relpos {

// The bytes of the data.tokenizer.model file; a UsageError naming the key and the path.
std::string read_tokenizer_model(const std::string& path);

// The tokenizer data.tokenizer.kind asks for, SentencePiece from `model_bytes` (named
// `origin` in messages); null for bytes. model.vocab must equal its vocabulary.
std::shared_ptr<const Tokenizer> make_run_tokenizer(const RunConfig& config,
                                                    const std::string& model_bytes,
                                                    const std::string& origin);

}  // namespace relpos
