// The tiled (flash) attention path: against the composed reference at sizes that
// span several query and key tiles (and partial ones), causal and bidirectional,
// Lq < Lk as with memory; an fp64 gradcheck of the op with every term; and
// bit-identical results for 1 and 2 threads.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "autograd/ops/flash_attention.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/relative.h"
#include "autograd/tape.h"
#include "autograd/threads.h"
#include "scheme_harness.h"
#include "test_helpers.h"

using namespace relpos;
using testing::leaf;
using testing::relative_error;

namespace {

constexpr std::int64_t kBatch = 2, kHeads = 2, kDim = 16;

struct FlashCase {
  testing::SchemeUnderTest* scheme;
  bool causal;
  std::int64_t q_len, k_len;
};

// The output and the gradients of q, k, v and every scheme parameter for <out, weights>,
// everything in `dtype`; `inputs` holds q, k, v and then the parameters' values.
std::vector<Tensor> run(const FlashCase& c, const std::vector<Tensor>& inputs, DType dtype,
                        AttentionPath path, const Tensor& weights) {
  std::vector<Tensor> x;
  for (std::size_t i = 0; i < 3; ++i) {
    Tensor copy = inputs[i].detach().to(dtype);
    copy.set_requires_grad(true);
    x.push_back(copy);
  }
  const std::vector<Tensor> values(inputs.begin() + 3, inputs.end());
  for (const Tensor& p : testing::set_parameters(*c.scheme->scheme, values, dtype)) x.push_back(p);
  Tensor out = testing::attention_through(*c.scheme->scheme, x[0], x[1], x[2], c.causal, path);
  backward(out, weights.to(dtype));
  std::vector<Tensor> result{out.detach()};
  for (const Tensor& t : x) result.push_back(t.grad());
  return result;
}

// The flash op on x = {q, k, v, distance bias, clipped logits, xl_query, xl_r} with
// Shaw value bins, and XL's terms when causal.
Tensor flash_every_term(const std::vector<Tensor>& x, std::int64_t clip, bool causal, double scale,
                        double term_scale, std::int64_t query_tile, std::int64_t key_tile) {
  FlashTerms t;
  t.distance_bias = x[3];
  t.clipped = x[4];
  t.clip = clip;
  t.value_bins = true;
  if (causal) {
    t.xl_query = x[5];
    t.xl_r = x[6];
  }
  t.scale = scale;
  t.term_scale = term_scale;
  t.causal = causal;
  t.query_tile = query_tile;
  t.key_tile = key_tile;
  return flash_attention(x[0], x[1], x[2], t);
}

}  // namespace

// Lengths of 560 and 600 keys span two default key tiles (512), the second partial,
// and 70 or 560 queries span several query tiles (32), the last partial.
TEST_CASE("flash attention matches the composed reference over many tiles, every scheme",
          "[attention][flash][slow]") {
  for (bool causal : {true, false}) {
    // d_model 24 != H * D: XL's W_r input width differs from the heads'.
    for (auto& s : testing::attention_variants({24, kHeads, 1, causal, kDim}, 70)) {
      for (auto [lq, lk] : {std::pair<std::int64_t, std::int64_t>{560, 560}, {70, 600}}) {
        const FlashCase c{&s, causal, lq, lk};
        INFO(s.label << " causal=" << causal << " Lq=" << lq << " Lk=" << lk);
        Rng rng(70);
        std::vector<Tensor> inputs{randn({kBatch, kHeads, lq, kDim}, rng, DType::f64),
                                   randn({kBatch, kHeads, lk, kDim}, rng, DType::f64),
                                   randn({kBatch, kHeads, lk, kDim}, rng, DType::f64)};
        for (const NamedParameter& p : s.scheme->parameters())
          inputs.push_back(randn(p.tensor.shape(), rng, DType::f64, 0.5));
        const Tensor weights = randn({kBatch, kHeads, lq, kDim}, rng, DType::f64);
        // fp32 flash against the fp64 reference: relative error <= 1e-5 for the output and
        // the q, k, v gradients. A table gradient sums p·dlogit over every (query, key) pair
        // of its distance bin; the test variants clip early (k = 2, 6 buckets), so a
        // saturated bin sums ~B·H·Lq·Lk = 1.7e5 cancelling f32 products: measured 1.0e-5 and
        // 1.3e-5 (Shaw, T5 at Lq=70, Lk=600), hence 3e-5 there.
        const auto reference = run(c, inputs, DType::f64, AttentionPath::composed, weights);
        const auto flash = run(c, inputs, DType::f32, AttentionPath::flash, weights);
        for (std::size_t i = 0; i < reference.size(); ++i) {
          INFO((i == 0 ? std::string("output") : "gradient of input " + std::to_string(i - 1)));
          REQUIRE(flash[i].defined());
          CHECK(relative_error(flash[i], reference[i]) <= (i <= 3 ? 1e-5 : 3e-5));
        }
        // fp64 flash agrees with fp64 composed to rounding.
        const auto flash64 = run(c, inputs, DType::f64, AttentionPath::flash, weights);
        for (std::size_t i = 0; i < reference.size(); ++i)
          CHECK(relative_error(flash64[i], reference[i]) <= 1e-12);
      }
    }
  }
}

TEST_CASE("gradcheck: flash attention with every term across tiles",
          "[attention][flash][gradcheck]") {
  Rng rng(71);
  const std::int64_t b = 1, h = 2, d = 2, clip = 3;
  for (bool causal : {true, false}) {
    // 20 queries against 50 keys in tiles of 8 queries by 16 keys: three query tiles
    // and four key tiles, the last of each partial.
    const std::int64_t lq = 20, lk = 50;
    INFO("causal=" << causal);
    std::vector<Tensor> in{leaf({b, h, lq, d}, rng),
                           leaf({b, h, lk, d}, rng),
                           leaf({b, h, lk, d}, rng),
                           leaf({h, lq + lk - 1}, rng),
                           leaf({b, h, lq, 2 * clip + 1}, rng),
                           leaf({b, h, lq, d}, rng, 0.5),
                           leaf({h, lk, d}, rng, 0.5)};
    testing::require_gradcheck(
        [&](const auto& x) { return flash_every_term(x, clip, causal, 0.6, 0.4, 8, 16); }, in);
  }
}

namespace {

// The flash op with every term: B=2, H=2, D=16, Lq=90 of Lk=200, k=20; tile sizes
// 0 are the defaults.
std::vector<Tensor> flash_with_every_term(bool causal, DType dtype, std::int64_t query_tile = 0,
                                          std::int64_t key_tile = 0) {
  Rng rng(72);
  const std::int64_t b = 2, h = 2, d = 16, lq = 90, lk = 200, clip = 20;
  std::vector<Tensor> x;
  for (const Shape& shape : std::vector<Shape>{{b, h, lq, d},
                                               {b, h, lk, d},
                                               {b, h, lk, d},
                                               {h, lq + lk - 1},
                                               {b, h, lq, 2 * clip + 1},
                                               {b, h, lq, d},
                                               {h, lk, d}}) {
    Tensor t = randn(shape, rng, dtype);
    t.set_requires_grad(true);
    x.push_back(t);
  }
  Tensor out = flash_every_term(x, clip, causal, 0.25, 0.25, query_tile, key_tile);
  backward(out, randn(out.shape(), rng, dtype));
  std::vector<Tensor> result{out.detach()};
  for (std::size_t i = 0; i < (causal ? 7u : 5u); ++i) result.push_back(x[i].grad());
  return result;
}

}  // namespace

TEST_CASE("flash attention is bit-identical with 1 and 2 threads", "[attention][flash]") {
  for (bool causal : {true, false}) {
    const int threads = num_threads();
    set_num_threads(1);
    const auto one = flash_with_every_term(causal, DType::f32);
    set_num_threads(2);
    const auto two = flash_with_every_term(causal, DType::f32);
    set_num_threads(threads);
    for (std::size_t i = 0; i < one.size(); ++i) {
      INFO("causal=" << causal << (i == 0 ? " output" : " gradient of input ") << i - 1);
      REQUIRE(one[i].defined());
      CHECK(one[i].to_vector() == two[i].to_vector());
    }
  }
}

TEST_CASE("flash attention gives the same result for any tile size", "[attention][flash]") {
  for (bool causal : {true, false}) {
    const auto reference = flash_with_every_term(causal, DType::f64, 90, 200);  // one tile
    for (auto [query_tile, key_tile] :
         {std::pair<std::int64_t, std::int64_t>{0, 0}, {7, 13}, {32, 64}, {1, 200}}) {
      const auto tiled = flash_with_every_term(causal, DType::f64, query_tile, key_tile);
      for (std::size_t i = 0; i < tiled.size(); ++i) {
        INFO("causal=" << causal << " tiles " << query_tile << "x" << key_tile << " tensor " << i);
        CHECK(relative_error(tiled[i], reference[i]) <= 1e-12);
      }
    }
  }
}

TEST_CASE("flash attention rejects inconsistent inputs with one-line errors",
          "[attention][flash]") {
  Rng rng(73);
  Tensor q = randn({1, 2, 4, 3}, rng), k = randn({1, 2, 6, 3}, rng);
  FlashTerms t;
  t.distance_bias = randn({2, 8}, rng);
  REQUIRE_THROWS_WITH(flash_attention(q, k, k, t), Catch::Contains("(H, Lq+Lk-1) = (2, 9)"));
  FlashTerms xl;
  xl.xl_query = q;
  xl.xl_r = randn({2, 6, 3}, rng);
  REQUIRE_THROWS_WITH(flash_attention(q, k, k, xl), Catch::Contains("need causal attention"));
  REQUIRE_THROWS_WITH(flash_attention(k, q, q, {}), Catch::Contains("Lk >= Lq"));
}
