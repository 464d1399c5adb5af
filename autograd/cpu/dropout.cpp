// Dropout masks on the CPU from the counter-based hash mix64(seed, offset + i),
// so the mask depends only on (seed, offset, p) and matches other backends.
#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/parallel.h"
#include "autograd/random.h"

namespace relpos {

void CpuBackend::dropout_mask(std::uint64_t seed, std::uint64_t offset, double p,
                              const Tensor& mask) {
  dispatch_floating(mask.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* out = mask.data<T>();  // any shape, contiguous
    const std::int64_t n = mask.numel();
    const T keep = static_cast<T>(1.0 / (1.0 - p));
    cpu::parallel_for(n, n > 65536, [&](std::int64_t i) {
      const std::uint64_t bits = mix64(seed, offset + static_cast<std::uint64_t>(i));
      const double uniform = static_cast<double>(bits >> 11) * 0x1.0p-53;  // [0, 1)
      out[i] = uniform >= p ? keep : T(0);
    });
  });
}

}  // namespace relpos
