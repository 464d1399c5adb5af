#include "layers/attention_temperature.h"

#include <algorithm>
#include <cmath>

#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/shape.h"

namespace relpos {

const std::vector<std::string>& attention_temperature_kinds() {
  static const std::vector<std::string> kinds{"none", "log_length", "learned"};
  return kinds;
}

void validate_attention_temperature(const AttentionTemperatureConfig& config, bool causal) {
  const auto& kinds = attention_temperature_kinds();
  require(std::find(kinds.begin(), kinds.end(), config.kind) != kinds.end(),
          "model.attention_temperature.kind must be one of none, log_length, learned, got '{}'",
          config.kind);
  require(config.train_len >= 0 && config.train_len <= (std::int64_t{1} << 24),
          "model.attention_temperature.train_len must be in [0, 2^24] (0: data.seq_len), got {}",
          config.train_len);
  if (config.kind != "log_length") return;
  require(config.train_len >= 2,
          "model.attention_temperature.train_len must be >= 2 for kind log_length (the factor "
          "divides by ln L_train), got {}",
          config.train_len);
  require(causal,
          "model.attention_temperature.kind=log_length needs model.causal: true (n is the number "
          "of keys a causal query sees)");
}

Tensor log_length_factors(std::int64_t start, std::int64_t len, std::int64_t train_len,
                          DType dtype) {
  require(train_len >= 2 && start >= 0, "attention temperature: train_len {} / start {}", train_len,
          start);
  std::vector<double> factors(static_cast<std::size_t>(len));
  const double denominator = std::log(static_cast<double>(train_len));
  for (std::int64_t i = 0; i < len; ++i)
    factors[static_cast<std::size_t>(i)] =
        std::log(static_cast<double>(start + i + 1)) / denominator;
  return Tensor::from_data(factors, {1, 1, len, 1}, DType::f64).to(dtype);
}

Tensor apply_attention_temperature(const AttentionTemperatureConfig& config, const Tensor& q,
                                   std::int64_t start, const Tensor& log_scale) {
  if (config.kind == "log_length")
    return mul(q, log_length_factors(start, q.size(2), config.train_len, q.dtype())
                      .to(q.device()));  // (B, H, L, D) * (1, 1, L, 1)
  if (config.kind == "learned") {
    require(log_scale.defined() && log_scale.dim() == 1 && log_scale.size(0) == q.size(1),
            "attention temperature: a learned scale per head ({}) for q {}", log_scale.describe(),
            q.describe());
    return mul(q, reshape(exp(log_scale), {1, q.size(1), 1, 1}));  // (B, H, L, D) * (1, H, 1, 1)
  }
  return q;
}

}  // namespace relpos
