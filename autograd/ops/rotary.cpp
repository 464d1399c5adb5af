#include "autograd/ops/rotary.h"

#include "autograd/backend.h"
#include "autograd/kernel.h"
#include "autograd/ops/check.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/head_layout.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"

namespace relpos {
namespace {

Tensor rotate(const Tensor& x, const Tensor& cos, const Tensor& sin, bool inverse) {
  Tensor out = empty_heads_like(x);
  backend_of(x).rotary(rows_contiguous(x), cos, sin, out, inverse);
  return out;
}

// Without the kernel: x * [cos, cos] + rotate_half(x) * [sin, sin], rotate_half(x) =
// [-x2, x1] for x = [x1, x2]; each op records its own gradient.
Tensor composed_rotation(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const std::int64_t d = x.size(3), half = d / 2;
  const Tensor c = concat({cos, cos}, -1), s = concat({sin, sin}, -1);  // (L, D)
  const Tensor rotated = concat({neg(slice(x, -1, half, d)), slice(x, -1, 0, half)}, -1);
  return add(mul(x, c), mul(rotated, s));  // (B, H, L, D)
}

}  // namespace

Tensor rotary(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  check_same_kind(x, cos, "rotary");
  check_same_kind(x, sin, "rotary");
  if (!(x.dim() == 4 && x.size(3) % 2 == 0 && cos.shape() == Shape{x.size(2), x.size(3) / 2} &&
        sin.shape() == cos.shape()))
    fail("rotary: x {} must be (B, H, L, D) with even D and cos {}, sin {} (L, D/2)", x.describe(),
         cos.describe(), sin.describe());
  if (!kernel_supported(x, Kernel::rotary)) return composed_rotation(x, cos, sin);
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
