// Dropout masks on the GPU from the counter-based hash mix64(seed, offset + i)
// (autograd/counter_hash.h), the same bits as the CPU, so the masks are identical.
#include <cstdint>

#include "autograd/counter_hash.h"
#include "autograd/cuda/check.h"
#include "autograd/cuda/cuda_backend.h"
#include "autograd/cuda/launch.cuh"

namespace relpos {
namespace {

template <class T>
__global__ void dropout_mask_kernel(std::uint64_t seed, std::uint64_t offset, double p, T keep,
                                    T* mask, std::int64_t n) {
  for (std::int64_t i = cuda::thread_index(); i < n; i += cuda::thread_count()) {
    const std::uint64_t bits = mix64(seed, offset + static_cast<std::uint64_t>(i));
    mask[i] = uniform_of(bits) >= p ? keep : T(0);
  }
}

}  // namespace

void CudaBackend::dropout_mask(std::uint64_t seed, std::uint64_t offset, double p,
                               const Tensor& mask) {
  const std::int64_t n = mask.numel();  // any shape, contiguous
  if (n == 0) return;
  dispatch_floating(mask.dtype(), [&](auto zero) {
    using T = decltype(zero);
    dropout_mask_kernel<T><<<cuda::blocks_for(n), cuda::kThreads>>>(
        seed, offset, p, static_cast<T>(1.0 / (1.0 - p)), mask.data<T>(), n);
    RELPOS_CUDA_CHECK_LAUNCH("dropout_mask_kernel");
  });
}

}  // namespace relpos
