#include "autograd/ops/top_k.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "autograd/error.h"

namespace relpos {
namespace {

template <class T>
void mark_outside(const T* scores, std::int64_t rows, std::int64_t width, std::int64_t k,
                  std::uint8_t* hidden) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(width));
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* row = scores + r * width;
    std::uint8_t* out = hidden + r * width;
    std::fill(out, out + width, std::uint8_t{1});
    std::iota(order.begin(), order.end(), std::int64_t{0});
    // The k best first: larger score, then lower index.
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [row](std::int64_t a, std::int64_t b) {
                        return row[a] > row[b] || (row[a] == row[b] && a < b);
                      });
    for (std::int64_t i = 0; i < k; ++i) out[order[static_cast<std::size_t>(i)]] = 0;
  }
}

}  // namespace

Tensor outside_top_k(const Tensor& scores, std::int64_t k) {
  require(scores.defined() && scores.dim() >= 1 && is_floating(scores.dtype()),
          "outside_top_k: scores must be a floating tensor of rank >= 1, got {}",
          scores.defined() ? scores.describe() : std::string("undefined tensor"));
  require(k >= 1, "outside_top_k: k must be >= 1, got {}", k);
  const Tensor s = scores.detach().to(Device::cpu).contiguous();  // (R, S) rows
  const std::int64_t width = s.size(-1);
  const std::int64_t rows = width > 0 ? s.numel() / width : 0;
  Tensor hidden = Tensor::empty(s.shape(), DType::u8);  // (..., S)
  if (rows > 0) {
    const std::int64_t keep = std::min(k, width);
    if (s.dtype() == DType::f64)
      mark_outside(s.data<double>(), rows, width, keep, hidden.data<std::uint8_t>());
    else
      mark_outside(s.data<float>(), rows, width, keep, hidden.data<std::uint8_t>());
  }
  return hidden.to(scores.device());
}

}  // namespace relpos
