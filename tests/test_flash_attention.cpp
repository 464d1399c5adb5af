// The tiled (flash) attention path (cases over tests/attention_harness.h): against the
// composed reference at sizes that span several query and key tiles (and partial ones),
// causal and bidirectional, Lq < Lk as with memory; an fp64 gradcheck of the op with
// every term; and the same result for any tile size and for 1 and 2 threads.
#include <catch2/catch.hpp>
#include <string>

#include "attention_harness.h"
#include "autograd/ops/flash_attention.h"
#include "autograd/threads.h"
#include "test_helpers.h"

using namespace relpos;
using testing::EveryTermCase;
using testing::relative_error;

// Lengths of 560 and 600 keys span two default key tiles (512), the second partial,
// and 70 or 560 queries span several query tiles (32), the last partial.
TEST_CASE("flash attention matches the composed reference over many tiles, every scheme",
          "[attention][flash][slow]") {
  testing::AttentionSweep sweep;
  sweep.seed = 69;
  sweep.options = {{.causal = true}, {.causal = false}};
  sweep.lengths = {{560, 560}, {70, 600}};
  // fp32 flash against the fp64 reference: relative error <= 1e-5 for the output and
  // the q, k, v gradients. A table gradient sums p·dlogit over every (query, key) pair
  // of its distance bin; the test variants clip early (k = 2, 6 buckets), so a
  // saturated bin sums ~B·H·Lq·Lk = 1.7e5 cancelling f32 products: measured 1.0e-5 and
  // 1.3e-5 (Shaw, T5 at Lq=70, Lk=600), hence 3e-5 there. fp64 flash agrees to rounding.
  sweep.paths = {{AttentionPath::flash, DType::f32, Precision::fp32, 1e-5, 3e-5},
                 {AttentionPath::flash, DType::f64, Precision::fp32, 1e-12, 1e-12}};
  CHECK(testing::check_against_composed(sweep) > 0);
}

TEST_CASE("gradcheck: flash attention with every term across tiles",
          "[attention][flash][gradcheck]") {
  Rng rng(71);
  for (bool causal : {true, false}) {
    const EveryTermCase c = testing::gradcheck_case(causal);  // across query and key tiles
    INFO(testing::describe(c));
    testing::require_gradcheck([&](const auto& x) { return testing::flash_every_term(x, c); },
                               testing::every_term_inputs(c, DType::f64, rng));
  }
}

TEST_CASE("flash attention is bit-identical with 1 and 2 threads", "[attention][flash]") {
  for (bool causal : {true, false}) {
    const EveryTermCase c{.causal = causal};
    const int threads = num_threads();
    set_num_threads(1);
    const auto one = testing::every_term_results(c, DType::f32);
    set_num_threads(2);
    const auto two = testing::every_term_results(c, DType::f32);
    set_num_threads(threads);
    for (std::size_t i = 0; i < one.size(); ++i) {
      INFO(testing::describe(c) << " " << testing::result_name(i));
      REQUIRE(one[i].defined());
      CHECK(one[i].to_vector() == two[i].to_vector());
    }
  }
}

TEST_CASE("flash attention gives the same result for any tile size", "[attention][flash]") {
  for (bool causal : {true, false}) {
    EveryTermCase c{.causal = causal, .query_tile = 90, .key_tile = 200};  // one tile
    const auto reference = testing::every_term_results(c, DType::f64);
    for (auto [query_tile, key_tile] :
         {std::pair<std::int64_t, std::int64_t>{0, 0}, {7, 13}, {32, 64}, {1, 200}}) {
      c.query_tile = query_tile;
      c.key_tile = key_tile;
      const auto tiled = testing::every_term_results(c, DType::f64);
      for (std::size_t i = 0; i < tiled.size(); ++i) {
        INFO(testing::describe(c) << " " << testing::result_name(i));
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
