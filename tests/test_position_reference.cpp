// Every position scheme against the independent PyTorch reference
// (tools/reference/, fixtures in tests/fixtures/positions/): outputs and all
// gradients, through the flash, fused and composed attention paths, in f64 and f32,
// with and without a causal sliding window.
#include <catch2/catch.hpp>
#include <set>

#include "autograd/ops/relative.h"
#include "autograd/tape.h"
#include "fixture.h"
#include "layers/position/alibi_slopes.h"
#include "layers/position/sinusoid.h"
#include "layers/position/t5_buckets.h"
#include "reference_scheme.h"
#include "scheme_harness.h"
#include "test_helpers.h"

using namespace relpos;
using testing::Fixture;

namespace {

// Builds the scheme from the fixture through the registry, loads the fixture's parameters
// into it and compares the output and every gradient with the reference.
void check_against_fixture(const std::string& name, DType dtype, AttentionPath path) {
  const Fixture f = testing::load_fixture(name);
  testing::ReferenceScheme r = testing::reference_scheme(f, dtype);
  INFO(name << " " << name_of(path) << " " << name_of(dtype));
  AttentionChunk band;  // a sliding window (model.attention_window) when the case has one
  band.window = f.config.value("window", std::int64_t{0});
  const Tensor out = testing::attention_through(*r.scheme, r.leaves["q"], r.leaves["k"],
                                                r.leaves["v"], r.dims.causal, path, 0, band);
  testing::require_matches_fixture(f, r, out, dtype, dtype == DType::f64 ? 1e-9 : 1e-4);
}

}  // namespace

TEST_CASE("every scheme matches the PyTorch reference: outputs and all gradients",
          "[positions][reference][slow]") {
  std::set<std::string> covered;
  for (const std::string& name : testing::attention_fixtures()) {
    covered.insert(testing::load_fixture(name).scheme);
    for (DType dtype : {DType::f64, DType::f32})
      for (AttentionPath path :
           {AttentionPath::flash, AttentionPath::fused, AttentionPath::composed})
        check_against_fixture(name, dtype, path);
  }
  // Every scheme that changes attention (terms or rotation) has reference cases.
  for (auto& s : testing::all_scheme_variants({8, 2, 1, true}, 1)) {
    INFO(s.label);
    if (testing::affects_attention(s)) CHECK(covered.count(s.config.scheme) == 1);
  }
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
        table, f.at("table_" + std::to_string(len) + "_" + std::to_string(dim)).to_vector(), 1e-12);
  }
  // The scheme adds kSinusoidScale * PE[start .. start+L) to its input.
  Rng rng(3);
  auto scheme = make_position_scheme(test_position_configs("sinusoidal")[0], {16, 2, 1, true}, rng);
  const Tensor x = Tensor::zeros({1, 5, 16}, DType::f64);
  const auto added = scheme->embed(x, 3).to_vector();
  const auto reference = f.at("table_50_16").to_vector();
  for (std::size_t i = 0; i < added.size(); ++i)
    REQUIRE(added[i] == Approx(kSinusoidScale * reference[3 * 16 + i]).margin(1e-15));
  // model.position.sinusoid_scale sets the amplitude: 1 adds the table itself.
  PositionConfig unit = test_position_configs("sinusoidal")[0];
  unit.set("sinusoid_scale", 1.0);
  const auto at_one = make_position_scheme(unit, {16, 2, 1, true}, rng)->embed(x, 3).to_vector();
  for (std::size_t i = 0; i < at_one.size(); ++i)
    REQUIRE(at_one[i] == Approx(reference[3 * 16 + i]).margin(1e-15));
}
