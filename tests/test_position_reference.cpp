// Every position scheme against the independent PyTorch reference
// (tools/reference/, fixtures in tests/fixtures/positions/): outputs and all
// gradients, through the fused and the composed attention paths, in f64 and f32.
#include <catch2/catch.hpp>

#include "autograd/ops/relative.h"
#include "autograd/tape.h"
#include "fixture.h"
#include "layers/position/absolute.h"
#include "layers/position/alibi_slopes.h"
#include "layers/position/relative.h"
#include "layers/position/rope.h"
#include "layers/position/sinusoid.h"
#include "layers/position/t5_buckets.h"
#include "layers/scaled_attention.h"
#include "test_helpers.h"

using namespace relpos;
using testing::Fixture;

namespace {

struct Case {
  std::map<std::string, Tensor> leaves;  // q, k, v and the scheme's parameters
  Tensor out;
};

// Builds the scheme's terms from the fixture's parameters and runs attention.
Case run_case(const std::string& scheme, const Fixture& f, DType dtype, AttentionPath path) {
  const auto& c = f.config;
  const std::int64_t lq = c["Lq"], lk = c["Lk"], heads = c["H"], d = c["D"];
  const bool causal = c["causal"];
  Case r;
  for (const char* name : {"q", "k", "v"}) r.leaves[name] = f.leaf(name, dtype);
  Tensor q = r.leaves["q"], k = r.leaves["k"];
  PositionTerms terms;
  if (scheme == "t5") {
    r.leaves["t5_table"] = f.leaf("t5_table", dtype);
    const T5BucketConfig buckets{c["num_buckets"], c["max_distance"], c["bidirectional"]};
    terms.distance_bias =
        bucket_gather(r.leaves["t5_table"], t5_distance_buckets(lq, lk, buckets));
    terms.scale_scores = c["scale"];
  } else if (scheme == "shaw") {
    terms.shaw_clip = c["max_rel"];
    if (c["use_keys"]) terms.shaw_keys = r.leaves["shaw_keys"] = f.leaf("shaw_keys", dtype);
    if (c["use_values"]) terms.shaw_values = r.leaves["shaw_values"] = f.leaf("shaw_values", dtype);
  } else if (scheme == "xl") {
    for (const char* name : {"xl_w_r", "xl_u", "xl_v"}) r.leaves[name] = f.leaf(name, dtype);
    terms.xl_r = xl_relative_encodings(r.leaves["xl_w_r"], lk, heads, c["clamp_len"]);
    terms.xl_u = r.leaves["xl_u"];
    terms.xl_v = r.leaves["xl_v"];
  } else if (scheme == "alibi") {
    terms.distance_bias = alibi_distance_bias(alibi_slopes(heads), lq, lk);
  } else if (scheme == "rope") {
    RotaryPosition rope(d, c["base"]);
    q = rope.rotate(q, lk - lq);
    k = rope.rotate(k, 0);
  }
  r.out = scaled_attention(q, k, r.leaves["v"], terms, causal, path);
  return r;
}

void check_against_fixture(const std::string& scheme, const std::string& name, DType dtype,
                           AttentionPath path) {
  const Fixture f = testing::load_fixture(name);
  const double tol = dtype == DType::f64 ? 1e-9 : 1e-4;
  Case r = run_case(scheme, f, dtype, path);
  INFO(name << " " << name_of(path) << " " << name_of(dtype));
  testing::require_close(r.out.to_vector(), f.at("out").to_vector(), tol);
  backward(r.out, f.at("grad_out").to(dtype));
  for (const auto& [leaf, tensor] : r.leaves) {
    INFO("gradient of " << leaf);
    REQUIRE(tensor.grad().defined());
    testing::require_close(tensor.grad().to_vector(), f.at("grad_" + leaf).to_vector(), tol);
  }
}

const std::vector<std::pair<std::string, std::vector<std::string>>> kCases = {
    {"none", {"none_causal", "none_bidir", "none_causal_mem", "none_bidir_mem"}},
    {"t5",
     {"t5_causal_unidir", "t5_bidir", "t5_causal_mem_unidir", "t5_causal_bidir_buckets",
      "t5_bidir_mem", "t5_bidir_nb32_md128", "t5_causal_noscale"}},
    {"shaw",
     {"shaw_causal", "shaw_bidir", "shaw_causal_mem", "shaw_bidir_k1", "shaw_causal_per_head",
      "shaw_bidir_per_head_mem", "shaw_bidir_keys_only", "shaw_causal_values_only"}},
    {"xl",
     {"xl_causal", "xl_causal_mem", "xl_causal_mem_clamp", "xl_causal_dmodel10",
      "xl_causal_mem_dmodel6_d8"}},
    {"alibi", {"alibi_causal", "alibi_bidir", "alibi_causal_mem", "alibi_causal_h4", "alibi_bidir_h6"}},
    {"rope", {"rope_causal", "rope_bidir", "rope_causal_mem", "rope_bidir_d4"}},
};

}  // namespace

TEST_CASE("every scheme matches the PyTorch reference: outputs and all gradients",
          "[positions][reference]") {
  for (const auto& [scheme, names] : kCases)
    for (const auto& name : names)
      for (DType dtype : {DType::f64, DType::f32})
        for (AttentionPath path :
             {AttentionPath::flash, AttentionPath::fused, AttentionPath::composed})
          check_against_fixture(scheme, name, dtype, path);
}

TEST_CASE("T5 buckets match the reference on every relative position", "[positions][t5]") {
  const Fixture f = testing::load_fixture("t5_buckets");
  for (const auto& [name, tensor] : f.tensors) {
    // buckets_<nb>_<md>_<bidir|unidir>
    std::int64_t nb = 0, md = 0;
    char dir[8] = {};
    REQUIRE(std::sscanf(name.c_str(), "buckets_%ld_%ld_%7s", &nb, &md, dir) == 3);
    const T5BucketConfig config{nb, md, std::string(dir) == "bidir"};
    const std::int64_t* expected = tensor.data<std::int64_t>();
    for (std::int64_t rel = -300; rel <= 300; ++rel) {
      INFO(name << " rel=" << rel);
      REQUIRE(t5_bucket(rel, config) == expected[rel + 300]);
    }
  }
}

TEST_CASE("ALiBi slopes match the reference for 1..16 heads", "[positions][alibi]") {
  const Fixture f = testing::load_fixture("alibi_slopes");
  for (std::int64_t h = 1; h <= 16; ++h) {
    INFO("heads=" << h);
    testing::require_close(alibi_slopes(h), f.at("slopes_" + std::to_string(h)).to_vector(), 1e-15);
  }
}

TEST_CASE("rel_shift matches the reference identity", "[positions][xl]") {
  const Fixture f = testing::load_fixture("xl_rel_shift");
  testing::require_close(rel_shift(f.at("x")).to_vector(), f.at("shifted").to_vector(), 0.0);
}

TEST_CASE("sinusoid tables match the reference; the sinusoidal scheme adds them scaled",
          "[positions][sinusoidal]") {
  const Fixture f = testing::load_fixture("sinusoidal_table");
  for (auto [len, dim] : {std::pair<std::int64_t, std::int64_t>{50, 16}, {7, 6}}) {
    std::vector<double> positions(static_cast<std::size_t>(len));
    for (std::int64_t p = 0; p < len; ++p) positions[p] = static_cast<double>(p);
    const auto table = interleaved_sinusoids(positions, dim, DType::f64).to_vector();
    testing::require_close(
        table, f.at("table_" + std::to_string(len) + "_" + std::to_string(dim)).to_vector(),
        1e-12);
  }
  // embed(x, start) = x + kSinusoidScale * PE[start .. start+L).
  SinusoidalPosition scheme(16);
  const Tensor x = Tensor::zeros({1, 5, 16}, DType::f64);
  const auto added = scheme.embed(x, 3).to_vector();
  const auto reference = f.at("table_50_16").to_vector();
  for (std::size_t i = 0; i < added.size(); ++i)
    REQUIRE(added[i] == Approx(kSinusoidScale * reference[3 * 16 + i]).margin(1e-15));
}
