#include "autograd/ops/rotary.h"

#include "autograd/backend.h"
#include "autograd/ops/check.h"
#include "autograd/tape.h"

namespace relpos {
namespace {

// An uninitialised tensor shaped like x (B, H, L, D) and stored as (B, L, H, D), the
// layout of the attention layer's head split, so later ops view it without copying.
Tensor empty_in_head_layout(const Tensor& x) {
  const std::int64_t b = x.size(0), h = x.size(1), l = x.size(2), d = x.size(3);
  Tensor t = Tensor::empty({b, l, h, d}, x.dtype(), x.device());
  return Tensor::view_of(t, {b, h, l, d}, {l * h * d, d, h * d, 1}, 0);
}

Tensor rotate(const Tensor& x, const Tensor& cos, const Tensor& sin, bool inverse) {
  Tensor in = x.strides().back() == 1 ? x : x.contiguous();
  Tensor out = empty_in_head_layout(x);
  backend_of(x).rotary(in, cos, sin, out, inverse);
  return out;
}

}  // namespace

Tensor rotary(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  check_same_kind(x, cos, "rotary");
  check_same_kind(x, sin, "rotary");
  if (!(x.dim() == 4 && x.size(3) % 2 == 0 && cos.shape() == Shape{x.size(2), x.size(3) / 2} &&
        sin.shape() == cos.shape()))
    fail("rotary: x {} must be (B, H, L, D) with even D and cos {}, sin {} (L, D/2)", x.describe(),
         cos.describe(), sin.describe());
  const Tensor c = cos.contiguous(), s = sin.contiguous();
  Tensor out = rotate(x, c, s, false);
  if (Tape::should_record({&x})) {
    Tape::current().record("rotary", {x}, out, [c, s](const Tensor& g) {
      return std::vector<Tensor>{rotate(g, c, s, true)};
    });
  }
  return out;
}

}  // namespace relpos
