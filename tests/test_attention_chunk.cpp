// Chunked streaming attention (model.attention_chunk, docs/streaming.md): the band
// itself, the flash kernel against the composed reference with every gradient, an
// fp64 gradcheck across tiles, the limits C = 1 (causal) and C >= L (full
// attention) for every scheme, and a chunk-by-chunk forward with a KV cache (or
// segment memory) equal to the full forward under the chunk mask.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/flash_attention.h"
#include "autograd/ops/mask.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "layers/position/registry.h"
#include "layers/transformer.h"
#include "scheme_harness.h"
#include "test_helpers.h"

using namespace relpos;
using testing::largest_difference;
using testing::leaf;
using testing::relative_error;

namespace {

std::string describe(const AttentionChunk& c) {
  return "chunk " + std::to_string(c.size) + " left " + std::to_string(c.left_chunks) + " origin " +
         std::to_string(c.key_origin);
}

}  // namespace

TEST_CASE("chunk mask: each query sees its chunk and left_chunks earlier ones",
          "[attention][chunk]") {
  // Chunks of 2 from position 0, one earlier chunk: rows are queries 0..5.
  const std::vector<std::uint8_t> expected = {0, 0, 1, 1, 1, 1,  //
                                              0, 0, 1, 1, 1, 1,  //
                                              0, 0, 0, 0, 1, 1,  //
                                              0, 0, 0, 0, 1, 1,  //
                                              1, 1, 0, 0, 0, 0,  //
                                              1, 1, 0, 0, 0, 0};
  const Tensor m = chunk_mask(6, 6, {2, 1, 0});
  CHECK(std::vector<std::uint8_t>(m.data<std::uint8_t>(), m.data<std::uint8_t>() + 36) == expected);
  // Two queries after four cached keys whose first sits at position 3: chunks of 3 are
  // [3, 6) and [6, 9), so key indices 0..2 and 3..5; no limit on earlier chunks.
  const Tensor cached = chunk_mask(2, 6, {3, -1, 3});
  CHECK(std::vector<std::uint8_t>(cached.data<std::uint8_t>(), cached.data<std::uint8_t>() + 12) ==
        std::vector<std::uint8_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  const Tensor none_left = chunk_mask(2, 6, {3, 0, 3});
  CHECK(std::vector<std::uint8_t>(none_left.data<std::uint8_t>(),
                                  none_left.data<std::uint8_t>() + 12) ==
        std::vector<std::uint8_t>{1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0});
}

namespace {

constexpr std::int64_t kBatch = 2, kHeads = 2, kDim = 16;

// The output and the gradients of q, k, v and every scheme parameter for <out, weights>.
std::vector<Tensor> run(testing::SchemeUnderTest& s, const std::vector<Tensor>& inputs, DType dtype,
                        AttentionPath path, const AttentionChunk& chunk, const Tensor& weights) {
  std::vector<Tensor> x;
  for (std::size_t i = 0; i < 3; ++i) {
    Tensor copy = inputs[i].detach().to(dtype);
    copy.set_requires_grad(true);
    x.push_back(copy);
  }
  const std::vector<Tensor> values(inputs.begin() + 3, inputs.end());
  for (const Tensor& p : testing::set_parameters(*s.scheme, values, dtype)) x.push_back(p);
  Tensor out = testing::attention_through(*s.scheme, x[0], x[1], x[2], false, path, 0, chunk);
  backward(out, weights.to(dtype));
  std::vector<Tensor> result{out.detach()};
  for (const Tensor& t : x) result.push_back(t.grad());
  return result;
}

}  // namespace

// 600 keys span two default key tiles (512) and 70 or 600 queries several query tiles
// (32): with a band of 2 earlier chunks of 50, later query tiles skip the first key tile.
TEST_CASE("chunked flash and fused attention match the composed reference, every gradient",
          "[attention][flash][chunk][slow]") {
  for (auto& s : testing::attention_variants({24, kHeads, 1, false, kDim}, 80)) {
    for (auto [lq, lk] : {std::pair<std::int64_t, std::int64_t>{600, 600}, {70, 600}}) {
      for (const AttentionChunk& chunk : {AttentionChunk{50, 2, 0}, AttentionChunk{7, -1, 0}}) {
        INFO(s.label << " Lq=" << lq << " Lk=" << lk << " " << describe(chunk));
        Rng rng(81);
        std::vector<Tensor> inputs{randn({kBatch, kHeads, lq, kDim}, rng, DType::f64),
                                   randn({kBatch, kHeads, lk, kDim}, rng, DType::f64),
                                   randn({kBatch, kHeads, lk, kDim}, rng, DType::f64)};
        for (const NamedParameter& p : s.scheme->parameters())
          inputs.push_back(randn(p.tensor.shape(), rng, DType::f64, 0.5));
        const Tensor weights = randn({kBatch, kHeads, lq, kDim}, rng, DType::f64);
        const auto reference = run(s, inputs, DType::f64, AttentionPath::composed, chunk, weights);
        // The band is real: without it the output differs.
        const auto unbanded = run(s, inputs, DType::f64, AttentionPath::composed, {}, weights);
        CHECK(largest_difference(unbanded[0], reference[0]) > 1e-3);
        // fp32 flash: the tolerances of the unbanded comparison (test_flash_attention.cpp).
        const auto flash = run(s, inputs, DType::f32, AttentionPath::flash, chunk, weights);
        const auto flash64 = run(s, inputs, DType::f64, AttentionPath::flash, chunk, weights);
        const auto fused64 = run(s, inputs, DType::f64, AttentionPath::fused, chunk, weights);
        for (std::size_t i = 0; i < reference.size(); ++i) {
          INFO((i == 0 ? std::string("output") : "gradient of input " + std::to_string(i - 1)));
          REQUIRE(flash[i].defined());
          CHECK(relative_error(flash[i], reference[i]) <= (i <= 3 ? 1e-5 : 3e-5));
          CHECK(relative_error(flash64[i], reference[i]) <= 1e-12);
          CHECK(relative_error(fused64[i], reference[i]) <= 1e-12);
        }
      }
    }
  }
}

namespace {

// The flash op on x = {q, k, v, distance bias, clipped logits, xl_query, xl_r} with
// Shaw value bins, and XL's terms when causal (XL needs causal attention).
Tensor flash_chunked(const std::vector<Tensor>& x, std::int64_t clip, bool causal,
                     const AttentionChunk& chunk, std::int64_t query_tile, std::int64_t key_tile) {
  FlashTerms t;
  t.distance_bias = x[3];
  t.clipped = x[4];
  t.clip = clip;
  t.value_bins = true;
  if (causal) {
    t.xl_query = x[5];
    t.xl_r = x[6];
  }
  t.scale = 0.6;
  t.term_scale = 0.4;
  t.causal = causal;
  t.chunk = chunk;
  t.query_tile = query_tile;
  t.key_tile = key_tile;
  return flash_attention(x[0], x[1], x[2], t);
}

}  // namespace

TEST_CASE("gradcheck: flash attention with a chunk band across tiles",
          "[attention][flash][chunk][gradcheck]") {
  Rng rng(82);
  const std::int64_t b = 1, h = 2, d = 2, clip = 3, lq = 20, lk = 50;
  // 20 queries against 50 keys in tiles of 8 by 16: bands of 6 that start mid-tile,
  // with and without a key origin (cached keys from position 4), and chunks of 1.
  for (const AttentionChunk& chunk :
       {AttentionChunk{6, 1, 0}, AttentionChunk{6, 0, 4}, AttentionChunk{1, 2, 0}}) {
    for (bool causal : {false, true}) {
      INFO(describe(chunk) << " causal=" << causal);
      std::vector<Tensor> in{leaf({b, h, lq, d}, rng),
                             leaf({b, h, lk, d}, rng),
                             leaf({b, h, lk, d}, rng),
                             leaf({h, lq + lk - 1}, rng),
                             leaf({b, h, lq, 2 * clip + 1}, rng),
                             leaf({b, h, lq, d}, rng, 0.5),
                             leaf({h, lk, d}, rng, 0.5)};
      testing::require_gradcheck(
          [&](const auto& x) { return flash_chunked(x, clip, causal, chunk, 8, 16); }, in);
    }
  }
}

TEST_CASE("chunked flash attention gives the same result for any tile size",
          "[attention][flash][chunk]") {
  Rng rng(83);
  const std::int64_t b = 2, h = 2, d = 8, lq = 90, lk = 200, clip = 20;
  const AttentionChunk chunk{12, 3, 5};
  std::vector<Tensor> x;
  for (const Shape& shape : std::vector<Shape>{{b, h, lq, d},
                                               {b, h, lk, d},
                                               {b, h, lk, d},
                                               {h, lq + lk - 1},
                                               {b, h, lq, 2 * clip + 1},
                                               {b, h, lq, d},
                                               {h, lk, d}}) {
    Tensor t = randn(shape, rng, DType::f64);
    t.set_requires_grad(true);
    x.push_back(t);
  }
  const Tensor weights = randn({b, h, lq, d + 2 * clip + 1}, rng, DType::f64);
  auto gradients = [&](std::int64_t query_tile, std::int64_t key_tile) {
    for (const Tensor& t : x) t.zero_grad();
    Tensor out = flash_chunked(x, clip, false, chunk, query_tile, key_tile);
    backward(out, weights);
    std::vector<Tensor> result{out.detach()};
    for (std::size_t i = 0; i < 5; ++i) result.push_back(x[i].grad().clone());
    return result;
  };
  const auto reference = gradients(90, 200);  // one tile
  for (auto [query_tile, key_tile] :
       {std::pair<std::int64_t, std::int64_t>{0, 0}, {7, 13}, {32, 64}, {1, 200}, {90, 1}}) {
    const auto tiled = gradients(query_tile, key_tile);
    for (std::size_t i = 0; i < tiled.size(); ++i) {
      INFO("tiles " << query_tile << "x" << key_tile << " tensor " << i);
      CHECK(relative_error(tiled[i], reference[i]) <= 1e-12);
    }
  }
}

// C = 1 with every earlier chunk is causal attention; a chunk as long as the keys (or
// longer) is full attention. Both limits on every path, for every scheme.
TEST_CASE("chunk limits: C = 1 is causal attention, C >= L is full attention",
          "[attention][chunk][slow]") {
  const std::int64_t len = 40;
  for (auto& s : testing::attention_variants({24, kHeads, 1, false, kDim}, 84)) {
    Rng rng(85);
    testing::randomize_parameters(*s.scheme, DType::f64, rng);
    const Tensor q = randn({kBatch, kHeads, len, kDim}, rng, DType::f64);
    const Tensor k = randn({kBatch, kHeads, len, kDim}, rng, DType::f64);
    const Tensor v = randn({kBatch, kHeads, len, kDim}, rng, DType::f64);
    NoGradGuard no_grad;
    for (AttentionPath path :
         {AttentionPath::flash, AttentionPath::fused, AttentionPath::composed}) {
      INFO(s.label << " path " << name_of(path));
      auto attend = [&](bool causal, const AttentionChunk& chunk) {
        return testing::attention_through(*s.scheme, q, k, v, causal, path, 0, chunk);
      };
      const Tensor causal = attend(true, {});
      const Tensor full = attend(false, {});
      CHECK(largest_difference(attend(false, {1, -1, 0}), causal) <= 1e-12);
      CHECK(largest_difference(attend(false, {len, -1, 0}), full) <= 1e-12);
      CHECK(largest_difference(attend(false, {len, 0, 0}), full) <= 1e-12);
      CHECK(largest_difference(attend(false, {len + 9, 2, 0}), full) <= 1e-12);
    }
  }
}

namespace {

// Every variant of every bidirectional scheme in a small two-layer encoder.
std::vector<ModelConfig> small_encoders(const AttentionChunkConfig& chunk, AttentionPath path) {
  std::vector<ModelConfig> models;
  for (const std::string& scheme : position_scheme_names()) {
    if (find_position_scheme(scheme)->causal_only) continue;  // XL
    for (const PositionConfig& position : test_position_configs(scheme)) {
      ModelConfig& c = models.emplace_back();
      c.vocab = 32;
      c.d_model = 16;
      c.n_layers = 2;
      c.n_heads = 2;
      c.d_ff = 32;
      c.causal = false;
      c.position = position;
      c.attention_chunk = chunk;
      c.attention_path = path;
    }
  }
  return models;
}

Tensor random_tokens(std::int64_t batch, std::int64_t len, std::int64_t vocab, Rng& rng) {
  Tensor t = Tensor::empty({batch, len}, DType::i64);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.data<std::int64_t>()[i] = static_cast<std::int64_t>(rng.below(vocab));
  return t;
}

// Gives zero-initialised tables non-trivial values.
void perturb(const TransformerLM& model, Rng& rng) {
  NoGradGuard no_grad;
  for (const NamedParameter& p : model.parameters()) {
    Tensor t = p.tensor;
    t.copy_(add(t, randn(t.shape(), rng, t.dtype(), 0.05)));
  }
}

}  // namespace

TEST_CASE("a chunk-by-chunk forward with a KV cache equals the full forward under the chunk mask",
          "[attention][chunk][decode][slow]") {
  const std::int64_t len = 12;
  for (AttentionPath path : {AttentionPath::flash, AttentionPath::fused}) {
    for (const AttentionChunkConfig& chunk :
         {AttentionChunkConfig{4, -1, false}, AttentionChunkConfig{4, 1, false},
          AttentionChunkConfig{3, 0, false}, AttentionChunkConfig{1, -1, false},
          AttentionChunkConfig{1, 2, false}, AttentionChunkConfig{len, -1, false}}) {
      for (const ModelConfig& config : small_encoders(chunk, path)) {
        INFO(testing::describe_config(config.position)
             << " path " << name_of(path) << " chunk " << chunk.size << " left "
             << chunk.left_chunks);
        // A rotation that depends on the length refuses a KV cache
        // (test_incremental_decoding.cpp).
        if (testing::rotation_depends_on_length(config.position)) continue;
        Rng rng(86);
        TransformerLM model(config, rng);
        model.set_training(false);
        perturb(model, rng);
        NoGradGuard no_grad;
        const Tensor tokens = random_tokens(2, len, 32, rng);
        const Tensor full = model.forward(tokens);  // (2, L, V)
        DecodeState state;
        std::vector<Tensor> pieces;
        for (std::int64_t t = 0; t < len; t += chunk.size)
          pieces.push_back(model.forward(slice(tokens, 1, t, t + chunk.size), state, true));
        testing::require_close(concat(pieces, 1).to_vector(), full.to_vector(), 2e-5);
        // The band is used: full attention differs, except with one chunk for everything.
        model.set_attention_chunk_size(0);
        const double change = largest_difference(model.forward(tokens), full);
        if (chunk.size == len)
          CHECK(change == 0.0);
        else
          CHECK(change > 1e-4);
      }
    }
  }
}

// Segment memory of N chunks and one position more: key 0 sits at position start - M, one
// position before a chunk starts (a key origin that is not a chunk boundary), and the band
// reaches back over the N chunks only, so the result is the full forward's.
TEST_CASE("segment memory of left_chunks chunks equals the full forward under the chunk mask",
          "[attention][chunk][decode]") {
  const std::int64_t len = 12, size = 3, left = 1;
  for (const ModelConfig& config : small_encoders({size, left, false}, AttentionPath::flash)) {
    INFO(testing::describe_config(config.position));
    // A rotation that depends on the length refuses segment memory
    // (test_incremental_decoding.cpp).
    if (testing::rotation_depends_on_length(config.position)) continue;
    Rng rng(87);
    TransformerLM model(config, rng);
    model.set_training(false);
    perturb(model, rng);
    NoGradGuard no_grad;
    const Tensor tokens = random_tokens(2, len, 32, rng);
    const Tensor full = model.forward(tokens);
    DecodeState state;
    std::vector<Tensor> pieces;
    for (std::int64_t t = 0; t < len; t += 2 * size)  // segments of two chunks
      pieces.push_back(
          model.forward(slice(tokens, 1, t, t + 2 * size), state, false, left * size + 1));
    testing::require_close(concat(pieces, 1).to_vector(), full.to_vector(), 2e-5);
  }
}
