#include "autograd/ops/fire_bias.h"

#include <algorithm>
#include <vector>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/shape.h"

namespace relpos {

Tensor fire_bias(const FireTerms& fire, std::int64_t q_len, std::int64_t k_len) {
  const std::int64_t hidden = fire.w1.size(0), heads = fire.w2.size(0);
  std::vector<double> position(static_cast<std::size_t>(q_len));
  std::vector<double> distance(static_cast<std::size_t>(q_len * k_len));
  for (std::int64_t i = 0; i < q_len; ++i) {
    const std::int64_t qpos = k_len - q_len + i;
    position[i] = static_cast<double>(qpos);
    for (std::int64_t j = 0; j < k_len; ++j)
      distance[i * k_len + j] = static_cast<double>(std::max<std::int64_t>(qpos - j, 0));
  }
  const auto constant = [&](const std::vector<double>& values, const Shape& shape) {
    return Tensor::from_data(values, shape, fire.w1.dtype()).to(fire.w1.device());
  };
  const Tensor qpos = constant(position, {q_len, 1});            // (Lq, 1)
  const Tensor d = constant(distance, {q_len, k_len});           // (Lq, Lk)
  const Tensor c = fire.c, threshold = fire.threshold;           // (1)
  const Tensor psi_d = log(add_scalar(mul(c, d), 1.0));          // (Lq, Lk)
  const Tensor m = add(threshold, relu(sub(qpos, threshold)));   // max(i, threshold): (Lq, 1)
  const Tensor x = div(psi_d, log(add_scalar(mul(c, m), 1.0)));  // (Lq, Lk)
  const Tensor h = relu(add(mul(reshape(x, {q_len * k_len, 1}), reshape(fire.w1, {1, hidden})),
                            reshape(fire.b1, {1, hidden})));  // (Lq*Lk, hidden)
  const Tensor out = matmul(h, transpose(fire.w2, 0, 1));     // (Lq*Lk, H)
  return reshape(transpose(out, 0, 1), {heads, q_len, k_len});
}

}  // namespace relpos
