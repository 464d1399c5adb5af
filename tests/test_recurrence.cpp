// Segment-recurrent training (train.mem_len, Transformer-XL): the stream sampler, the
// equivalence of segments with memory to one long causal window, the gradients with the
// memory detached, config errors and bit-exact resume in the middle of the streams.
#include <catch2/catch.hpp>
#include <filesystem>

#include "autograd/error.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "data/sampler.h"
#include "recurrence_helpers.h"
#include "test_files.h"
#include "test_helpers.h"
#include "tests/tiny_run.h"
#include "train/config/config.h"
#include "train/config/memory_estimate.h"
#include "train/evaluate_stream.h"
#include "train/store/checkpoint.h"
#include "train/store/checkpoint_folder.h"
#include "train/trainer.h"

using namespace relpos;
namespace fs = std::filesystem;

using testing::fp64_model;
using testing::kSegment;
using testing::kSegments;
using testing::random_tokens;
using testing::relative_schemes;
using testing::segment;

TEST_CASE("stream segments: each row continues its own part of the text", "[recurrence]") {
  std::vector<std::int64_t> ids(41);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int64_t>(i);
  const TokenSequence tokens(ids, kByteVocabSize);
  // 2 rows of (41 - 1) / 2 = 20 tokens: 3 whole segments of 6 per row.
  REQUIRE(stream_segments_per_row(tokens.size(), 6, 2) == 3);
  for (std::uint64_t index = 0; index < 4; ++index) {
    const Batch b = stream_segment(tokens, 6, 2, index);
    const std::int64_t s = static_cast<std::int64_t>(index % 3);  // starts over after 3
    for (std::int64_t row = 0; row < 2; ++row)
      for (std::int64_t i = 0; i < 6; ++i) {
        REQUIRE(b.inputs.data<std::int64_t>()[row * 6 + i] == row * 20 + s * 6 + i);
        REQUIRE(b.targets.data<std::int64_t>()[row * 6 + i] == row * 20 + s * 6 + i + 1);
      }
  }
  for (std::uint64_t index = 0; index < 7; ++index)
    REQUIRE(stream_segment(tokens, 6, 2, index).starts_streams == (index % 3 == 0));
  REQUIRE_THROWS_AS(stream_segment(tokens, 30, 2, 0), UsageError);
}

TEST_CASE("recurrence: 3 segments with memory equal one long causal window, in fp64",
          "[recurrence]") {
  for (const std::string& scheme : relative_schemes()) {
    INFO("scheme " << scheme);
    auto model = fp64_model(scheme);
    Rng rng(71);
    const Tensor tokens = random_tokens(2, kSegment * kSegments, rng);
    NoGradGuard no_grad;
    const Tensor full = model->forward(tokens);  // (2, 12, V)
    // Memory 2L holds every earlier segment: the segment-band mask is the causal one.
    std::vector<Tensor> memory;
    std::vector<Tensor> pieces;
    for (std::int64_t t = 0; t < kSegments; ++t)
      pieces.push_back(forward_segment(*model, segment(tokens, t), memory, 2 * kSegment));
    REQUIRE(memory.size() == 2);
    REQUIRE(memory[0].shape() == Shape{2, 2 * kSegment, 8});
    testing::require_close(concat(pieces, 1).to_vector(), full.to_vector(), 1e-10);
    // A memory of one segment is really shorter: the last segment's outputs change.
    std::vector<Tensor> short_memory;
    Tensor last;
    for (std::int64_t t = 0; t < kSegments; ++t)
      last = forward_segment(*model, segment(tokens, t), short_memory, kSegment);
    const double largest = testing::largest_difference(last, pieces.back());
    if (scheme != "none") REQUIRE(largest > 1e-6);  // "none" also changes, less surely
  }
}

TEST_CASE("recurrence gradients: every table's equal those with earlier segments detached",
          "[recurrence][gradcheck][slow]") {
  // Reference: the summed loss of the 3 segments as a function of the parameters, with
  // each segment's memory (the earlier segments' hidden states, which equal the long
  // window's by the test above) held at its value: central differences in fp64.
  for (const std::string& scheme : relative_schemes()) {
    INFO("scheme " << scheme);
    auto model = fp64_model(scheme);
    Rng rng(72);
    const Tensor tokens = random_tokens(2, kSegment * kSegments + 1, rng);
    const Tensor inputs = slice(tokens, 1, 0, kSegment * kSegments).contiguous();
    const Tensor targets = slice(tokens, 1, 1, kSegment * kSegments + 1).contiguous();
    const std::int64_t mem_len = kSegment + 2;  // a band that is not a whole segment
    // The recurrent path, as the trainer runs it: one backward per segment.
    std::vector<std::vector<Tensor>> frozen;  // the memory each segment saw
    std::vector<Tensor> memory;
    for (std::int64_t t = 0; t < kSegments; ++t) {
      frozen.push_back(memory);
      const Tensor logits = forward_segment(*model, segment(inputs, t), memory, mem_len);
      backward(cross_entropy(logits, segment(targets, t)));
    }
    const auto summed_loss = [&] {
      NoGradGuard no_grad;
      double total = 0.0;
      for (std::int64_t t = 0; t < kSegments; ++t) {
        std::vector<Tensor> m = frozen[static_cast<std::size_t>(t)];
        total += cross_entropy(forward_segment(*model, segment(inputs, t), m, mem_len),
                               segment(targets, t))
                     .item();
      }
      return total;
    };
    const double h = 1e-6;
    for (const NamedParameter& p : model->parameters()) {
      INFO("table " << p.name);
      REQUIRE(p.tensor.grad().defined());
      const std::vector<double> analytic = p.tensor.grad().to_vector();
      double* values = p.tensor.data<double>();
      for (std::int64_t i = 0; i < p.tensor.numel(); ++i) {
        const double saved = values[i];
        values[i] = saved + h;
        const double up = summed_loss();
        values[i] = saved - h;
        const double down = summed_loss();
        values[i] = saved;
        INFO("element " << i);
        REQUIRE(analytic[static_cast<std::size_t>(i)] ==
                Approx((up - down) / (2 * h)).margin(1e-7).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("stream evaluation: memory covering the past scores like one long window",
          "[recurrence][eval]") {
  auto model = fp64_model("t5");
  Rng rng(73);
  // 2 streams of 12 scored tokens each: (25 - 1) / 2 = 12, 3 segments of 4.
  const Tensor tokens = random_tokens(1, 25, rng);
  const TokenSequence text(std::span(tokens.data<std::int64_t>(), 25), testing::kVocab);
  const auto points = evaluate_streams(*model, text, {kSegment}, {0, 2 * kSegment}, 2, 10);
  REQUIRE(points.size() == 2);
  REQUIRE(points[1].tokens == 24);
  REQUIRE(model->training());  // restored
  // The reference: each stream as one window of 12 (memory 2L), or 3 windows of 4 (none).
  NoGradGuard no_grad;
  double long_total = 0.0, windows_total = 0.0;
  for (std::int64_t row = 0; row < 2; ++row) {
    const Tensor in = slice(tokens, 1, row * 12, row * 12 + 12).contiguous();
    const Tensor out = slice(tokens, 1, row * 12 + 1, row * 12 + 13).contiguous();
    long_total += cross_entropy(model->forward(in), out, kIgnoreTarget, Reduction::sum).item();
    for (std::int64_t t = 0; t < kSegments; ++t)
      windows_total += cross_entropy(model->forward(segment(in, t)), segment(out, t), kIgnoreTarget,
                                     Reduction::sum)
                           .item();
  }
  REQUIRE(points[0].loss == Approx(windows_total / 24).epsilon(1e-12));
  REQUIRE(points[1].loss == Approx(long_total / 24).epsilon(1e-12));
  REQUIRE(points[0].loss != Approx(points[1].loss).epsilon(1e-6));
  REQUIRE_THROWS_AS(evaluate_streams(*model, text, {13}, {0}, 2, 1), UsageError);
}

namespace {

RunConfig recurrent_config(const fs::path& out, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> changes{
      "model.n_layers=2",        "model.dropout=0.1",        "model.position.scheme=xl",
      "data.batch_size=4",       "train.mem_len=16",         "train.steps=6",
      "train.eval_every=3",      "train.checkpoint_every=3", "train.keep_checkpoints=0",
      "schedule.warmup_steps=2", "train.threads=2",          "train.out_dir=" + out.string()};
  changes.insert(changes.end(), extra.begin(), extra.end());
  return testing::tiny_run_config(changes);
}

std::vector<std::vector<double>> parameters_of(const RunState& run) {
  std::vector<std::vector<double>> out;
  for (const NamedParameter& p : run.model->parameters()) out.push_back(p.tensor.to_vector());
  return out;
}

}  // namespace

TEST_CASE("recurrence: resume in the middle of the streams is bit-exact",
          "[recurrence][trainer][slow]") {
  testing::TempDir straight("recurrent_straight"), resumed("recurrent_resumed"),
      forgetful("recurrent_forgetful");
  RunState a = build_run(recurrent_config(straight.path()));
  train(a);
  const fs::path at3 = checkpoint_path(straight.path() / "checkpoints", 3);
  const Checkpoint saved = load_checkpoint(at3);
  REQUIRE(saved.memory.size() == 2);
  REQUIRE(saved.memory.at("1").shape() == Shape{4, 16, 16});

  RunState b = build_run(recurrent_config(resumed.path()));
  restore_run(b, saved, at3);
  REQUIRE(b.memory.size() == 2);
  train(b);
  REQUIRE(parameters_of(a) == parameters_of(b));  // bit-identical
  for (std::size_t l = 0; l < 2; ++l) REQUIRE(a.memory[l].to_vector() == b.memory[l].to_vector());

  // The memory matters: resuming without it gives other parameters.
  RunState c = build_run(recurrent_config(forgetful.path()));
  restore_run(c, saved, at3);
  c.memory.clear();
  train(c);
  REQUIRE(parameters_of(a) != parameters_of(c));
}

TEST_CASE("recurrence: when the streams start over, the memory is emptied",
          "[recurrence][trainer][slow]") {
  // A 400-byte text, half of it for training: 4 rows of (200 - 1) / 4 = 49 bytes hold 3
  // segments of 16 each, so the 4th step starts every row's stream over.
  testing::TempDir dir("recurrent_wrap");
  std::string text(400, 'a');
  for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>('a' + (i * 7) % 26);
  const fs::path file = dir.write("text.txt", text);
  const auto memory_width_after = [&](int steps) {
    RunState run =
        build_run(recurrent_config(dir.path() / ("run" + std::to_string(steps)),
                                   {"data.source=" + file.string(), "data.val_fraction=0.5",
                                    "train.mem_len=32", "train.steps=" + std::to_string(steps)}));
    train(run);
    REQUIRE(run.memory.size() == 2);
    return run.memory[0].size(1);
  };
  REQUIRE(memory_width_after(3) == 32);  // segments 1 and 2 of each row
  REQUIRE(memory_width_after(4) == 16);  // only the new first segment
}

TEST_CASE("recurrence: config errors name the keys", "[recurrence][config]") {
  const fs::path out = fs::temp_directory_path() / "relpos_recurrence_config";
  const auto message = [&](const std::vector<std::string>& extra) -> std::string {
    try {
      build_run(recurrent_config(out, extra));
    } catch (const UsageError& e) {
      return e.what();
    }
    return "accepted";
  };
  for (const std::string scheme : {"sinusoidal", "learned"}) {
    const std::string m = message({"model.position.scheme=" + scheme});
    INFO(m);
    REQUIRE(m.find("train.mem_len=16") != std::string::npos);
    REQUIRE(m.find("model.position.scheme") != std::string::npos);
    REQUIRE(m.find(scheme) != std::string::npos);
  }
  REQUIRE(message({"model.causal=false", "model.position.scheme=t5"}).find("model.causal") !=
          std::string::npos);
  REQUIRE(message({"data.source=copy"}).find("data.source") != std::string::npos);
  REQUIRE(message({"train.mem_len=-1"}).find("train.mem_len") != std::string::npos);
  REQUIRE(!fs::exists(out));
}

TEST_CASE("recurrence: the memory estimate counts the segment memory", "[recurrence][config]") {
  const fs::path out = fs::temp_directory_path() / "relpos_recurrence_estimate";
  const MemoryEstimate without = estimate_memory(recurrent_config(out, {"train.mem_len=0"}));
  const MemoryEstimate with = estimate_memory(recurrent_config(out, {"train.mem_len=1024"}));
  // 5 tensors of (4, 1024, 16) floats in each of 2 layers.
  REQUIRE(with.activations - without.activations == Approx(5.0 * 2 * 4 * 1024 * 16 * 4));
  REQUIRE(with.describe(recurrent_config(out, {"train.mem_len=1024"})).find("train.mem_len=1024") !=
          std::string::npos);
}
