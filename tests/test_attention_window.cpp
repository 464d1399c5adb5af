// Causal sliding-window attention (model.attention_window): the band itself, the flash
// kernel (tiles outside the band skipped) and the fused path against the composed
// reference with every gradient for every scheme, an fp64 gradcheck across tiles, the
// limits W = 1 and W >= L, and a model with windows whose KV-cache decoding and segment
// memory equal the full recompute.
#include <catch2/catch.hpp>
#include <string>

#include "attention_harness.h"
#include "autograd/ops/mask.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "decoding_check.h"
#include "layers/transformer.h"
#include "scheme_harness.h"
#include "test_helpers.h"

using namespace relpos;
using testing::largest_difference;

namespace {

AttentionChunk window_of(std::int64_t w, std::int64_t key_origin = 0) {
  AttentionChunk c;
  c.window = w;
  c.key_origin = key_origin;
  return c;
}

std::vector<std::uint8_t> bytes(const Tensor& m) {
  return {m.data<std::uint8_t>(), m.data<std::uint8_t>() + m.numel()};
}

}  // namespace

TEST_CASE("window mask: query p sees keys p - W < j, whatever the key origin",
          "[attention][window]") {
  // W = 2 over 5 positions: each query sees itself and the one before (the causal mask
  // hides the future separately).
  CHECK(bytes(chunk_mask(5, 5, window_of(2))) == std::vector<std::uint8_t>{0, 0, 0, 0, 0,  //
                                                                           0, 0, 0, 0, 0,  //
                                                                           1, 0, 0, 0, 0,  //
                                                                           1, 1, 0, 0, 0,  //
                                                                           1, 1, 1, 0, 0});
  // Two queries after four cached keys, W = 3: query 0 sits at key index 4 and sees 2..4,
  // query 1 sees 3..5; the keys' absolute origin does not move the band.
  for (std::int64_t origin : {0, 7})
    CHECK(bytes(chunk_mask(2, 6, window_of(3, origin))) ==
          std::vector<std::uint8_t>{1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0});
}

// 600 keys span two default key tiles (512): with W = 40 most query tiles start their
// band inside the second key tile and skip the first. W = 1: each query sees itself only.
TEST_CASE("windowed flash and fused attention match the composed reference, every gradient",
          "[attention][flash][window][slow]") {
  testing::AttentionSweep sweep;
  sweep.seed = 90;
  sweep.options = {{.causal = true, .chunk = window_of(40)},
                   {.causal = true, .chunk = window_of(1)}};
  sweep.lengths = {{600, 600}, {70, 600}};
  // fp32 flash: the tolerances of the unbanded comparison (test_flash_attention.cpp).
  sweep.paths = {{AttentionPath::flash, DType::f32, Precision::fp32, 1e-5, 3e-5, 0},
                 {AttentionPath::flash, DType::f64, Precision::fp32, 1e-12, 1e-12, 0},
                 {AttentionPath::fused, DType::f64, Precision::fp32, 1e-12, 1e-12, 0}};
  CHECK(testing::check_against_composed(sweep) > 0);
}

TEST_CASE("gradcheck: flash attention with a sliding window across tiles",
          "[attention][flash][window][gradcheck]") {
  Rng rng(92);
  // 20 queries against 50 keys in tiles of 8 by 16 (gradcheck_case), causal with every
  // term: windows that start mid-tile (5), span tiles (19) and hold only the query (1),
  // with and without a key origin (which must not move the window).
  for (const AttentionChunk& band : {window_of(5), window_of(19), window_of(1), window_of(5, 4)}) {
    const testing::EveryTermCase c = testing::gradcheck_case(true, band);
    INFO(testing::describe(c));
    testing::require_gradcheck([&](const auto& x) { return testing::flash_every_term(x, c); },
                               testing::every_term_inputs(c, DType::f64, rng));
  }
}

TEST_CASE("window limits: W = 1 returns each query's own value, W >= L is full causal attention",
          "[attention][window]") {
  Rng rng(93);
  const std::int64_t len = 40;
  const Tensor q = randn({1, 2, len, 8}, rng, DType::f64);
  const Tensor k = randn({1, 2, len, 8}, rng, DType::f64);
  const Tensor v = randn({1, 2, len, 8}, rng, DType::f64);
  for (AttentionPath path : {AttentionPath::flash, AttentionPath::fused, AttentionPath::composed}) {
    INFO(name_of(path));
    CHECK(largest_difference(scaled_attention(q, k, v, {}, true, path, window_of(1)), v) <= 1e-14);
    const Tensor causal = scaled_attention(q, k, v, {}, true, path);
    for (std::int64_t w : {len, len + 5})
      CHECK(largest_difference(scaled_attention(q, k, v, {}, true, path, window_of(w)), causal) <=
            1e-14);
  }
}

namespace {

// A four-layer model whose even layers use scheme `scheme` with a window of 3 and whose
// odd layers attend globally without positions (the hybrid of configs/schemes/).
ModelConfig windowed_model(const std::string& scheme, AttentionPath path) {
  ModelConfig c;
  c.vocab = 32;
  c.d_model = 16;
  c.n_layers = 4;
  c.n_heads = 2;
  c.d_ff = 32;
  c.attention_path = path;
  for (std::int64_t l = 0; l < c.n_layers; ++l) {
    PositionConfig p;
    p.scheme = l % 2 == 0 ? scheme : "none";
    c.layer_positions.push_back(p);
  }
  c.attention_window = {3, 0, 3, 0};
  return c;
}

}  // namespace

TEST_CASE("a windowed hybrid model: KV-cache decoding and segment memory equal full recompute",
          "[attention][window][decode]") {
  for (const std::string scheme : {"rope", "t5", "alibi", "xl"}) {
    for (AttentionPath path : {AttentionPath::flash, AttentionPath::composed}) {
      INFO(scheme << " " << name_of(path));
      Rng rng(94);
      const ModelConfig config = windowed_model(scheme, path);
      TransformerLM model(config, rng);
      model.set_training(false);
      NoGradGuard no_grad;
      const std::int64_t len = 12;
      const Tensor tokens = testing::random_ids(2, len, 32, rng);
      const Tensor full = model.forward(tokens);  // (2, L, V)
      // The window matters: the same weights without it give other logits.
      ModelConfig unwindowed = config;
      unwindowed.attention_window.clear();
      Rng same(94);
      TransformerLM global(unwindowed, same);
      global.set_training(false);
      CHECK(largest_difference(global.forward(tokens), full) > 1e-4);
      testing::require_decoding_equals_full(model, tokens, full);
    }
  }
}
