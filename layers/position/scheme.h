#pragma once
// The interface every position scheme implements (GUIDE.md §1). A scheme may
// contribute any of: a term added to the token embeddings, a rotation of q and
// k, and relative terms for the attention (PositionTerms). Queries are always
// the last q_len of k_len positions, starting at absolute position `start`.
#include <memory>
#include <string>

#include "layers/module.h"
#include "layers/scaled_attention.h"

namespace relpos {

struct PositionConfig {
  std::string scheme = "none";  // none|sinusoidal|learned|shaw|t5|xl|alibi|rope
  // learned absolute
  std::int64_t max_len = 1024;
  // shaw
  std::int64_t max_relative = 16;  // the clipping distance k
  bool shaw_keys = true;
  bool shaw_values = true;
  bool per_head = false;
  // t5
  std::int64_t num_buckets = 32;
  std::int64_t max_distance = 128;
  bool bidirectional_buckets = false;  // set from the model's causal flag by default
  bool per_layer = false;              // false: one table shared by all layers (T5); true: UMT5
  bool scale = true;                   // divide q·k by sqrt(d_head)
  // xl
  std::int64_t clamp_len = 0;  // 0: no clamp
  bool per_layer_uv = false;   // false: u and v shared by all layers
  // rope
  double rope_base = 10000.0;
};

struct ModelDims {
  std::int64_t d_model = 0, n_heads = 0, n_layers = 0;
  bool causal = true;
  std::int64_t head_dim() const { return d_model / n_heads; }
};

class PositionScheme : public Module {
 public:
  // x (B, L, d_model) -> x plus an absolute position term for positions start.. .
  virtual Tensor embed(const Tensor& x, std::int64_t /*start*/) const { return x; }
  // x (B, H, L, D) at positions start.. -> rotated (RoPE).
  virtual Tensor rotate(const Tensor& x, std::int64_t /*start*/) const { return x; }
  // The relative terms of attention layer `layer` for q_len queries against k_len keys.
  virtual PositionTerms terms(std::int64_t /*layer*/, std::int64_t /*q_len*/,
                              std::int64_t /*k_len*/) const {
    return {};
  }
  virtual std::string name() const = 0;
};

// Validates the config against the model (UsageError naming the key) and builds the scheme.
std::unique_ptr<PositionScheme> make_position_scheme(const PositionConfig& config,
                                                     const ModelDims& dims, Rng& rng);

}  // namespace relpos
