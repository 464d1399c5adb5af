// Copies (strided, with dtype conversion) and fills on the CPU.
#include <array>
#include <cstring>

#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/parallel.h"
#include "autograd/cpu/strided.h"
#include "autograd/error.h"

namespace relpos {
namespace {

template <class Fn>
decltype(auto) dispatch_any(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32:
      return fn(float{});
    case DType::f64:
      return fn(double{});
    case DType::i64:
      return fn(std::int64_t{});
    default:
      return fn(std::uint8_t{});
  }
}

template <class D, class S>
void copy_typed(const Tensor& dst, const Tensor& src) {
  D* out = static_cast<D*>(dst.raw_data());
  const S* in = static_cast<const S*>(src.raw_data());
  if constexpr (std::is_same_v<D, S>) {
    if (dst.is_contiguous() && src.is_contiguous()) {
      std::memcpy(out, in, static_cast<std::size_t>(dst.numel()) * sizeof(D));
      return;
    }
  }
  const std::array<const Shape*, 2> strides{&dst.strides(), &src.strides()};
  cpu::for_each_row<2>(dst.shape(), strides,
                       [&](std::int64_t, std::int64_t n, const auto& off, const auto& inner) {
                         D* o = out + off[0];
                         const S* s = in + off[1];
                         for (std::int64_t i = 0; i < n; ++i)
                           o[i * inner[0]] = static_cast<D>(s[i * inner[1]]);
                       });
}

}  // namespace

void CpuBackend::copy(const Tensor& dst, const Tensor& src) {
  if (dst.device() != Device::cpu || src.device() != Device::cpu)
    throw InternalError("CpuBackend::copy: both tensors must be on the CPU");
  if (dst.shape() != src.shape())
    throw InternalError(fmt::format("CpuBackend::copy: shapes {} and {} differ",
                                    to_string(dst.shape()), to_string(src.shape())));
  dispatch_any(dst.dtype(), [&](auto d) {
    dispatch_any(src.dtype(), [&](auto s) { copy_typed<decltype(d), decltype(s)>(dst, src); });
  });
}

void CpuBackend::fill(const Tensor& dst, double value) {
  dispatch_any(dst.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* out = static_cast<T*>(dst.raw_data());
    const T v = static_cast<T>(value);
    const std::int64_t n = dst.numel();
    cpu::parallel_for(n, n > 65536, [&](std::int64_t i) { out[i] = v; });
  });
}

}  // namespace relpos
