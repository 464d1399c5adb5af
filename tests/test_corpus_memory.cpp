// A corpus costs memory too: load_corpus keeps one buffer of tokens (no second copy
// of the training split), and the memory estimate counts loading data.source's file.
#include <catch2/catch.hpp>
#include <string>

#include "data/corpus.h"
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
  REQUIRE(decode_bytes(corpus.train) == text.substr(0, corpus.train.size()));
  REQUIRE(decode_bytes(corpus.validation) == text.substr(corpus.train.size()));
  // Before: the estimate left the corpus out, so a 1 GiB data.source ran out of memory
  // with a message naming only model sizes.
  const RunConfig with_file = load_config({}, {"data.source=" + file});
  const RunConfig with_task = load_config({}, {"data.source=copy"});
  const MemoryEstimate on_file = estimate_memory(with_file);
  REQUIRE(on_file.total() - estimate_memory(with_task).total() >=
          9.0 * static_cast<double>(text.size()));
  REQUIRE_THAT(on_file.describe(with_file), Catch::Contains("data.source=" + file));
}
