// Attention memory, measured through the engine's allocator at L = 2048, forward
// and backward: the flash path never allocates an (L, L) tensor, the fused path
// never an (L, L, head_dim) one.
#include <catch2/catch.hpp>

#include "autograd/allocator.h"
#include "autograd/ops/reduce.h"
#include "autograd/tape.h"
#include "layers/position/scheme.h"
#include "layers/scaled_attention.h"
#include "test_helpers.h"

using namespace relpos;

namespace {

struct AttentionMemory {
  std::size_t largest_block, peak;  // bytes, peak above what was allocated before
};

// Forward and backward of one causal attention call at L = 2048, head_dim 64.
AttentionMemory measure(const char* scheme, AttentionPath path) {
  const std::int64_t batch = 1, heads = 2, len = 2048, d = 64;
  Rng rng(60);
  PositionConfig config;
  config.scheme = scheme;
  config.set("max_relative", std::int64_t{64});
  auto position = make_position_scheme(config, {heads * d, heads, 1, true}, rng);
  Tensor q = randn({batch, heads, len, d}, rng);
  Tensor k = randn({batch, heads, len, d}, rng);
  Tensor v = randn({batch, heads, len, d}, rng);
  q.set_requires_grad(true);
  Allocator& allocator = allocator_for(Device::cpu);
  allocator.reset_peak();
  const std::size_t before = allocator.stats().current_bytes;
  Tensor out = scaled_attention(q, k, v, position->terms(0, len, len), true, path);
  backward(sum(out));
  const AllocatorStats stats = allocator.stats();
  REQUIRE(q.grad().defined());
  for (const NamedParameter& p : position->parameters()) REQUIRE(p.tensor.grad().defined());
  return {stats.largest_block, stats.peak_bytes - before};
}

constexpr std::size_t kScoresBytes = std::size_t(2048) * 2048 * 2 * sizeof(float);  // (B, H, L, L)
constexpr std::size_t kLldBytes = std::size_t(2048) * 2048 * 64 * sizeof(float);    // (L, L, d)
constexpr std::size_t kHeadsBytes = std::size_t(2048) * 2 * 64 * sizeof(float);     // (B, H, L, d)

}  // namespace

TEST_CASE("flash attention at L=2048 allocates nothing of L*L elements",
          "[positions][memory][slow]") {
  for (const char* scheme : {"none", "t5", "alibi", "shaw", "xl"}) {
    const AttentionMemory m = measure(scheme, AttentionPath::flash);
    INFO("scheme " << scheme << ": largest block " << m.largest_block << " B, peak " << m.peak
                   << " B");
    // The largest block is Shaw's output with its bins, (B, H, L, d + 2k+1) with
    // k = 64: three head-sized tensors, against a 32x larger (B, H, L, L) score matrix.
    CHECK(m.largest_block <= 4 * kHeadsBytes);
    // Peak: q, k, v-sized tensors and their gradients, Shaw's logits and bins and
    // XL's terms; linear in L, less than a single score matrix.
    CHECK(m.peak <= 24 * kHeadsBytes);
  }
}

TEST_CASE("fused attention at L=2048 allocates nothing of L*L*head_dim elements",
          "[positions][memory][slow]") {
  for (const char* scheme : {"t5", "shaw", "xl"}) {
    INFO("scheme " << scheme);
    const AttentionMemory m = measure(scheme, AttentionPath::fused);
    // The largest block is one (B, H, L, L) score matrix, far below L*L*d.
    CHECK(m.largest_block <= kScoresBytes);
    CHECK(m.largest_block * 16 < kLldBytes);
    // Peak: a handful of score-sized buffers: scores, probabilities and their
    // gradients, plus XL's (B, H, L, L) position logits and their gradient.
    CHECK(m.peak <= 8 * kScoresBytes);
  }
}
