// Chunked streaming attention (model.attention_chunk, docs/streaming.md): the band
// itself; the flash and fused paths against the composed reference with every gradient,
// and the flash op's gradcheck across tiles (cases over tests/attention_harness.h); the
// limits C = 1 (causal) and C >= L (full attention) for every scheme; and a chunk-by-chunk
// forward with a KV cache (or segment memory) equal to the full forward under the mask.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "attention_harness.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/mask.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "layers/position/registry.h"
#include "layers/transformer.h"
#include "scheme_harness.h"
#include "test_helpers.h"

using namespace relpos;
using testing::EveryTermCase;
using testing::largest_difference;
using testing::relative_error;

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

constexpr std::int64_t kBatch = 2, kHeads = 2, kDim = 16;

// 600 keys span two default key tiles (512) and 70 or 600 queries several query tiles
// (32): with a band of 2 earlier chunks of 50, later query tiles skip the first key tile.
TEST_CASE("chunked flash and fused attention match the composed reference, every gradient",
          "[attention][flash][chunk][slow]") {
  testing::AttentionSweep sweep;
  sweep.seed = 80;
  sweep.options = {{.chunk = {50, 2, 0}}, {.chunk = {7, -1, 0}}};
  sweep.lengths = {{600, 600}, {70, 600}};
  // fp32 flash: the tolerances of the unbanded comparison (test_flash_attention.cpp).
  sweep.paths = {{AttentionPath::flash, DType::f32, Precision::fp32, 1e-5, 3e-5, 0},
                 {AttentionPath::flash, DType::f64, Precision::fp32, 1e-12, 1e-12, 0},
                 {AttentionPath::fused, DType::f64, Precision::fp32, 1e-12, 1e-12, 0}};
  CHECK(testing::check_against_composed(sweep) > 0);
}

TEST_CASE("gradcheck: flash attention with a chunk band across tiles",
          "[attention][flash][chunk][gradcheck]") {
  Rng rng(82);
  // 20 queries against 50 keys in tiles of 8 by 16 (gradcheck_case): bands of 6 that start
  // mid-tile, with and without a key origin (cached keys from position 4), and chunks of 1.
  for (const AttentionChunk& chunk :
       {AttentionChunk{6, 1, 0}, AttentionChunk{6, 0, 4}, AttentionChunk{1, 2, 0}}) {
    for (bool causal : {false, true}) {
      const EveryTermCase c = testing::gradcheck_case(causal, chunk);
      INFO(testing::describe(c));
      testing::require_gradcheck([&](const auto& x) { return testing::flash_every_term(x, c); },
                                 testing::every_term_inputs(c, DType::f64, rng));
    }
  }
}

TEST_CASE("chunked flash attention gives the same result for any tile size",
          "[attention][flash][chunk]") {
  EveryTermCase c{.dim = 8, .scale = 0.6, .term_scale = 0.4, .chunk = {12, 3, 5}, .seed = 83};
  c.query_tile = 90;  // one tile
  c.key_tile = 200;
  const auto reference = testing::every_term_results(c, DType::f64);
  for (auto [query_tile, key_tile] :
       {std::pair<std::int64_t, std::int64_t>{0, 0}, {7, 13}, {32, 64}, {1, 200}, {90, 1}}) {
    c.query_tile = query_tile;
    c.key_tile = key_tile;
    const auto tiled = testing::every_term_results(c, DType::f64);
    for (std::size_t i = 0; i < tiled.size(); ++i) {
      INFO(testing::describe(c) << " " << testing::result_name(i));
      CHECK(relative_error(tiled[i], reference[i]) <= 1e-12);
    }
  }
}

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
