#pragma once
// A checkpoint that holds the edge cases of the format: f32, f64 and i64 tensors with
// subnormals, NaN, extremes, a scalar, an empty and a non-contiguous tensor, optimizer
// state with and without a parameter, a UTF-8 config, and empty and full RNG states.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "autograd/ops/shape.h"
#include "autograd/tensor.h"
#include "train/store/checkpoint.h"

namespace relpos::testing {

inline Tensor f32_tensor(const std::vector<float>& values, const Shape& shape) {
  return Tensor::from_data(values, shape);
}

inline Tensor i64_tensor(const std::vector<std::int64_t>& values, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::i64);
  std::copy(values.begin(), values.end(), t.data<std::int64_t>());
  return t;
}

// Values chosen to expose any rounding or conversion: subnormals, -0, extremes, NaN.
inline Checkpoint sample_checkpoint() {
  Checkpoint c;
  const float subnormal = std::numeric_limits<float>::denorm_min();
  c.params["blocks.0.attn.q.weight"] =
      f32_tensor({0.1f, -0.0f, subnormal, 3.4e38f, -1.0f / 3.0f, std::nanf("")}, {2, 3});
  c.params["blocks.0.attn.q.bias"] = f32_tensor({1.5f, -2.25f}, {2});
  c.params["blocks.1.mlp.fc.weight"] =
      Tensor::from_data(std::vector<double>{0.1, 1e-310, -1e300, 2.0 / 3.0}, {2, 1, 2}, DType::f64);
  c.params["positions.t5.bucket_ids"] = i64_tensor({std::numeric_limits<std::int64_t>::min(), -1, 0,
                                                    42, std::numeric_limits<std::int64_t>::max()},
                                                   {5});
  c.params["final_norm.scale"] = Tensor::scalar(0.7f);
  c.params["blocks.1.mlp.fc.bias"] = Tensor::zeros({2, 0});
  c.params["head.weight"] =
      transpose(f32_tensor({1, 2, 3, 4, 5, 6}, {2, 3}), 0, 1);  // non-contiguous (3, 2) view
  c.optim["blocks.0.attn.q.weight/exp_avg"] = f32_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  c.optim["blocks.0.attn.q.weight/exp_avg_sq"] = f32_tensor({1e-8f, 0, 0, 0, 0, 7}, {2, 3});
  c.optim["final_norm.scale/step"] = Tensor::scalar(17, DType::i64);
  c.step = 1234567890123;
  c.tokens_seen = 987654321987;
  c.config_yaml = "model:\n  d_model: 64\n  position: t5  # \xc3\xa4 UTF-8\n";
  c.rng_states["data_rng"] = {1, 0, std::numeric_limits<std::uint64_t>::max(), 0x9E3779B97F4A7C15};
  c.rng_states["sampler"] = {7, 8};
  c.rng_states["unused"] = {};
  return c;
}

}  // namespace relpos::testing
