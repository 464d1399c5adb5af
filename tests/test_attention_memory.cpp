// Relative attention never allocates an (L, L, head_dim) tensor: measured through
// the engine's allocator at L = 2048, forward and backward.
#include <catch2/catch.hpp>

#include "autograd/allocator.h"
#include "autograd/ops/reduce.h"
#include "autograd/tape.h"
#include "layers/position/relative.h"
#include "layers/position/scheme.h"
#include "layers/scaled_attention.h"
#include "test_helpers.h"

using namespace relpos;

TEST_CASE("T5, Shaw and XL attention at L=2048 allocate nothing of L*L*head_dim elements",
          "[positions][memory]") {
  const std::int64_t batch = 1, heads = 2, len = 2048, d = 64;
  const std::size_t lld_bytes = std::size_t(len) * len * d * sizeof(float);
  const std::size_t scores_bytes = std::size_t(batch) * heads * len * len * sizeof(float);
  for (const char* scheme : {"t5", "shaw", "xl"}) {
    INFO("scheme " << scheme);
    Rng rng(60);
    PositionConfig config;
    config.scheme = scheme;
    config.max_relative = 64;
    auto position = make_position_scheme(config, {heads * d, heads, 1, true}, rng);
    Tensor q = testing::leaf({batch, heads, len, d}, rng).to(DType::f32);
    Tensor k = randn({batch, heads, len, d}, rng);
    Tensor v = randn({batch, heads, len, d}, rng);
    q = q.detach();
    q.set_requires_grad(true);
    Allocator& allocator = allocator_for(Device::cpu);
    allocator.reset_peak();
    const std::size_t before = allocator.stats().current_bytes;
    Tensor out = scaled_attention(q, k, v, position->terms(0, len, len), true);
    backward(sum(out));
    const AllocatorStats stats = allocator.stats();
    REQUIRE(q.grad().defined());
    for (const NamedParameter& p : position->parameters()) REQUIRE(p.tensor.grad().defined());
    // The largest block is one (B, H, L, L) score matrix, far below L*L*d.
    REQUIRE(stats.largest_block <= scores_bytes);
    REQUIRE(stats.largest_block * 16 < lld_bytes);
    // Peak: a handful of score-sized buffers: scores, probabilities and their
    // gradients, plus XL's (B, H, L, L) position logits and their gradient.
    REQUIRE(stats.peak_bytes - before <= 8 * scores_bytes);
  }
}
