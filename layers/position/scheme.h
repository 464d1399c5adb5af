#pragma once
// The interface every position scheme implements. A scheme may contribute any of: a
// term added to the token embeddings, a rotation of q and k, and relative terms for the
// attention (PositionTerms). Queries are always the last q_len of k_len positions,
// starting at absolute position `start`. Schemes are listed in layers/position/registry.h.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>

#include "layers/module.h"
#include "layers/scaled_attention.h"

namespace relpos {

// The value of one scheme key (model.position.<key>).
using OptionValue = std::variant<bool, std::int64_t, double, std::string>;

// model.position: the scheme's name and the value of every registered scheme key.
class PositionConfig {
 public:
  PositionConfig();  // scheme "none", every registered key at its default

  std::string scheme = "none";

  template <class T>
  T get(const std::string& key) const {
    return std::get<T>(at(key));
  }
  // The key's value; an InternalError for a key no scheme registered.
  const OptionValue& at(const std::string& key) const;
  OptionValue& at(const std::string& key);
  // Sets a registered key; the value must have the key's type.
  void set(const std::string& key, OptionValue value);

  bool operator==(const PositionConfig& other) const = default;

 private:
  std::map<std::string, OptionValue> values_;
};

struct ModelDims {
  std::int64_t d_model = 0, n_heads = 0, n_layers = 0;
  bool causal = true;
  std::int64_t head_size = 0;  // 0: d_model / n_heads (the model's case)
  std::int64_t head_dim() const { return head_size > 0 ? head_size : d_model / n_heads; }
};

class PositionScheme : public Module {
 public:
  // x (B, L, d_model) -> x plus an absolute position term for positions start.. .
  virtual Tensor embed(const Tensor& x, std::int64_t /*start*/) const { return x; }
  // x (B, H, L, D) at positions start.. -> rotated (RoPE).
  virtual Tensor rotate(const Tensor& x, std::int64_t /*start*/) const { return x; }
  // True when rotate() also depends on the sequence length start + L (RoPE's dynamic NTK
  // scaling): every position's hidden state then changes as the sequence grows, so a KV
  // cache or segment memory from a shorter sequence is never reusable (TransformerLM
  // refuses them; decoding recomputes the whole sequence).
  virtual bool rotation_depends_on_length() const { return false; }
  // The most positions the scheme can place (learned absolute positions: max_len); 0 for
  // no limit.
  virtual std::int64_t max_length() const { return 0; }
  // The relative terms of attention layer `layer` for q_len queries against k_len keys.
  virtual PositionTerms terms(std::int64_t /*layer*/, std::int64_t /*q_len*/,
                              std::int64_t /*k_len*/) const {
    return {};
  }
  // The seed of this step's randomized positions (layers/position/randomized_positions.h);
  // schemes without that option ignore it.
  void set_position_seed(std::uint64_t seed) { position_seed_ = seed; }

 protected:
  std::uint64_t position_seed_ = 0;
};

// Validates the config against the model (UsageError naming the key) and builds the scheme.
std::unique_ptr<PositionScheme> make_position_scheme(const PositionConfig& config,
                                                     const ModelDims& dims, Rng& rng);

}  // namespace relpos
