#include "autograd/ops/dropout.h"

#include "autograd/backend.h"
#include "autograd/ops/check.h"
#include "autograd/ops/elementwise.h"
#include "autograd/tape.h"

namespace relpos {

Tensor dropout(const Tensor& x, double p, std::uint64_t seed, std::uint64_t offset, bool training) {
  check_floating(x, "dropout");
  require(p >= 0.0 && p < 1.0, "dropout: p must be in [0, 1), got {}", p);
  if (!training || p == 0.0) return x;
  Tensor mask = Tensor::empty(x.shape(), x.dtype(), x.device());  // x's shape, 0 or 1/(1-p)
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (out.numel() > 0) {
    backend_of(out).dropout_mask(seed, offset, p, mask);
    backend_of(out).binary(BinaryOp::mul, x, mask, out);  // x may be any strided view
  }
  if (Tape::should_record({&x})) {
    Tape::current().record("dropout", {x}, out, [mask](const Tensor& grad) {
      return std::vector<Tensor>{mul(grad, mask)};
    });
  }
  return out;
}

}  // namespace relpos
