#pragma once
// Position schemes under test: built through the registry (layers/position/registry.h)
// exactly as the model builds them, in every test variant the scheme declares, with
// their parameters converted to the dtype a test needs. Tests drive the real scheme
// classes; none re-codes a scheme's terms.
#include <fmt/format.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "autograd/error.h"
#include "autograd/random.h"
#include "layers/position/registry.h"
#include "layers/scaled_attention.h"

namespace relpos::testing {

struct SchemeUnderTest {
  std::string label;  // e.g. "shaw {max_relative=2, per_head=true}"
  PositionConfig config;
  ModelDims dims;
  std::unique_ptr<PositionScheme> scheme;
};

inline std::string describe_config(const PositionConfig& config) {
  const PositionConfig defaults;
  std::ostringstream label;
  label << config.scheme;
  for (const PositionKey& k : position_keys()) {
    const OptionValue& value = config.at(k.key.name);
    if (value == defaults.at(k.key.name)) continue;
    label << " " << k.key.name << "=";
    std::visit([&](auto v) { label << v; }, value);
  }
  return label.str();
}

// Every variant of `scheme` that accepts these dims (e.g. no bidirectional XL).
inline std::vector<SchemeUnderTest> scheme_variants(const std::string& scheme,
                                                    const ModelDims& dims, std::uint64_t seed) {
  std::vector<SchemeUnderTest> out;
  for (const PositionConfig& config : test_position_configs(scheme)) {
    const PositionSchemeEntry& entry = *find_position_scheme(scheme);
    try {
      if (entry.validate) entry.validate(config, {dims, 0, {}});
    } catch (const UsageError&) {
      continue;
    }
    Rng rng(seed);
    out.push_back({describe_config(config), config, dims, make_position_scheme(config, dims, rng)});
  }
  return out;
}

// Every variant of every registered scheme that accepts these dims.
inline std::vector<SchemeUnderTest> all_scheme_variants(const ModelDims& dims, std::uint64_t seed) {
  std::vector<SchemeUnderTest> out;
  for (const std::string& name : position_scheme_names())
    for (SchemeUnderTest& s : scheme_variants(name, dims, seed)) out.push_back(std::move(s));
  return out;
}

// True when the scheme changes attention: relative terms or a rotation of q and k.
inline bool affects_attention(const SchemeUnderTest& s) {
  Rng rng(1);
  const Tensor q = randn({1, s.dims.n_heads, 3, s.dims.head_dim()}, rng);
  const PositionTerms t = s.scheme->terms(0, 3, 3);
  return t.distance_bias.defined() || t.shaw_keys.defined() || t.shaw_values.defined() ||
         t.xl_r.defined() || t.fire.defined() || s.scheme->rotate(q, 0).impl() != q.impl();
}

// The variants that change attention, and first of those that do not (plain attention).
inline std::vector<SchemeUnderTest> attention_variants(const ModelDims& dims, std::uint64_t seed) {
  std::vector<SchemeUnderTest> out;
  bool plain = false;
  for (SchemeUnderTest& s : all_scheme_variants(dims, seed)) {
    if (!affects_attention(s) && std::exchange(plain, true)) continue;
    out.push_back(std::move(s));
  }
  return out;
}

// True when the scheme's rotation depends on the sequence length (RoPE's dynamic NTK
// scaling): the model then refuses a KV cache and segment memory.
inline bool rotation_depends_on_length(const PositionConfig& config) {
  Rng rng(1);
  return make_position_scheme(config, {16, 2, 1, true}, rng)->rotation_depends_on_length();
}

// Replaces each parameter's values, in place, by values[i] converted to `dtype`; the
// scheme keeps reading the same tensors. Returns them.
inline std::vector<Tensor> set_parameters(const Module& module, const std::vector<Tensor>& values,
                                          DType dtype) {
  std::vector<Tensor> out;
  const std::vector<NamedParameter> parameters = module.parameters();
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const Tensor fresh = values.at(i).to(dtype).clone();
    TensorImpl& impl = *parameters[i].tensor.impl();
    impl.storage = fresh.storage();
    impl.shape = fresh.shape();
    impl.strides = fresh.strides();
    impl.offset = 0;
    impl.dtype = dtype;
    parameters[i].tensor.zero_grad();
    out.push_back(parameters[i].tensor);
  }
  return out;
}

// N(0, scale^2) values in `dtype` for every parameter (zero-initialised tables such as XL's
// u and v would hide their terms), set as above.
inline std::vector<Tensor> randomize_parameters(const Module& module, DType dtype, Rng& rng,
                                                double scale = 0.5) {
  std::vector<Tensor> values;
  for (const NamedParameter& p : module.parameters())
    values.push_back(randn(p.tensor.shape(), rng, dtype, scale));
  return set_parameters(module, values, dtype);
}

// Attention through a scheme as MultiHeadAttention applies it: q (B, H, Lq, D) holds the
// last Lq of the Lk positions of k and v (key 0 at position 0, where chunks start).
inline Tensor attention_through(const PositionScheme& scheme, const Tensor& q, const Tensor& k,
                                const Tensor& v, bool causal, AttentionPath path,
                                std::int64_t layer = 0, const AttentionChunk& chunk = {}) {
  const std::int64_t q_len = q.size(2), k_len = k.size(2);
  return scaled_attention(scheme.rotate(q, k_len - q_len), scheme.rotate(k, 0), v,
                          scheme.terms(layer, q_len, k_len), causal, path, chunk);
}

}  // namespace relpos::testing
