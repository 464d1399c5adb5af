#pragma once
// The relative schemes: Shaw et al. 2018, T5 bucketed bias, Transformer-XL and
// ALiBi. Their attention terms are consumed by scaled_attention().
#include <vector>

#include "layers/position/scheme.h"
#include "layers/position/t5_buckets.h"

namespace relpos {

// Transformer-XL: W_r R for distances k_len-1 .. 0 (clamped to clamp_len when > 0),
// w_r (H*D, d_model) -> (H, Lk, D).
Tensor xl_relative_encodings(const Tensor& w_r, std::int64_t k_len, std::int64_t heads,
                             std::int64_t clamp_len);

// ALiBi: (H, Lq+Lk-1) f64 with -m_h |rel| for rel = n - (Lk-1).
Tensor alibi_distance_bias(const std::vector<double>& slopes, std::int64_t q_len,
                           std::int64_t k_len);

class ShawPosition final : public PositionScheme {
 public:
  ShawPosition(const PositionConfig& config, const ModelDims& dims, Rng& rng);
  PositionTerms terms(std::int64_t layer, std::int64_t q_len, std::int64_t k_len) const override;
  std::string name() const override { return "shaw"; }

 private:
  std::int64_t clip_;
  std::vector<Tensor> keys_, values_;  // per layer: (2k+1, D) or (H, 2k+1, D)
};

class T5Position final : public PositionScheme {
 public:
  T5Position(const PositionConfig& config, const ModelDims& dims, Rng& rng);
  PositionTerms terms(std::int64_t layer, std::int64_t q_len, std::int64_t k_len) const override;
  std::string name() const override { return "t5"; }
  const T5BucketConfig& buckets() const { return buckets_; }

 private:
  T5BucketConfig buckets_;
  bool scale_;
  std::vector<Tensor> tables_;  // one (num_buckets, H) table, or one per layer
};

class XlPosition final : public PositionScheme {
 public:
  XlPosition(const PositionConfig& config, const ModelDims& dims, Rng& rng);
  PositionTerms terms(std::int64_t layer, std::int64_t q_len, std::int64_t k_len) const override;
  std::string name() const override { return "xl"; }

 private:
  std::int64_t heads_;
  std::int64_t clamp_len_;
  std::vector<Tensor> w_r_;    // per layer (H*D, d_model)
  std::vector<Tensor> u_, v_;  // one shared (H, D) pair, or one per layer
};

class AlibiPosition final : public PositionScheme {
 public:
  explicit AlibiPosition(const ModelDims& dims);
  PositionTerms terms(std::int64_t layer, std::int64_t q_len, std::int64_t k_len) const override;
  std::string name() const override { return "alibi"; }

 private:
  std::vector<double> slopes_;
};

}  // namespace relpos
