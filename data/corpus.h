#pragma once
// A text corpus as tokens (bytes by default), split deterministically into train and
// validation, each stored compactly (token_sequence.h: one byte a byte-level token).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/token_sequence.h"
#include "data/tokenizer.h"

namespace relpos {

enum class Split { train, validation };
std::string_view name_of(Split split);

struct Corpus {
  std::string path;          // the file it was read from, for messages
  TokenSequence train;       // the first bytes of the file
  TokenSequence validation;  // the last floor(size × val_fraction) bytes

  const TokenSequence& tokens(Split split) const {
    return split == Split::train ? train : validation;
  }
};

// Reads the whole file and splits its bytes: the last floor(size × val_fraction) bytes
// are the validation split, the rest (in file order) the training split; each split is
// then encoded by `tokenizer`.
// A missing, unreadable or empty file, or val_fraction outside (0, 1), is a
// UsageError naming the path or the value.
Corpus load_corpus(const std::string& path, double val_fraction,
                   const Tokenizer& tokenizer = ByteTokenizer());

// Checks that `split` holds one batch of non-overlapping windows:
// batch_size × seq_len + 1 tokens (each window scores seq_len next tokens, and
// consecutive windows share one boundary token). The UsageError names the file,
// the split, its length and what is needed.
void require_enough(const Corpus& corpus, Split split, std::int64_t seq_len,
                    std::int64_t batch_size);

// A bundled corpus file, data/corpus/<file> (kjv.txt: data.source corpus; austen.txt:
// data.source austen): under $RELPOS_DATA_DIR when that is set, else under the source
// tree's data/ folder, whose path is baked in at build time.
std::string bundled_corpus_path(std::string_view file = "kjv.txt");

// The memory load_corpus needs for a file of `file_bytes`, at most: the file's bytes
// while they are encoded, and the tokens: one byte each for byte-level tokens; for
// another tokenizer, at most one token a byte, the int64 ids its encoder returns for a
// split (freed once stored) and 4 bytes each stored (2 for vocabularies up to 65,536).
inline double corpus_load_bytes(double file_bytes, bool byte_tokens) {
  return file_bytes * (byte_tokens ? 2 : 1 + 8 + 4);
}

}  // namespace relpos
