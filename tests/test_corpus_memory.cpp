// A corpus costs memory too: load_corpus keeps its tokens compactly (one byte a
// byte-level token, two for a vocabulary up to 65,536), and the memory estimate counts
// loading data.source's file.
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "data/corpus.h"
#include "data/token_sequence.h"
#include "data/tokenizer.h"
#include "tests/test_files.h"
#include "train/config/config.h"
#include "train/config/memory_estimate.h"

using namespace relpos;

TEST_CASE("a corpus file is split without a second copy and counted in the memory estimate",
          "[data][memory]") {
  const testing::TempDir dir("corpus_memory");
  std::string text;
  for (int i = 0; text.size() < 100000; ++i) text += "line " + std::to_string(i) + " of text\n";
  const std::string file = dir.write("big.txt", text).string();
  const Corpus corpus = load_corpus(file, 0.1);
  REQUIRE(corpus.train.size() + corpus.validation.size() == text.size());
  REQUIRE(decode_bytes(corpus.train.to_vector()) == text.substr(0, corpus.train.size()));
  REQUIRE(decode_bytes(corpus.validation.to_vector()) == text.substr(corpus.train.size()));
  // Before: int64 ids, 8 bytes a byte of text.
  REQUIRE(corpus.train.bytes_per_token() == 1);
  REQUIRE(corpus.validation.bytes_per_token() == 1);
  // Before: the estimate left the corpus out, so a 1 GiB data.source ran out of memory
  // with a message naming only model sizes.
  const RunConfig with_file = load_config({}, {"data.source=" + file});
  const RunConfig with_task = load_config({}, {"data.source=copy"});
  const MemoryEstimate on_file = estimate_memory(with_file);
  const double counted = on_file.total() - estimate_memory(with_task).total();
  REQUIRE(counted == 2.0 * static_cast<double>(text.size()));  // the file and its tokens
  REQUIRE(corpus_load_bytes(1000, false) == 13000);  // SentencePiece: int64 ids while stored
  REQUIRE_THAT(on_file.describe(with_file), Catch::Contains("data.source=" + file));
}

TEST_CASE("token sequences take the narrowest type that holds the vocabulary", "[data][memory]") {
  const std::vector<std::int64_t> ids = {0, 255, 7};
  for (const auto& [vocab, bytes] : std::vector<std::pair<std::int64_t, std::size_t>>{
           {256, 1}, {257, 2}, {65536, 2}, {65537, 4}, {std::int64_t{1} << 32, 4}}) {
    const TokenSequence sequence(ids, vocab);
    REQUIRE(sequence.bytes_per_token() == bytes);
    REQUIRE(sequence.to_vector() == ids);
  }
  const std::vector<std::int64_t> big = {65535, 65536};
  REQUIRE(TokenSequence(big, 70000).to_vector() == big);
  REQUIRE_THROWS_WITH(
      TokenSequence(big, 65536),
      Catch::Contains("token 65536 at index 1 is outside the vocabulary [0, 65536)"));
  REQUIRE_THROWS_WITH(TokenSequence(std::vector<std::int64_t>{-1}, 256),
                      Catch::Contains("token -1 at index 0"));
  std::int64_t window[2] = {};
  TokenSequence(ids, 256).copy(1, 2, window);
  REQUIRE((window[0] == 255 && window[1] == 7));
  REQUIRE_THROWS_WITH(TokenSequence(ids, 256).copy(2, 2, window),
                      Catch::Contains("tokens [2, 4) are outside a sequence of 3"));
}
