// fp64 gradchecks of the relative-position ops and of attention through every
// scheme, at sizes where clipping and bucket saturation happen and with Lq < Lk.
#include <catch2/catch.hpp>

#include "autograd/ops/relative.h"
#include "autograd/ops/rotary.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "layers/position/absolute.h"
#include "layers/position/alibi_slopes.h"
#include "layers/position/relative.h"
#include "layers/position/rope.h"
#include "layers/position/t5_buckets.h"
#include "layers/scaled_attention.h"
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
  require_gradcheck([&](const auto& in) { return clipped_bin(in[0], k); }, {leaf({2, lq, lk}, rng)});
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

namespace {

// Attention through a scheme, with the scheme's tables as extra inputs.
void gradcheck_attention(const char* scheme, bool causal, std::int64_t lq, std::int64_t lk) {
  Rng rng(42);
  const std::int64_t b = 1, h = 2, d = 4;
  std::vector<Tensor> in{leaf({b, h, lq, d}, rng), leaf({b, h, lk, d}, rng), leaf({b, h, lk, d}, rng)};
  const std::string s = scheme;
  if (s == "t5") in.push_back(leaf({6, h}, rng));
  if (s == "shaw") {
    in.push_back(leaf({5, d}, rng, 0.5));     // keys, k = 2 < L: clipping happens
    in.push_back(leaf({h, 5, d}, rng, 0.5));  // per-head values
  }
  if (s == "xl") {
    in.push_back(leaf({h * d, 6}, rng, 0.5));  // W_r with d_model 6
    in.push_back(leaf({h, d}, rng, 0.5));      // u
    in.push_back(leaf({h, d}, rng, 0.5));      // v
  }
  for (AttentionPath path :
       {AttentionPath::flash, AttentionPath::fused, AttentionPath::composed}) {
    INFO(scheme << " causal=" << causal << " Lq=" << lq << " Lk=" << lk << " path="
                << name_of(path));
    require_gradcheck(
        [&](const std::vector<Tensor>& x) {
          PositionTerms t;
          Tensor q = x[0], k = x[1];
          if (s == "t5") {
            // 6 buckets, max_distance 4: distances up to 9 saturate.
            t.distance_bias = bucket_gather(x[3], t5_distance_buckets(lq, lk, {6, 4, !causal}));
          } else if (s == "shaw") {
            t.shaw_clip = 2;
            t.shaw_keys = x[3];
            t.shaw_values = x[4];
          } else if (s == "xl") {
            t.xl_r = xl_relative_encodings(x[3], lk, h, 3);  // clamp_len 3 < Lk
            t.xl_u = x[4];
            t.xl_v = x[5];
          } else if (s == "alibi") {
            t.distance_bias = alibi_distance_bias(alibi_slopes(h), lq, lk).to(DType::f64);
          } else if (s == "rope") {
            RotaryPosition rope(d, 10000.0);
            q = rope.rotate(q, lk - lq);
            k = rope.rotate(k, 0);
          }
          return scaled_attention(q, k, x[2], t, causal, path);
        },
        in);
  }
}

}  // namespace

TEST_CASE("gradcheck: attention through every scheme, tables and q, k, v", "[positions][gradcheck]") {
  for (const char* scheme : {"none", "t5", "shaw", "alibi", "rope"})
    for (bool causal : {true, false}) {
      gradcheck_attention(scheme, causal, 9, 9);
      gradcheck_attention(scheme, causal, 4, 10);
    }
  gradcheck_attention("xl", true, 9, 9);
  gradcheck_attention("xl", true, 4, 10);
}

TEST_CASE("absolute position terms: sinusoid gradcheck and the learned table's gradient",
          "[positions][gradcheck]") {
  Rng rng(43);
  SinusoidalPosition sinusoidal(6);
  require_gradcheck([&](const auto& in) { return sinusoidal.embed(in[0], 4); },
                    {leaf({2, 5, 6}, rng)});
  // The learned table receives, at rows start..start+L-1, the sum over the batch
  // of the output gradient, and nothing elsewhere.
  Rng init(1);
  LearnedPosition learned(12, 3, init);
  const Tensor table = learned.parameters()[0].tensor;
  Tensor x = randn({2, 4, 3}, rng);
  Tensor g = randn({2, 4, 3}, rng);
  backward(learned.embed(x, 5), g);
  const auto grad = table.grad().to_vector();
  const auto gv = g.to_vector();
  for (std::int64_t row = 0; row < 12; ++row)
    for (std::int64_t c = 0; c < 3; ++c) {
      const bool inside = row >= 5 && row < 9;
      const double expected = inside ? gv[(row - 5) * 3 + c] + gv[12 + (row - 5) * 3 + c] : 0.0;
      REQUIRE(grad[row * 3 + c] == Approx(expected).margin(1e-6));
    }
  REQUIRE_THROWS_WITH(learned.embed(x, 9), Catch::Contains("max_len=12"));
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
