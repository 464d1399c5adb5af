// Data: byte tokenizer, corpus split, window sampler, synthetic tasks, data sources.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "data/corpus.h"
#include "data/data_source.h"
#include "data/sampler.h"
#include "data/tasks.h"
#include "data/tokenizer.h"
#include "test_batches.h"
#include "tests/test_files.h"

using namespace relpos;
using testing::pseudo_random_text;
using testing::same_batches;
using testing::TempDir;

namespace {

std::vector<std::int64_t> row_of(const Tensor& t, std::int64_t row) {
  const std::int64_t* p = t.data<std::int64_t>() + row * t.size(1);
  return {p, p + t.size(1)};
}

bool is_symbol(std::int64_t token, std::int64_t num_symbols) {
  const std::string_view alphabet = kTaskAlphabet.substr(0, num_symbols);
  return alphabet.find(static_cast<char>(token)) != std::string_view::npos;
}

// Batches of `batch_size` windows of `seq_len` tokens from `source` (a corpus file or a task).
DataConfig windows_config(const std::string& source, std::int64_t seq_len,
                          std::int64_t batch_size) {
  DataConfig config;
  config.source = source;
  config.seq_len = seq_len;
  config.batch_size = batch_size;
  return config;
}

DataConfig task_config(const std::string& task, std::int64_t seq_len, std::int64_t batch_size) {
  DataConfig config = windows_config(task, seq_len, batch_size);
  config.seed = 7;
  return config;
}

}  // namespace

TEST_CASE("byte tokenizer round-trips every byte", "[data]") {
  REQUIRE(encode_bytes("Ab\xff") == std::vector<std::int64_t>{65, 98, 255});
  std::string all(256, '\0');
  for (int i = 0; i < 256; ++i) all[i] = static_cast<char>(i);
  const std::vector<std::int64_t> tokens = encode_bytes(all);
  for (int i = 0; i < 256; ++i) REQUIRE(tokens[i] == i);
  REQUIRE(decode_bytes(tokens) == all);
  REQUIRE(decode_bytes(encode_bytes("In the beginning")) == "In the beginning");
  const std::vector<std::int64_t> bad = {65, 256};
  REQUIRE_THROWS_WITH(decode_bytes(bad), Catch::Contains("token 256 at index 1"));
  const std::vector<std::int64_t> negative = {-100};
  REQUIRE_THROWS_WITH(decode_bytes(negative), Catch::Contains("token -100 at index 0"));
}

TEST_CASE("corpus split: the last val_fraction of the bytes is validation", "[data]") {
  const std::string text = pseudo_random_text(1000, 12345);
  const TempDir dir("data");
  const std::string file = dir.write("corpus.txt", text).string();
  const Corpus corpus = load_corpus(file, 0.1);
  REQUIRE(corpus.path == file);
  REQUIRE(corpus.train.to_vector() == encode_bytes(text.substr(0, 900)));
  REQUIRE(corpus.validation.to_vector() == encode_bytes(text.substr(900)));

  const Corpus odd = load_corpus(file, 0.0555);  // floor(55.5) = 55 validation bytes
  REQUIRE(odd.validation.size() == 55);
  REQUIRE(odd.train.size() == 945);

  REQUIRE_THROWS_WITH(load_corpus(file, 0.0),
                      Catch::Contains("val_fraction must be in (0, 1), got 0"));
  REQUIRE_THROWS_WITH(load_corpus(file, 1.0), Catch::Contains("got 1"));
}

TEST_CASE("the bundled corpus is found and split", "[data]") {
  const std::string path = bundled_corpus_path();
  REQUIRE(path.ends_with("data/corpus/kjv.txt"));
  const auto size = static_cast<std::size_t>(std::filesystem::file_size(path));
  REQUIRE(size > 1'000'000);
  REQUIRE(size < 5u * 1024 * 1024);
  const Corpus corpus = load_corpus(path, 0.05);
  REQUIRE(corpus.validation.size() == size / 20);
  REQUIRE(corpus.train.size() + corpus.validation.size() == size);
  const std::vector<std::int64_t> train = corpus.train.to_vector();
  REQUIRE(decode_bytes(std::span(train).first(16)) == "In the beginning");

  const char* outer = std::getenv("RELPOS_DATA_DIR");
  const std::string saved = outer != nullptr ? outer : "";
  ::setenv("RELPOS_DATA_DIR", "/somewhere/else", 1);
  const std::string moved = bundled_corpus_path();
  ::setenv("RELPOS_DATA_DIR", saved.c_str(), 1);  // empty means unset to bundled_corpus_path()
  REQUIRE(moved == "/somewhere/else/corpus/kjv.txt");
}

TEST_CASE("data.source austen reads the bundled Austen novels", "[data]") {
  DataConfig config;
  config.source = "austen";
  config.seq_len = 64;
  config.batch_size = 4;
  const auto source = make_source(config);
  const auto* corpus = dynamic_cast<const CorpusSource*>(source.get());
  REQUIRE(corpus != nullptr);
  REQUIRE(corpus->corpus().path == bundled_corpus_path("austen.txt"));
  REQUIRE(corpus->corpus().path.ends_with("data/corpus/austen.txt"));
  // 4,025,034 bytes (data/corpus/README.md); the last floor(5%) are validation.
  REQUIRE(corpus->corpus().train.size() + corpus->corpus().validation.size() == 4'025'034);
  REQUIRE(corpus->corpus().validation.size() == 201'251);
  const std::vector<std::int64_t> train = corpus->corpus().train.to_vector();
  REQUIRE(decode_bytes(std::span(train).first(21)) == "SENSE AND SENSIBILITY");
  REQUIRE(source->describe().find("austen.txt") != std::string::npos);
}

TEST_CASE("corpus errors name the file, the split and what is needed", "[data]") {
  REQUIRE_THROWS_WITH(load_corpus("/no/such/corpus.txt", 0.1),
                      Catch::Contains("'/no/such/corpus.txt': cannot open: No such file"));
  REQUIRE_THROWS_WITH(load_corpus(std::filesystem::temp_directory_path().string(), 0.1),
                      Catch::Contains("cannot open: Is a directory"));
  const TempDir dir("data");
  const std::string empty = dir.write("empty.txt", "").string();
  REQUIRE_THROWS_WITH(load_corpus(empty, 0.1), Catch::Contains("'" + empty + "' is empty"));

  // 90 train + 10 validation bytes.
  const std::string small = dir.write("small.txt", pseudo_random_text(100, 12345)).string();
  const Corpus corpus = load_corpus(small, 0.1);
  REQUIRE_NOTHROW(require_enough(corpus, Split::train, 8, 11));  // 89 ≤ 90
  REQUIRE_THROWS_WITH(require_enough(corpus, Split::train, 8, 12),
                      Catch::Contains("corpus '" + small + "': the train split has 90 tokens") &&
                          Catch::Contains("needs 97 (batch_size 12 × seq_len 8 + 1)"));
  REQUIRE_THROWS_WITH(require_enough(corpus, Split::validation, 4, 3),
                      Catch::Contains("validation split has 10 tokens but one batch needs 13"));

  DataConfig config = windows_config(small, 4, 3);
  config.val_fraction = 0.1;
  REQUIRE_THROWS_WITH(make_source(config), Catch::Contains("validation split has 10 tokens"));
  config.source = "/no/such/corpus.txt";
  REQUIRE_THROWS_WITH(make_source(config), Catch::Contains("/no/such/corpus.txt"));
  config.source = small;
  config.batch_size = 0;
  REQUIRE_THROWS_WITH(make_source(config), Catch::Contains("batch_size must be >= 1, got 0"));
}

TEST_CASE("random windows: targets are the inputs shifted by one, cut from the train split",
          "[data]") {
  const TempDir dir("data");
  const std::string file = dir.write("corpus.txt", pseudo_random_text(5000, 12345)).string();
  DataConfig config = windows_config(file, 32, 6);
  config.val_fraction = 0.2;
  const auto source = make_source(config);
  const std::vector<std::int64_t> train = load_corpus(file, 0.2).train.to_vector();
  for (int draw = 0; draw < 5; ++draw) {
    const Batch batch = source->next_train();
    REQUIRE(batch.inputs.shape() == Shape{6, 32});
    REQUIRE(batch.targets.shape() == Shape{6, 32});
    REQUIRE(batch.inputs.dtype() == DType::i64);
    for (std::int64_t r = 0; r < 6; ++r) {
      std::vector<std::int64_t> window = row_of(batch.inputs, r);
      const std::vector<std::int64_t> targets = row_of(batch.targets, r);
      REQUIRE(std::equal(targets.begin(), targets.end() - 1, window.begin() + 1));
      window.push_back(targets.back());
      REQUIRE(std::search(train.begin(), train.end(), window.begin(), window.end()) != train.end());
    }
  }
  REQUIRE(source->sampler_state().batches_drawn == 5);
}

TEST_CASE("the sampler is seeded and resumes bit-exactly from its state", "[data]") {
  const TempDir dir("data");
  DataConfig config =
      windows_config(dir.write("corpus.txt", pseudo_random_text(20000, 12345)), 16, 4);
  config.seed = 42;
  const auto a = make_source(config);
  const auto b = make_source(config);
  config.seed = 43;
  const auto other = make_source(config);

  std::vector<Batch> from_a, from_b;
  for (int i = 0; i < 3; ++i) {
    from_a.push_back(a->next_train());
    from_b.push_back(b->next_train());
  }
  REQUIRE(same_batches(from_a, from_b));
  REQUIRE_FALSE(same_batches({from_a[0]}, {other->next_train()}));

  const SamplerState saved = SamplerState::from_words(a->sampler_state().to_words());
  REQUIRE(saved == a->sampler_state());
  REQUIRE(saved.batches_drawn == 3);
  const std::vector<Batch> straight = {a->next_train(), a->next_train()};

  other->set_sampler_state(saved);  // a different seed is overridden by the restored state
  const std::vector<Batch> resumed = {other->next_train(), other->next_train()};
  REQUIRE(same_batches(straight, resumed));
  REQUIRE(other->sampler_state() == a->sampler_state());

  const std::vector<std::uint64_t> short_words = {1, 2, 3};
  REQUIRE_THROWS_WITH(SamplerState::from_words(short_words),
                      Catch::Contains("sampler state has 3 words, expected 5"));
}

TEST_CASE("sequential windows cover the validation split in order", "[data]") {
  const std::vector<std::int64_t> tokens = encode_bytes(pseudo_random_text(103, 12345));
  const TokenSequence sequence = TokenSequence::from_bytes(pseudo_random_text(103, 12345));
  const std::vector<Batch> batches = sequential_windows(sequence, 10, 4, 100);
  REQUIRE(batches.size() == 3);  // 10 full windows (102 tokens scored): 4 + 4 + 2 rows
  REQUIRE(batches[2].inputs.shape() == Shape{2, 10});
  for (std::size_t b = 0; b < batches.size(); ++b)
    for (std::int64_t r = 0; r < batches[b].inputs.size(0); ++r) {
      const auto start = tokens.begin() + (static_cast<std::int64_t>(b) * 4 + r) * 10;
      REQUIRE(row_of(batches[b].inputs, r) == std::vector<std::int64_t>(start, start + 10));
      REQUIRE(row_of(batches[b].targets, r) == std::vector<std::int64_t>(start + 1, start + 11));
    }
  REQUIRE(sequential_windows(sequence, 10, 4, 2).size() == 2);
  REQUIRE(sequential_windows(sequence, 200, 4, 2).empty());
}

TEST_CASE("corpus evaluation scores the same bytes at every length", "[data]") {
  const TempDir dir("data");
  const std::string file = dir.write("corpus.txt", pseudo_random_text(40000, 12345)).string();
  DataConfig config = windows_config(file, 16, 8);
  config.val_fraction = 0.25;
  const auto source = make_source(config);
  REQUIRE(source->eval_rows(16) == 8);
  REQUIRE(source->eval_rows(32) == 4);
  REQUIRE(source->eval_rows(256) == 1);

  const auto all_targets = [](const std::vector<Batch>& batches) {
    std::vector<double> out;
    for (const Batch& b : batches) {
      const std::vector<double> t = b.targets.to_vector();
      out.insert(out.end(), t.begin(), t.end());
    }
    return out;
  };
  const std::vector<Batch> at16 = source->eval_batches(16, 5);
  const std::vector<Batch> at64 = source->eval_batches(64, 5);
  REQUIRE(at16.size() == 5);
  REQUIRE(at64[0].inputs.shape() == Shape{2, 64});
  const std::vector<double> scored = all_targets(at16);
  REQUIRE(scored.size() == 5 * 8 * 16);
  REQUIRE(all_targets(at64) == scored);
  const std::vector<std::int64_t> validation = load_corpus(file, 0.25).validation.to_vector();
  REQUIRE(scored == std::vector<double>(validation.begin() + 1, validation.begin() + 1 + 640));
  REQUIRE(same_batches(source->eval_batches(16, 5), at16));

  REQUIRE_THROWS_WITH(
      source->eval_batches(20000, 1),
      Catch::Contains("validation split has 10000 tokens but one batch needs 20001"));
}

TEST_CASE("copy and reverse: the answer after '|' is the string, copied or reversed", "[data]") {
  for (const std::string task : {"copy", "reverse"}) {
    DataConfig config = task_config(task, 40, 16);
    config.task.num_symbols = 5;
    const auto source = make_source(config);
    const auto check = [&](const Batch& batch, std::int64_t shortest, std::int64_t longest) {
      const std::int64_t seq_len = batch.inputs.size(1);
      for (std::int64_t r = 0; r < batch.inputs.size(0); ++r) {
        const std::vector<std::int64_t> in = row_of(batch.inputs, r);
        const std::vector<std::int64_t> target = row_of(batch.targets, r);
        const std::string text = decode_bytes(in);
        INFO(task << " row: " << text);
        const auto n = static_cast<std::int64_t>(text.find('|'));
        REQUIRE(n >= shortest);
        REQUIRE(n <= longest);
        for (std::int64_t i = 0; i < n; ++i) REQUIRE(is_symbol(in[i], 5));
        for (std::int64_t t = 0; t < seq_len; ++t) {
          if (t >= n && t < 2 * n) {  // predicts answer symbol i = t − n
            const std::int64_t i = t - n;
            REQUIRE(target[t] == in[task == "copy" ? i : n - 1 - i]);
            if (t + 1 < seq_len) REQUIRE(in[t + 1] == target[t]);
          } else {
            REQUIRE(target[t] == kIgnoreTarget);
          }
          if (t > 2 * n) REQUIRE(in[t] == '.');
        }
      }
    };
    for (int i = 0; i < 4; ++i) check(source->next_train(), 1, 20);
    const std::vector<Batch> longer = source->eval_batches(80, 2);
    REQUIRE(longer[0].inputs.shape() == Shape{8, 80});
    for (const Batch& batch : longer) check(batch, 21, 40);  // only lengths unseen in training
    for (const Batch& batch : source->eval_batches(40, 2)) check(batch, 1, 20);
  }
}

TEST_CASE("offset_lookup: the target is the input `offset` positions back", "[data]") {
  DataConfig config = task_config("offset_lookup", 32, 4);
  config.task.offset = 5;
  config.task.num_symbols = 3;
  const auto source = make_source(config);
  std::set<std::int64_t> seen;
  for (const Batch& batch : {source->next_train(), source->eval_batches(128, 1)[0]}) {
    for (std::int64_t r = 0; r < batch.inputs.size(0); ++r) {
      const std::vector<std::int64_t> in = row_of(batch.inputs, r);
      const std::vector<std::int64_t> target = row_of(batch.targets, r);
      for (std::size_t t = 0; t < in.size(); ++t) {
        REQUIRE(is_symbol(in[t], 3));
        seen.insert(in[t]);
        REQUIRE(target[t] == (t >= 5 ? in[t - 5] : kIgnoreTarget));
      }
    }
  }
  REQUIRE(seen == std::set<std::int64_t>{'a', 'b', 'c'});
}

TEST_CASE("associative_recall: each query's answer is the value stored with its key", "[data]") {
  DataConfig config = task_config("associative_recall", 48, 8);
  config.task.num_pairs = 6;
  config.task.num_symbols = 10;
  const auto source = make_source(config);
  for (const Batch& batch : {source->next_train(), source->eval_batches(96, 1)[0]}) {
    const std::int64_t seq_len = batch.inputs.size(1);
    for (std::int64_t r = 0; r < batch.inputs.size(0); ++r) {
      const std::vector<std::int64_t> in = row_of(batch.inputs, r);
      const std::vector<std::int64_t> target = row_of(batch.targets, r);
      const std::string text = decode_bytes(in);
      INFO("row: " << text);
      const auto mark = static_cast<std::int64_t>(text.find('?'));
      REQUIRE(mark == seq_len - 12);
      const auto first = static_cast<std::int64_t>(text.find_first_not_of('.'));
      std::map<char, char> store;
      for (std::int64_t p = first; p < first + 12; p += 2) {
        REQUIRE(is_symbol(text[p], 10));
        REQUIRE(is_symbol(text[p + 1], 10));
        REQUIRE(store.emplace(text[p], text[p + 1]).second);  // keys are distinct
      }
      REQUIRE(static_cast<std::int64_t>(text.find_first_not_of('.', first + 12)) == mark);
      std::int64_t scored = 0;
      for (std::int64_t t = 0; t < seq_len; ++t) {
        const bool is_query_key = t > mark && (t - mark) % 2 == 1;
        if (is_query_key) {
          REQUIRE(store.count(text[t]) == 1);
          REQUIRE(target[t] == store[text[t]]);
          if (t + 1 < seq_len) REQUIRE(in[t + 1] == target[t]);
          ++scored;
        } else {
          REQUIRE(target[t] == kIgnoreTarget);
        }
      }
      REQUIRE(scored == 6);
    }
  }
}

TEST_CASE("task evaluation is fixed and leaves the training stream alone", "[data]") {
  const auto source = make_source(task_config("copy", 24, 4));
  const SamplerState before = source->sampler_state();
  const std::vector<Batch> first = source->eval_batches(24, 3);
  REQUIRE(first.size() == 3);
  REQUIRE(source->sampler_state() == before);
  source->next_train();
  REQUIRE(same_batches(source->eval_batches(24, 3), first));
  REQUIRE_FALSE(same_batches({first[0]}, {first[1]}));
  REQUIRE(source->describe().starts_with("task copy"));
}

TEST_CASE("bad task parameters are errors naming the parameter", "[data]") {
  DataConfig config = task_config("copy", 32, 4);
  config.task.num_symbols = 1;
  REQUIRE_THROWS_WITH(
      make_source(config),
      Catch::Contains("task copy: parameter num_symbols must be in [2, 62], got 1"));
  config.task.num_symbols = 63;
  REQUIRE_THROWS_WITH(make_source(config),
                      Catch::Contains("num_symbols must be in [2, 62], got 63"));

  config = task_config("reverse", 1, 4);
  REQUIRE_THROWS_WITH(make_source(config), Catch::Contains("task reverse: seq_len must be >= 2"));

  config = task_config("offset_lookup", 32, 4);
  config.task.offset = 0;
  REQUIRE_THROWS_WITH(
      make_source(config),
      Catch::Contains("parameter offset must be in [1, seq_len - 1] = [1, 31], got 0"));
  config.task.offset = 32;
  REQUIRE_THROWS_WITH(make_source(config), Catch::Contains("offset must be in"));
  config.task.offset = 20;
  const auto lookup = make_source(config);
  REQUIRE_THROWS_WITH(lookup->eval_batches(16, 1),
                      Catch::Contains("[1, 15], got 20"));  // too short to evaluate

  config = task_config("associative_recall", 32, 4);
  config.task.num_symbols = 4;
  config.task.num_pairs = 5;
  REQUIRE_THROWS_WITH(make_source(config),
                      Catch::Contains("num_pairs must be in [1, num_symbols] = [1, 4]"));
  config.task.num_symbols = 16;
  config.task.num_pairs = 9;
  REQUIRE_THROWS_WITH(
      make_source(config),
      Catch::Contains("num_pairs 9 needs seq_len >= 4 × num_pairs = 36, got seq_len 32"));
  config.task.num_pairs = 0;
  REQUIRE_THROWS_WITH(make_source(config), Catch::Contains("got 0"));

  config = task_config("copy", 0, 4);
  REQUIRE_THROWS_WITH(make_source(config), Catch::Contains("seq_len must be >= 1, got 0"));
  REQUIRE(task_from_name("copy") == TaskKind::copy);
  REQUIRE_FALSE(task_from_name("Copy").has_value());
}
