#include "layers/position/rope.h"

#include <cmath>

#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/shape.h"
#include "layers/position/sinusoid.h"

namespace relpos {

RotaryPosition::RotaryPosition(std::int64_t head_dim, double base)
    : head_dim_(head_dim), base_(base) {
  require(head_dim % 2 == 0, "rope: the head dimension must be even, got {}", head_dim);
}

Tensor RotaryPosition::rotate(const Tensor& x, std::int64_t start) const {
  const std::int64_t len = x.size(2), half = head_dim_ / 2;
  const std::vector<double> inv = inverse_frequencies(head_dim_, base_);
  // cos/sin tables (L, D), each angle repeated for both halves.
  Tensor cos_table = Tensor::empty({len, head_dim_}, DType::f64);
  Tensor sin_table = Tensor::empty({len, head_dim_}, DType::f64);
  double* c = cos_table.data<double>();
  double* s = sin_table.data<double>();
  for (std::int64_t p = 0; p < len; ++p)
    for (std::int64_t m = 0; m < half; ++m) {
      const double angle = static_cast<double>(start + p) * inv[m];
      c[p * head_dim_ + m] = c[p * head_dim_ + half + m] = std::cos(angle);
      s[p * head_dim_ + m] = s[p * head_dim_ + half + m] = std::sin(angle);
    }
  Tensor cos_t = cos_table.to(x.dtype()).to(x.device());
  Tensor sin_t = sin_table.to(x.dtype()).to(x.device());
  // rotate_half(x) = [-x2, x1] for x = [x1, x2] split at D/2.
  Tensor rotated = concat({neg(slice(x, -1, half, head_dim_)), slice(x, -1, 0, half)}, -1);
  return add(mul(x, cos_t), mul(rotated, sin_t));  // (B, H, L, D)
}

}  // namespace relpos
