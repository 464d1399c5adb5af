#pragma once
// Helpers shared by the segment-recurrence tests (test_recurrence*.cpp): a small fp64
// model with every parameter random, token streams cut into segments of kSegment, and
// the relative schemes (the ones segment memory accepts).
#include <memory>
#include <string>
#include <vector>

#include "autograd/ops/shape.h"
#include "layers/position/registry.h"
#include "layers/transformer.h"
#include "scheme_harness.h"

namespace relpos::testing {

inline constexpr std::int64_t kVocab = 16, kSegment = 4, kSegments = 3;

// A two-layer fp64 model of `scheme`: d_model 8, 2 heads.
inline ModelConfig fp64_config(const std::string& scheme) {
  ModelConfig c;
  c.vocab = kVocab;
  c.d_model = 8;
  c.n_layers = 2;
  c.n_heads = 2;
  c.d_ff = 16;
  c.position.scheme = scheme;
  return c;
}

// The model of `config` with every parameter random (XL's zero tables too).
inline std::unique_ptr<TransformerLM> fp64_model(const ModelConfig& config) {
  Rng rng(70);
  auto model = std::make_unique<TransformerLM>(config, rng);
  randomize_parameters(*model, DType::f64, rng, 0.3);
  return model;
}

inline std::unique_ptr<TransformerLM> fp64_model(const std::string& scheme) {
  return fp64_model(fp64_config(scheme));
}

inline Tensor random_tokens(std::int64_t batch, std::int64_t len, Rng& rng) {
  Tensor t = Tensor::empty({batch, len}, DType::i64);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.data<std::int64_t>()[i] = static_cast<std::int64_t>(rng.below(kVocab));
  return t;
}

// Segment t of a (B, L*n, ...) tensor: (B, L, ...), a contiguous copy without gradient
// (Tensor::contiguous is not recorded): for tokens and targets.
inline Tensor segment(const Tensor& x, std::int64_t t) {
  return slice(x, 1, t * kSegment, (t + 1) * kSegment).contiguous();
}

// The relative schemes: every registered scheme whose positions are distances.
inline std::vector<std::string> relative_schemes() {
  std::vector<std::string> out;
  for (const PositionSchemeEntry& e : position_schemes())
    if (!e.absolute) out.push_back(e.name);
  return out;
}

}  // namespace relpos::testing
