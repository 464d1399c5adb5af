// data.stream_offsets (issue 29, item 6): segment-recurrent training re-draws where its
// contiguous streams start at each pass over the corpus. The ring reading of
// stream_segment, the first pass unchanged, later passes moved by a seeded rotation that
// depends on the batch index alone (so a resumed run continues bit-exactly), and the
// config's one-line refusal where there are no streams.
#include <catch2/catch.hpp>
#include <set>

#include "autograd/error.h"
#include "data/data_source.h"
#include "data/sampler.h"
#include "test_files.h"
#include "tests/tiny_run.h"
#include "train/config/config.h"
#include "train/trainer.h"

using namespace relpos;
using Catch::Matchers::Contains;
using testing::TempDir;

namespace {

std::vector<std::int64_t> row_of(const Tensor& t, std::int64_t row) {
  const std::int64_t len = t.size(1);
  const std::int64_t* p = t.data<std::int64_t>() + row * len;
  return {p, p + len};
}

// A corpus source over `text` with stream-order training batches of 2 rows × 6 tokens.
std::unique_ptr<DataSource> streams(const TempDir& dir, const std::string& text,
                                    const std::string& offsets) {
  DataConfig config;
  config.source = dir.write("corpus.txt", text).string();
  config.seq_len = 6;
  config.batch_size = 2;
  config.val_fraction = 0.2;
  config.seed = 11;
  config.stream_order = true;
  config.stream_offsets = offsets;
  return make_source(config);
}

}  // namespace

TEST_CASE("stream segments: a rotation reads the tokens as a ring", "[data][recurrence]") {
  std::vector<std::int64_t> ids(41);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int64_t>(i);
  const TokenSequence tokens(ids, kByteVocabSize);
  // 2 rows of 20 tokens, 3 segments of 6; rotation 17: row r, segment s starts at
  // 20r + 6s + 17 (mod 41), so row 1's windows run past token 40 into 0, 1, ...
  for (std::uint64_t index = 0; index < 3; ++index) {
    const Batch b = stream_segment(tokens, 6, 2, index, 17);
    for (std::int64_t row = 0; row < 2; ++row)
      for (std::int64_t i = 0; i < 6; ++i) {
        const std::int64_t at = row * 20 + static_cast<std::int64_t>(index) * 6 + 17 + i;
        REQUIRE(b.inputs.data<std::int64_t>()[row * 6 + i] == at % 41);
        REQUIRE(b.targets.data<std::int64_t>()[row * 6 + i] == (at + 1) % 41);
      }
  }
  // Rotation 0 is the unrotated reading, and a rotation outside [0, size) is refused.
  const Batch plain = stream_segment(tokens, 6, 2, 2);
  const Batch zero = stream_segment(tokens, 6, 2, 2, 0);
  REQUIRE(row_of(plain.inputs, 1) == row_of(zero.inputs, 1));
  REQUIRE_THROWS_WITH(stream_segment(tokens, 6, 2, 0, 41), Contains("rotation 41"));
  REQUIRE_THROWS_WITH(stream_segment(tokens, 6, 2, 0, -1), Contains("rotation -1"));
}

TEST_CASE("stream offsets: redrawn keeps the first pass and moves every later one",
          "[data][recurrence]") {
  TempDir dir("stream_offsets");
  const std::string text = testing::pseudo_random_text(200, 5);
  const auto fixed = streams(dir, text, "fixed");
  const auto redrawn = streams(dir, text, "redrawn");
  // 160 training bytes: 2 rows of 79, 13 segments of 6 a pass.
  const std::int64_t per_pass = 13;
  std::set<std::vector<std::int64_t>> pass_starts;
  std::vector<Batch> drawn;
  for (std::int64_t index = 0; index < 4 * per_pass; ++index) {
    const Batch f = fixed->next_train();
    const Batch r = redrawn->next_train();
    drawn.push_back(r);
    const bool first_pass = index < per_pass;
    if (first_pass) REQUIRE(row_of(f.inputs, 0) == row_of(r.inputs, 0));
    if (first_pass) REQUIRE(row_of(f.inputs, 1) == row_of(r.inputs, 1));
    // Each row still continues its text: segment s + 1 starts where s's targets end.
    if (index % per_pass != 0) {
      const Batch& before = drawn[static_cast<std::size_t>(index - 1)];
      for (std::int64_t row = 0; row < 2; ++row)
        REQUIRE(row_of(r.inputs, row).front() == row_of(before.targets, row).back());
    }
    REQUIRE(r.starts_streams == (index % per_pass == 0));
    if (index % per_pass == 0) pass_starts.insert(row_of(r.inputs, 0));
  }
  // Four passes, four different starting windows (the fixed source repeats one).
  REQUIRE(pass_starts.size() == 4);

  // The rotation depends on the batch index alone: a source restored to the sampler state
  // after 30 batches draws what the first one drew next.
  const auto resumed = streams(dir, text, "redrawn");
  const auto again = streams(dir, text, "redrawn");
  for (int i = 0; i < 30; ++i) again->next_train();
  resumed->set_sampler_state(again->sampler_state());
  for (int i = 30; i < 4 * per_pass; ++i) {
    const Batch b = resumed->next_train();
    REQUIRE(row_of(b.inputs, 0) == row_of(drawn[static_cast<std::size_t>(i)].inputs, 0));
    REQUIRE(row_of(b.targets, 1) == row_of(drawn[static_cast<std::size_t>(i)].targets, 1));
  }
}

TEST_CASE("stream offsets: redrawn without contiguous streams is refused in one line",
          "[data][config]") {
  REQUIRE_THROWS_WITH(load_config({}, {"data.stream_offsets=redrawn"}),
                      Contains("data.stream_offsets=redrawn needs contiguous training streams"));
  REQUIRE_THROWS_WITH(load_config({}, {"data.stream_offsets=sometimes"}),
                      Contains("data.stream_offsets"));
  const RunConfig c = load_config({}, {"data.stream_offsets=redrawn", "train.mem_len=16"});
  REQUIRE(c.data.stream_offsets == "redrawn");
}

TEST_CASE("stream offsets: a checkpoint of a run with redrawn offsets loads for evaluation",
          "[data][recurrence][trainer]") {
  // Inference reads no training stream (train.mem_len is set to 0 there), so the
  // redrawn offsets must not make the loaded config invalid.
  TempDir dir("stream_offsets_eval");
  RunState run = build_run(testing::tiny_run_config(
      {"train.mem_len=16", "data.stream_offsets=redrawn", "train.out_dir=" + dir.path().string()}));
  train(run);
  const RunState loaded = load_run_for_inference(resolve_checkpoint(dir.path()));
  REQUIRE(loaded.step == 4);
  REQUIRE(loaded.config.data.stream_offsets == "fixed");
}
