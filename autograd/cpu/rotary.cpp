// The rotary embedding kernel on the CPU: one pass over x per (batch, head, position).
#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/parallel.h"

namespace relpos {
namespace {

template <class T>
void rotary_typed(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor& out,
                  bool inverse) {
  const std::int64_t batch = x.size(0), heads = x.size(1), len = x.size(2), half = x.size(3) / 2;
  const Shape& xs = x.strides();
  const Shape& os = out.strides();
  const T* c = cos.data<T>();
  const T* s = sin.data<T>();
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  const T sign = inverse ? T(-1) : T(1);
  cpu::parallel_for(batch * heads, x.numel() > 32768, [&](std::int64_t bh) {
    const std::int64_t b = bh / heads, h = bh % heads;
    for (std::int64_t p = 0; p < len; ++p) {
      const T* xr = xd + b * xs[0] + h * xs[1] + p * xs[2];
      T* orow = od + b * os[0] + h * os[1] + p * os[2];
      const T* cr = c + p * half;
      const T* sr = s + p * half;
      for (std::int64_t m = 0; m < half; ++m) {
        const T x1 = xr[m], x2 = xr[m + half], sn = sign * sr[m];
        orow[m] = x1 * cr[m] - x2 * sn;
        orow[m + half] = x2 * cr[m] + x1 * sn;
      }
    }
  });
}

}  // namespace

void CpuBackend::rotary(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor& out,
                        bool inverse) {
  dispatch_floating(x.dtype(),
                    [&](auto zero) { rotary_typed<decltype(zero)>(x, cos, sin, out, inverse); });
}

}  // namespace relpos
