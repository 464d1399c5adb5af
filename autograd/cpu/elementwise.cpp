// Elementwise kernels on the CPU: binary with broadcasting, unary and their
// derivatives, and where().
#include "autograd/kernel_math/elementwise.h"

#include <array>

#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/cpu_math.h"
#include "autograd/cpu/parallel.h"
#include "autograd/cpu/strided.h"

namespace relpos {
namespace {

using cpu::CpuMath;

template <class T>
void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  T* po = static_cast<T*>(out.raw_data());
  if (a.is_contiguous() && b.is_contiguous()) {
    const std::int64_t n = out.numel();
    switch (op) {
#define RELPOS_FLAT_LOOP(OPNAME, EXPR)                                      \
  case BinaryOp::OPNAME:                                                    \
    cpu::parallel_for(n, n > 65536, [&](std::int64_t i) { po[i] = EXPR; }); \
    return;
      RELPOS_FLAT_LOOP(add, pa[i] + pb[i])
      RELPOS_FLAT_LOOP(sub, pa[i] - pb[i])
      RELPOS_FLAT_LOOP(mul, pa[i] * pb[i])
      RELPOS_FLAT_LOOP(div, pa[i] / pb[i])
#undef RELPOS_FLAT_LOOP
    }
  }
  const std::array<const Shape*, 3> strides{&out.strides(), &a.strides(), &b.strides()};
  cpu::for_each_row<3>(out.shape(), strides,
                       [&](std::int64_t, std::int64_t n, const auto& off, const auto& inner) {
                         T* o = po + off[0];
                         const T* x = pa + off[1];
                         const T* y = pb + off[2];
                         if (inner[0] == 1 && inner[1] == 1 && inner[2] == 1) {
                           // Rows contiguous in all three (e.g. a slice of columns): a loop
                           // that vectorises.
                           for (std::int64_t i = 0; i < n; ++i)
                             o[i] = kernel_math::binary_value(op, x[i], y[i]);
                           return;
                         }
                         for (std::int64_t i = 0; i < n; ++i)
                           o[i] = kernel_math::binary_value(op, x[i * inner[1]], y[i * inner[2]]);
                       });
}

}  // namespace

void CpuBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_floating(out.dtype(), [&](auto zero) { binary_typed<decltype(zero)>(op, a, b, out); });
}

void CpuBackend::unary(UnaryOp op, const Tensor& x, const Tensor& out, double param) {
  dispatch_floating(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    const T p = static_cast<T>(param);
    const std::int64_t n = out.numel();
    if (op == UnaryOp::gelu_tanh) {  // its own loop, which vectorises
      cpu::parallel_for(n, n > 16384,
                        [&](std::int64_t i) { po[i] = kernel_math::gelu_tanh<CpuMath>(px[i]); });
      return;
    }
    cpu::parallel_for(n, n > 16384, [&](std::int64_t i) {
      po[i] = kernel_math::unary_value<CpuMath>(op, px[i], p);
    });
  });
}

void CpuBackend::unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                                const Tensor& grad_x, double param) {
  dispatch_floating(grad_x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    const T* pg = grad_y.data<T>();
    T* out = grad_x.data<T>();
    const T p = static_cast<T>(param);
    const std::int64_t n = grad_x.numel();
    if (op == UnaryOp::gelu_tanh) {  // its own loop, which vectorises
      cpu::parallel_for(n, n > 16384, [&](std::int64_t i) {
        out[i] = pg[i] * kernel_math::gelu_tanh_derivative<CpuMath>(px[i]);
      });
      return;
    }
    cpu::parallel_for(n, n > 16384, [&](std::int64_t i) {
      out[i] = pg[i] * kernel_math::unary_derivative<CpuMath>(op, px[i], py[i], p);
    });
  });
}

void CpuBackend::where(const Tensor& mask, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_floating(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const auto* pm = static_cast<const std::uint8_t*>(mask.raw_data());
    const T* pa = static_cast<const T*>(a.raw_data());
    const T* pb = static_cast<const T*>(b.raw_data());
    T* po = out.data<T>();
    const std::array<const Shape*, 4> strides{&out.strides(), &mask.strides(), &a.strides(),
                                              &b.strides()};
    cpu::for_each_row<4>(out.shape(), strides,
                         [&](std::int64_t, std::int64_t n, const auto& off, const auto& inner) {
                           for (std::int64_t i = 0; i < n; ++i)
                             po[off[0] + i * inner[0]] = pm[off[1] + i * inner[1]]
                                                             ? pa[off[2] + i * inner[2]]
                                                             : pb[off[3] + i * inner[3]];
                         });
  });
}

}  // namespace relpos
