// The model's 12 GEMMs: the three products (forward x·Wᵀ, backward dz·W and dzᵀ·x) of each
// of a block's four linear layers, over `tokens` rows. bench_gemm_precision and
// bench_gemm_mkl time the same list, so their reports can be read side by side.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace relpos::bench {

// C (m, n) = op(A) op(B), row-major, dense operands.
struct Gemm {
  std::string what;
  std::int64_t m, n, k;
  bool trans_a, trans_b;
};

// qkv (d → 3d), attention output (d → d), MLP in (d → d_ff) and out (d_ff → d).
inline std::vector<Gemm> model_gemms(std::int64_t tokens, std::int64_t d_model, std::int64_t d_ff) {
  struct Linear {
    const char* name;
    std::int64_t in, out;
  };
  std::vector<Gemm> gemms;
  for (const Linear& l : {Linear{"qkv", d_model, 3 * d_model}, Linear{"attn out", d_model, d_model},
                          Linear{"ff in", d_model, d_ff}, Linear{"ff out", d_ff, d_model}}) {
    const std::string name = l.name;
    gemms.push_back({name + " x·Wᵀ", tokens, l.out, l.in, false, true});
    gemms.push_back({name + " dz·W", tokens, l.in, l.out, false, false});
    gemms.push_back({name + " dzᵀ·x", l.out, l.in, tokens, true, false});
  }
  return gemms;
}

// One shape's line of a probe's JSON report: the shape and its rate (GFLOP/s) per path.
inline nlohmann::json gemm_report_row(const Gemm& g, nlohmann::json gflops) {
  return {{"what", g.what},
          {"m", g.m},
          {"n", g.n},
          {"k", g.k},
          {"trans_a", g.trans_a},
          {"trans_b", g.trans_b},
          {"gflops", std::move(gflops)}};
}

}  // namespace relpos::bench
