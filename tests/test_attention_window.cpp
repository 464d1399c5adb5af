// Causal sliding-window attention (model.attention_window): the band itself, the flash
// kernel (tiles outside the band skipped) and the fused path against the composed
// reference with every gradient for every scheme, an fp64 gradcheck across tiles, the
// limits W = 1 and W >= L, and a model with windows whose KV-cache decoding and segment
// memory equal the full recompute.
#include <catch2/catch.hpp>
#include <string>

#include "autograd/ops/flash_attention.h"
#include "autograd/ops/mask.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "layers/transformer.h"
#include "scheme_harness.h"
#include "test_helpers.h"

using namespace relpos;
using testing::largest_difference;
using testing::leaf;
using testing::relative_error;

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

namespace {

constexpr std::int64_t kBatch = 2, kHeads = 2, kDim = 16;

// The output and the gradients of q, k, v and every scheme parameter for <out, weights>.
std::vector<Tensor> run(testing::SchemeUnderTest& s, const std::vector<Tensor>& inputs, DType dtype,
                        AttentionPath path, const AttentionChunk& band, const Tensor& weights) {
  std::vector<Tensor> x;
  for (std::size_t i = 0; i < 3; ++i) {
    Tensor copy = inputs[i].detach().to(dtype);
    copy.set_requires_grad(true);
    x.push_back(copy);
  }
  const std::vector<Tensor> values(inputs.begin() + 3, inputs.end());
  for (const Tensor& p : testing::set_parameters(*s.scheme, values, dtype)) x.push_back(p);
  Tensor out = testing::attention_through(*s.scheme, x[0], x[1], x[2], true, path, 0, band);
  backward(out, weights.to(dtype));
  std::vector<Tensor> result{out.detach()};
  for (const Tensor& t : x) result.push_back(t.grad());
  return result;
}

}  // namespace

// 600 keys span two default key tiles (512): with W = 40 most query tiles start their
// band inside the second key tile and skip the first.
TEST_CASE("windowed flash and fused attention match the composed reference, every gradient",
          "[attention][flash][window][slow]") {
  for (auto& s : testing::attention_variants({24, kHeads, 1, true, kDim}, 90)) {
    for (auto [lq, lk] : {std::pair<std::int64_t, std::int64_t>{600, 600}, {70, 600}}) {
      for (std::int64_t w : {40, 1}) {
        INFO(s.label << " Lq=" << lq << " Lk=" << lk << " W=" << w);
        Rng rng(91);
        std::vector<Tensor> inputs{randn({kBatch, kHeads, lq, kDim}, rng, DType::f64),
                                   randn({kBatch, kHeads, lk, kDim}, rng, DType::f64),
                                   randn({kBatch, kHeads, lk, kDim}, rng, DType::f64)};
        for (const NamedParameter& p : s.scheme->parameters())
          inputs.push_back(randn(p.tensor.shape(), rng, DType::f64, 0.5));
        const Tensor weights = randn({kBatch, kHeads, lq, kDim}, rng, DType::f64);
        const AttentionChunk band = window_of(w);
        const auto reference = run(s, inputs, DType::f64, AttentionPath::composed, band, weights);
        // The window is real: without it the output differs.
        const auto full = run(s, inputs, DType::f64, AttentionPath::composed, {}, weights);
        CHECK(largest_difference(full[0], reference[0]) > 1e-3);
        const auto flash = run(s, inputs, DType::f32, AttentionPath::flash, band, weights);
        const auto flash64 = run(s, inputs, DType::f64, AttentionPath::flash, band, weights);
        const auto fused64 = run(s, inputs, DType::f64, AttentionPath::fused, band, weights);
        for (std::size_t i = 0; i < reference.size(); ++i) {
          INFO((i == 0 ? std::string("output") : "gradient of input " + std::to_string(i - 1)));
          REQUIRE(flash[i].defined());
          // W = 1: each row's one weight is 1 whatever its logit, so the gradients of q, k and
          // of every logit term are exactly 0: compared absolutely.
          const bool zero =
              largest_difference(reference[i],
                                 Tensor::zeros(reference[i].shape(), reference[i].dtype())) == 0.0;
          auto error = [&](const Tensor& t) {
            return zero ? largest_difference(t, reference[i]) : relative_error(t, reference[i]);
          };
          CHECK(error(flash[i]) <= (i <= 3 ? 1e-5 : 3e-5));
          CHECK(error(flash64[i]) <= 1e-12);
          CHECK(error(fused64[i]) <= 1e-12);
        }
      }
    }
  }
}

namespace {

// The flash op on x = {q, k, v, distance bias, clipped logits, xl_query, xl_r}, causal,
// with Shaw value bins and XL's terms, in tiles of 8 queries by 16 keys.
Tensor flash_windowed(const std::vector<Tensor>& x, std::int64_t clip, const AttentionChunk& band) {
  FlashTerms t;
  t.distance_bias = x[3];
  t.clipped = x[4];
  t.clip = clip;
  t.value_bins = true;
  t.xl_query = x[5];
  t.xl_r = x[6];
  t.scale = 0.6;
  t.term_scale = 0.4;
  t.causal = true;
  t.chunk = band;
  t.query_tile = 8;
  t.key_tile = 16;
  return flash_attention(x[0], x[1], x[2], t);
}

}  // namespace

TEST_CASE("gradcheck: flash attention with a sliding window across tiles",
          "[attention][flash][window][gradcheck]") {
  Rng rng(92);
  const std::int64_t b = 1, h = 2, d = 2, clip = 3, lq = 20, lk = 50;
  // Windows that start mid-tile (5), span tiles (19) and hold only the query itself (1).
  for (std::int64_t w : {5, 19, 1}) {
    INFO("W=" << w);
    std::vector<Tensor> in{leaf({b, h, lq, d}, rng),
                           leaf({b, h, lk, d}, rng),
                           leaf({b, h, lk, d}, rng),
                           leaf({h, lq + lk - 1}, rng),
                           leaf({b, h, lq, 2 * clip + 1}, rng),
                           leaf({b, h, lq, d}, rng, 0.5),
                           leaf({h, lk, d}, rng, 0.5)};
    testing::require_gradcheck([&](const auto& x) { return flash_windowed(x, clip, window_of(w)); },
                               in);
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

Tensor random_tokens(std::int64_t batch, std::int64_t len, std::int64_t vocab, Rng& rng) {
  Tensor t = Tensor::empty({batch, len}, DType::i64);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.data<std::int64_t>()[i] = static_cast<std::int64_t>(rng.below(vocab));
  return t;
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
      const Tensor tokens = random_tokens(2, len, 32, rng);
      const Tensor full = model.forward(tokens);  // (2, L, V)
      // The window matters: the same weights without it give other logits.
      ModelConfig unwindowed = config;
      unwindowed.attention_window.clear();
      Rng same(94);
      TransformerLM global(unwindowed, same);
      global.set_training(false);
      CHECK(largest_difference(global.forward(tokens), full) > 1e-4);
      // A prompt of 5 tokens, then one token at a time.
      DecodeState state;
      std::vector<Tensor> pieces{model.forward(slice(tokens, 1, 0, 5), state, true)};
      for (std::int64_t t = 5; t < len; ++t)
        pieces.push_back(model.forward(slice(tokens, 1, t, t + 1), state, true));
      testing::require_close(concat(pieces, 1).to_vector(), full.to_vector(), 2e-5);
      // Segments of 6 with a memory covering the past.
      DecodeState segments;
      const Tensor first = model.forward(slice(tokens, 1, 0, 6), segments, false, 6);
      const Tensor second = model.forward(slice(tokens, 1, 6, 12), segments, false, 6);
      testing::require_close(concat({first, second}, 1).to_vector(), full.to_vector(), 2e-5);
    }
  }
}
