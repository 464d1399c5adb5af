#pragma once
// Attention temperature (model.attention_temperature, docs/position-schemes.md): a factor
// on each query before the attention op, so on q·k and on every term linear in q (RoPE's
// rotated q, Shaw's q·B, Transformer-XL's q·W_r R), never on additive biases that do not
// read q (T5, ALiBi, KERPLE, FIRE, XL's u and v). Scaling q keeps every attention path
// (flash, fused, composed) exact: they all receive the same scaled q.
//   none        factor 1: q unchanged (the op is not even recorded).
//   log_length  factor ln(n) / ln(L_train) for the query at absolute 1-based position n
//               (the query at 0-based position p sees n = p + 1 keys in a causal model):
//               below 1 inside the training length, 1 at n = L_train, ln n / ln L_train
//               beyond (log-length scaling, Chiang & Cholak 2022; the issue attributes it to
//               Wang et al. 2024). Not clamped: a model trained with it sees the factor
//               grow with n during training, and evaluation continues the same law.
//   learned     factor exp(t_h), t a zero-initialised parameter per head
//               ("blocks.<l>.attn.temperature", shape (H)): 1 at initialisation (Wang et al.
//               2024's per-head HeadScale, learned with the model). Not a position
//               parameter (optim.position_lr_scale does not apply) and not weight-decayed.
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace relpos {

struct AttentionTemperatureConfig {
  std::string kind = "none";   // none | log_length | learned
  std::int64_t train_len = 0;  // L_train of log_length; 0 until resolved (data.seq_len)

  bool operator==(const AttentionTemperatureConfig&) const = default;
  // True when the factor depends on a query's absolute position.
  bool reads_positions() const { return kind == "log_length"; }
};

// The allowed values of model.attention_temperature.kind.
const std::vector<std::string>& attention_temperature_kinds();

// A UsageError naming the key when the settings cannot be used by a model (`causal`).
void validate_attention_temperature(const AttentionTemperatureConfig& config, bool causal);

// log_length's factors (1, 1, L, 1) for the queries at 0-based positions start..start+L-1,
// in `dtype` on the CPU.
Tensor log_length_factors(std::int64_t start, std::int64_t len, std::int64_t train_len,
                          DType dtype);

// q (B, H, L, D) at positions start.. times its temperature; `log_scale` (H) is learned's
// parameter (undefined for the other kinds).
Tensor apply_attention_temperature(const AttentionTemperatureConfig& config, const Tensor& q,
                                   std::int64_t start, const Tensor& log_scale);

}  // namespace relpos
