// fp64 gradchecks of the relative-position ops and of attention through every
// scheme, at sizes where clipping and bucket saturation happen and with Lq < Lk.
#include <catch2/catch.hpp>

#include "autograd/ops/relative.h"
#include "autograd/ops/rotary.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "layers/position/t5_buckets.h"
#include "scheme_harness.h"
#include "test_helpers.h"

using namespace relpos;
using testing::leaf;
using testing::require_gradcheck;

TEST_CASE("gradcheck: relative gathers and their adjoints", "[positions][gradcheck]") {
  Rng rng(40);
  const std::int64_t lq = 4, lk = 7, k = 2;
  require_gradcheck([&](const auto& in) { return distance_expand(in[0], lq, lk); },
                    {leaf({3, lq + lk - 1}, rng)});
  require_gradcheck([&](const auto& in) { return clipped_gather(in[0], lk, k); },
                    {leaf({2, 3, lq, 2 * k + 1}, rng)});
  require_gradcheck([&](const auto& in) { return clipped_bin(in[0], k); },
                    {leaf({2, lq, lk}, rng)});
  require_gradcheck([&](const auto& in) { return rel_shift(in[0]); }, {leaf({2, 3, lq, lk}, rng)});
  const T5BucketConfig buckets{8, 6, true};
  require_gradcheck(
      [&](const auto& in) { return bucket_gather(in[0], t5_distance_buckets(lq, lk, buckets)); },
      {leaf({8, 3}, rng)});
}

TEST_CASE("gradcheck: fused relative softmax with every term", "[positions][gradcheck]") {
  Rng rng(41);
  for (bool causal : {true, false}) {
    for (auto [lq, lk] : {std::pair<std::int64_t, std::int64_t>{5, 5}, {3, 8}}) {
      const std::int64_t k = 2;
      Tensor scores = leaf({2, 2, lq, lk}, rng);
      Tensor bias = leaf({2, lq + lk - 1}, rng);
      Tensor clipped = leaf({2, 2, lq, 2 * k + 1}, rng);
      Tensor shifted = leaf({2, 2, lq, lk}, rng);
      INFO("causal=" << causal << " Lq=" << lq << " Lk=" << lk);
      require_gradcheck(
          [&](const auto& in) {
            RelativeTerms t;
            t.distance_bias = in[1];
            t.clipped = in[2];
            t.clip = k;
            t.scale = 0.7;
            t.term_scale = 0.4;
            t.causal = causal;
            if (causal) t.shifted = in[3];
            return relative_softmax(in[0], t);
          },
          {scores, bias, clipped, shifted});
    }
  }
}

TEST_CASE("gradcheck: attention through every scheme, tables and q, k, v",
          "[positions][gradcheck][slow]") {
  const std::int64_t b = 1, h = 2, d = 4;
  for (bool causal : {true, false}) {
    // d_model 6 != H * D: W_r's input width is checked apart from the heads'.
    for (auto& s : testing::attention_variants({6, h, 1, causal, d}, 42)) {
      for (auto [lq, lk] : {std::pair<std::int64_t, std::int64_t>{9, 9}, {4, 10}}) {
        Rng rng(42);
        std::vector<Tensor> in{leaf({b, h, lq, d}, rng), leaf({b, h, lk, d}, rng),
                               leaf({b, h, lk, d}, rng)};
        for (const Tensor& p : testing::randomize_parameters(*s.scheme, DType::f64, rng))
          in.push_back(p);  // perturbed in place: the scheme reads the same tensors
        for (AttentionPath path :
             {AttentionPath::flash, AttentionPath::fused, AttentionPath::composed}) {
          INFO(s.label << " causal=" << causal << " Lq=" << lq << " Lk=" << lk
                       << " path=" << name_of(path));
          require_gradcheck(
              [&](const std::vector<Tensor>& x) {
                return testing::attention_through(*s.scheme, x[0], x[1], x[2], causal, path);
              },
              in);
        }
      }
    }
  }
}

TEST_CASE("absolute position terms: gradchecks of every embedding scheme",
          "[positions][gradcheck]") {
  for (auto& s : testing::all_scheme_variants({6, 2, 1, true}, 43)) {
    Rng rng(43);
    std::vector<Tensor> in{leaf({2, 5, 6}, rng)};
    for (const Tensor& p : testing::randomize_parameters(*s.scheme, DType::f64, rng))
      in.push_back(p);
    INFO(s.label);
    require_gradcheck([&](const auto& x) { return s.scheme->embed(x[0], 4); }, in);
  }
}

TEST_CASE("the learned table's gradient lands on the rows of the positions used",
          "[positions][gradcheck]") {
  // At rows start..start+L-1 the table receives the sum over the batch of the output
  // gradient, and nothing elsewhere.
  PositionConfig config;
  config.scheme = "learned";
  config.set("max_len", std::int64_t{12});
  Rng init(1), rng(43);
  auto learned = make_position_scheme(config, {3, 1, 1, true}, init);
  const Tensor table = learned->parameters()[0].tensor;
  Tensor x = randn({2, 4, 3}, rng);
  Tensor g = randn({2, 4, 3}, rng);
  backward(learned->embed(x, 5), g);
  const auto grad = table.grad().to_vector();
  const auto gv = g.to_vector();
  for (std::int64_t row = 0; row < 12; ++row)
    for (std::int64_t c = 0; c < 3; ++c) {
      const bool inside = row >= 5 && row < 9;
      const double expected = inside ? gv[(row - 5) * 3 + c] + gv[12 + (row - 5) * 3 + c] : 0.0;
      REQUIRE(grad[row * 3 + c] == Approx(expected).margin(1e-6));
    }
  REQUIRE_THROWS_WITH(learned->embed(x, 9), Catch::Contains("max_len=12"));
}

TEST_CASE("gradcheck: the rotary op on a strided input", "[positions][gradcheck]") {
  Rng rng(44);
  // x (B, H, L, D) viewed from (B, L, H, D), as the attention layer splits heads.
  Tensor base = randn({2, 5, 3, 4}, rng, DType::f64);
  Tensor x = permute(base, {0, 2, 1, 3}).detach();
  x.set_requires_grad(true);
  const Tensor cos = randn({5, 2}, rng, DType::f64), sin = randn({5, 2}, rng, DType::f64);
  require_gradcheck([&](const auto& in) { return rotary(in[0], cos, sin); }, {x});
}
