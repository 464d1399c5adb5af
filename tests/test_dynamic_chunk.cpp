// model.attention_chunk in configs and training: every wrong value is a one-line
// error naming the key (exit 2 from the CLI); dynamic chunk training draws sizes
// over the whole range, reproducibly, and a resumed run stays bit-exact.
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "tests/test_files.h"
#include "tests/tiny_run.h"
#include "train/config/config.h"
#include "train/dynamic_chunk.h"
#include "train/store/checkpoint.h"
#include "train/store/checkpoint_folder.h"
#include "train/trainer.h"

using namespace relpos;
using Catch::Contains;
using testing::TempDir;
namespace fs = std::filesystem;

TEST_CASE("config: wrong model.attention_chunk values are one-line errors naming the key",
          "[config][chunk]") {
  struct Case {
    std::vector<std::string> overrides;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"model.causal=false", "model.attention_chunk.size=-4"},
       "model.attention_chunk.size must be >= 0, got -4"},
      {{"model.causal=false", "model.attention_chunk.size=4",
        "model.attention_chunk.left_chunks=-2"},
       "model.attention_chunk.left_chunks must be >= -1, got -2"},
      {{"model.attention_chunk.size=4"},
       "model.attention_chunk.size=4 is for bidirectional encoders: it needs model.causal=false"},
      {{"model.causal=false", "model.attention_chunk.left_chunks=2"},
       "model.attention_chunk.left_chunks=2 needs a chunk"},
      {{"model.causal=false", "model.attention_chunk.dynamic=true"},
       "model.attention_chunk.dynamic=true needs the largest chunk"},
      {{"model.causal=false", "model.attention_chunk.size=4", "model.position.scheme=xl"},
       "model.position.scheme=xl needs model.causal=true"},
      {{"model.causal=false", "model.attention_chunk.size=two"}, "model.attention_chunk.size"},
  };
  for (const Case& c : cases) {
    INFO(c.expected);
    REQUIRE_THROWS_WITH(load_config({}, c.overrides), Contains(c.expected));
  }
  const RunConfig ok = load_config(
      {}, {"model.causal=false", "model.attention_chunk.size=4",
           "model.attention_chunk.left_chunks=0", "model.attention_chunk.dynamic=true"});
  CHECK(ok.model.attention_chunk.size == 4);
  CHECK(ok.model.attention_chunk.left_chunks == 0);
  CHECK(ok.model.attention_chunk.dynamic);
}

TEST_CASE("cli: a chunk on a causal model is one line on stderr with exit code 2", "[cli][chunk]") {
  TempDir dir("chunk_cli");
  const fs::path config = dir.write("chunk.yaml", "model: {attention_chunk: {size: 8}}\n");
  const std::string cmd = std::string(RELPOS_CLI) + " train " + config.string() + " > " +
                          (dir.path() / "out").string() + " 2> " + (dir.path() / "err").string();
  const int status = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  const std::string err = testing::slurp(dir.path() / "err");
  CHECK(err.rfind("relpos: error: model.attention_chunk.size=8", 0) == 0);
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
}

TEST_CASE("dynamic chunk sizes cover 1..max and depend on (seed, step, micro-batch) alone",
          "[chunk]") {
  std::set<std::int64_t> seen;
  for (std::int64_t step = 0; step < 400; ++step) {
    const std::int64_t size = dynamic_chunk_size(7, step, 0, 16);
    REQUIRE(size >= 1);
    REQUIRE(size <= 16);
    seen.insert(size);
    REQUIRE(dynamic_chunk_size(7, step, 0, 16) == size);
  }
  CHECK(seen.size() == 16);
  int differ = 0;
  for (std::int64_t step = 0; step < 50; ++step)
    differ += dynamic_chunk_size(7, step, 0, 16) != dynamic_chunk_size(7, step, 1, 16);
  CHECK(differ > 25);  // micro-batches draw their own sizes
  CHECK(dynamic_chunk_size(1, 3, 0, 1) == 1);
}

namespace {

RunConfig tiny_streaming(const fs::path& out, const std::vector<std::string>& extra) {
  std::vector<std::string> changes = {"model.causal=false",
                                      "model.d_model=32",
                                      "model.n_layers=2",
                                      "model.d_ff=64",
                                      "model.position.scheme=t5",
                                      "model.attention_chunk.size=8",
                                      "model.attention_chunk.left_chunks=1",
                                      "data.seq_len=32",
                                      "data.batch_size=4",
                                      "optim.grad_accum=2",
                                      "train.steps=6",
                                      "train.eval_every=3",
                                      "train.checkpoint_every=3",
                                      "train.keep_checkpoints=0",
                                      "optim.lr=1e-2",
                                      "schedule.warmup_steps=2",
                                      "train.threads=2",
                                      "train.out_dir=" + out.string()};
  changes.insert(changes.end(), extra.begin(), extra.end());
  return testing::tiny_run_config(changes);
}

std::vector<std::vector<double>> parameter_values(const RunState& run) {
  std::vector<std::vector<double>> values;
  for (const NamedParameter& p : run.model->parameters()) values.push_back(p.tensor.to_vector());
  return values;
}

}  // namespace

TEST_CASE("dynamic chunk training resumes bit-exactly and differs from a fixed chunk",
          "[chunk][trainer][slow]") {
  TempDir straight("chunk_straight"), resumed("chunk_resumed"), fixed("chunk_fixed");
  RunState a = build_run(tiny_streaming(straight.path(), {"model.attention_chunk.dynamic=true"}));
  train(a);
  CHECK(a.model->attention_chunk_size() == 8);  // evaluation and later use: the configured size
  RunState b = build_run(tiny_streaming(resumed.path(), {"model.attention_chunk.dynamic=true"}));
  const fs::path at3 = checkpoint_path(straight.path() / "checkpoints", 3);
  restore_run(b, load_checkpoint(at3), at3);
  train(b);
  CHECK(parameter_values(a) == parameter_values(b));
  RunState c = build_run(tiny_streaming(fixed.path(), {}));
  train(c);
  CHECK(parameter_values(a) != parameter_values(c));
}
