#pragma once
// The one harness of the attention tests (test_flash_attention.cpp, test_flash_bf16.cpp,
// test_attention_chunk.cpp), in two parts:
//
// 1. Sweeps through the position schemes: every scheme variant (tests/scheme_harness.h)
//    × options (causal, chunk band) × lengths × the paths under test (path, dtype,
//    precision, tolerances), each compared — output and every gradient (q, k, v and the
//    scheme's parameters) — with the fp64 composed ops, the independent reference.
//    A new scheme is found through the registry; a new attention option is a field of
//    AttentionOptions (passed on in attend()) and a line in a test's list of options.
//
// 2. The flash op with every term at once (T5/ALiBi bias, Shaw key logits and value
//    bins, Transformer-XL's terms when causal, a chunk band), for gradchecks and for
//    what must not change its result: tile sizes, threads, the precision scope.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "autograd/attention_chunk.h"
#include "autograd/precision.h"
#include "autograd/tensor.h"
#include "layers/scaled_attention.h"
#include "scheme_harness.h"

namespace relpos::testing {

// ---- 1. Sweeps through the position schemes -------------------------------------------

// What an attention call adds besides the scheme's terms.
struct AttentionOptions {
  bool causal = false;
  AttentionChunk chunk{};  // size and window 0: no band
};

std::string describe(const AttentionOptions& options);

// One way to compute attention, and how close it must come to the fp64 composed
// reference: relative_error (max |a - b| / max |b|) of each tensor.
struct PathUnderTest {
  AttentionPath path;
  DType dtype;
  Precision precision = Precision::fp32;
  double tolerance = 0;        // the output and the q, k, v gradients
  double table_tolerance = 0;  // the gradients of the scheme's parameters
  // > 0: the output must be further off than this (a rounding mode is really used).
  double output_error_above = 0;
};

std::string describe(const PathUnderTest& p);

// The flash op on f32 with bf16 products: within 8 bf16 unit roundoffs (8 · 2^-8) of the
// fp64 reference, output and tables alike, and more than 1e-4 from it (bf16 really used).
PathUnderTest flash_bf16_path();

struct AttentionSweep {
  std::int64_t batch = 2, heads = 2, head_dim = 16;
  std::int64_t d_model = 24;  // != heads * head_dim: XL's W_r input width differs from the heads'
  std::vector<AttentionOptions> options;
  std::vector<std::pair<std::int64_t, std::int64_t>> lengths;  // (Lq, Lk), Lq <= Lk
  std::vector<PathUnderTest> paths;
  // The schemes are built with `seed`; the inputs of every case come from Rng(seed + 1).
  std::uint64_t seed = 0;
};

// Attention through a scheme as MultiHeadAttention applies it (attention_through).
Tensor attend(const SchemeUnderTest& s, const Tensor& q, const Tensor& k, const Tensor& v,
              const AttentionOptions& options, AttentionPath path);

// Runs the sweep with Catch CHECKs; with a chunk band or a window, also checks that the
// band changes the reference's output (by more than 1e-3). A sweep with a bf16 path reports itself
// skipped where bf16 products are unavailable (bf16_usable()). Returns the number of
// comparisons made (variant × options × lengths × path).
std::size_t check_against_composed(const AttentionSweep& sweep);

// ---- 2. The flash op with every term ---------------------------------------------------

struct EveryTermCase {
  std::int64_t batch = 2, heads = 2, dim = 16, q_len = 90, k_len = 200, clip = 20;
  bool causal = false;  // XL's terms are added only to causal attention
  double scale = 0.25, term_scale = 0.25;
  AttentionChunk chunk{};
  std::int64_t query_tile = 0, key_tile = 0;  // 0: the backend's defaults
  std::uint64_t seed = 72;                    // of every_term_results' inputs and weights
};

std::string describe(const EveryTermCase& c);

// Small enough for an fp64 gradcheck: B=1, H=2, D=2, 20 queries against 50 keys, k=3, in
// tiles of 8 queries by 16 keys (three query tiles and four key tiles, the last of each
// partial); scales 0.6 and 0.4.
EveryTermCase gradcheck_case(bool causal, const AttentionChunk& chunk = {});

// x = {q, k, v, distance bias, Shaw's clipped logits, xl_query, xl_r}: leaves in `dtype`,
// N(0, 1), XL's two N(0, 0.25).
std::vector<Tensor> every_term_inputs(const EveryTermCase& c, DType dtype, Rng& rng);

// The flash op on every_term_inputs: (B, H, Lq, D + 2k+1), the output and Shaw's bins.
Tensor flash_every_term(const std::vector<Tensor>& x, const EveryTermCase& c);

// The output and the gradients of every input the op reads (XL's two when causal) for
// <out, w>, inputs and w from Rng(c.seed); the forward runs under `precision`, the
// backward after that scope unless `backward_in_scope` (it must repeat the recorded
// precision).
std::vector<Tensor> every_term_results(const EveryTermCase& c, DType dtype,
                                       Precision precision = Precision::fp32,
                                       bool backward_in_scope = false);

// "output" or "gradient of input i - 1", for messages about every_term_results.
std::string result_name(std::size_t i);

}  // namespace relpos::testing
