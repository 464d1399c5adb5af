#include "layers/position/rope.h"

#include <algorithm>
#include <cmath>

#include "autograd/error.h"
#include "autograd/ops/rotary.h"
#include "autograd/ops/shape.h"
#include "layers/position/sinusoid.h"

namespace relpos {

RotaryPosition::RotaryPosition(std::int64_t head_dim, double base)
    : head_dim_(head_dim), base_(base) {
  require(head_dim % 2 == 0, "rope: the head dimension must be even, got {}", head_dim);
}

std::pair<Tensor, Tensor> RotaryPosition::angles(std::int64_t start, std::int64_t len,
                                                 DType dtype) const {
  const std::int64_t half = head_dim_ / 2, end = start + len;
  if (!cos_cache_.defined() || cos_cache_.size(0) < end || cos_cache_.dtype() != dtype) {
    const std::int64_t positions =
        std::max<std::int64_t>(end, 2 * (cos_cache_.defined() ? cos_cache_.size(0) : 0));
    const std::vector<double> inv = inverse_frequencies(head_dim_, base_);
    Tensor c = Tensor::empty({positions, half}, DType::f64);
    Tensor s = Tensor::empty({positions, half}, DType::f64);
    double* cd = c.data<double>();
    double* sd = s.data<double>();
    for (std::int64_t p = 0; p < positions; ++p)
      for (std::int64_t m = 0; m < half; ++m) {
        const double angle = static_cast<double>(p) * inv[m];
        cd[p * half + m] = std::cos(angle);
        sd[p * half + m] = std::sin(angle);
      }
    cos_cache_ = c.to(dtype);
    sin_cache_ = s.to(dtype);
  }
  return {slice(cos_cache_, 0, start, end), slice(sin_cache_, 0, start, end)};
}

Tensor RotaryPosition::rotate(const Tensor& x, std::int64_t start) const {
  const auto [cos_t, sin_t] = angles(start, x.size(2), x.dtype());  // (L, D/2), on the host
  return rotary(x, cos_t.to(x.device()), sin_t.to(x.device()));
}

}  // namespace relpos
