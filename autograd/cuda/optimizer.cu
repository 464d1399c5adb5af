// Optimizer kernels on the GPU, each a multi-tensor launch over all parameters
// (multi_tensor.cuh):
// - adam_update: one launch per step. The element math is the CPU's
//   (autograd/cpu/optimizer.cpp) written with round-to-nearest intrinsics, so
//   nvcc cannot contract or reorder it: same inputs, same bits as the CPU.
// - clip_grad_norm: the squares are summed in double, per chunk by a fixed tree
//   (one block per chunk), then the chunk sums by one block in a fixed order; no
//   atomics. The scale is decided and applied on the device from the device
//   norm; only the norm (8 bytes) comes back to the host.
#include <cmath>
#include <cstdint>
#include <vector>

#include "autograd/cuda/check.h"
#include "autograd/cuda/cuda_backend.h"
#include "autograd/cuda/launch.cuh"
#include "autograd/cuda/multi_tensor.cuh"
#include "autograd/cuda/warp.cuh"
#include "autograd/error.h"

namespace relpos {
namespace {

using cuda::kMultiTensorChunk;

// ---- correctly rounded arithmetic that nvcc leaves as written ----
__device__ inline float fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ inline double fma_rn(double a, double b, double c) { return __fma_rn(a, b, c); }
__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ inline double div_rn(double a, double b) { return __ddiv_rn(a, b); }
__device__ inline float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ inline float sqrt_rn(float a) { return __fsqrt_rn(a); }
__device__ inline double sqrt_rn(double a) { return __dsqrt_rn(a); }

// The sum of `value` over a block of cuda::kThreads threads by a fixed tree:
// each warp's butterfly, then thread 0 adds the warp sums in warp order. Only
// thread 0's result is the sum. Call at most once per kernel.
__device__ double block_sum(double value) {
  __shared__ double warp_sums[cuda::kWarpsPerBlock];
  value = cuda::warp_sum(value);
  if (cuda::lane_index() == 0) warp_sums[threadIdx.x / cuda::kWarp] = value;
  __syncthreads();
  double total = 0.0;
  if (threadIdx.x == 0)
    for (int w = 0; w < cuda::kWarpsPerBlock; ++w) total = __dadd_rn(total, warp_sums[w]);
  return total;
}

// ---- Adam ----

template <class T>
struct AdamSlot {
  T* param;
  const T* grad;
  T* exp_avg;
  T* exp_avg_sq;
  std::int64_t numel, first_chunk;
  T l2, shrink, beta1, beta2, one_minus_beta1, one_minus_beta2, neg_step_size,
      bias_correction2_sqrt, eps;
};

template <class T>
__global__ void adam_kernel(const AdamSlot<T>* slots, int count) {
  const std::int64_t chunk = blockIdx.x;
  const AdamSlot<T> s = cuda::slot_of_chunk(slots, count, chunk);
  const std::int64_t begin = (chunk - s.first_chunk) * kMultiTensorChunk;
  const std::int64_t end =
      begin + kMultiTensorChunk < s.numel ? begin + kMultiTensorChunk : s.numel;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    T grad = s.grad[i];
    T p = s.param[i];
    if (s.l2 != T(0)) grad = fma_rn(s.l2, p, grad);
    if (s.shrink != T(1)) p = mul_rn(p, s.shrink);
    const T m = fma_rn(s.exp_avg[i], s.beta1, mul_rn(s.one_minus_beta1, grad));
    const T v = fma_rn(s.exp_avg_sq[i], s.beta2, mul_rn(mul_rn(s.one_minus_beta2, grad), grad));
    const T denom = add_rn(div_rn(sqrt_rn(v), s.bias_correction2_sqrt), s.eps);
    s.exp_avg[i] = m;
    s.exp_avg_sq[i] = v;
    s.param[i] = fma_rn(s.neg_step_size, div_rn(m, denom), p);
  }
}

template <class T>
AdamSlot<T> adam_slot(const Backend::AdamUpdate& u, std::int64_t first_chunk) {
  return {u.param.data<T>(),
          u.grad.data<T>(),
          u.exp_avg.data<T>(),
          u.exp_avg_sq.data<T>(),
          u.param.numel(),
          first_chunk,
          static_cast<T>(u.l2),
          static_cast<T>(u.shrink),
          static_cast<T>(u.beta1),
          static_cast<T>(u.beta2),
          static_cast<T>(1.0 - u.beta1),
          static_cast<T>(1.0 - u.beta2),
          -static_cast<T>(u.step_size),
          static_cast<T>(u.bias_correction2_sqrt),
          static_cast<T>(u.eps)};
}

// ---- global-norm clipping ----

template <class T>
struct GradSlot {
  T* grad;
  std::int64_t numel, first_chunk;
};

// partial[chunk] = the sum of x*x over the chunk, in double: each thread adds
// its elements (stride kThreads) in order, then block_sum.
template <class T>
__global__ void chunk_squares_kernel(const GradSlot<T>* slots, int count, double* partial) {
  const std::int64_t chunk = blockIdx.x;
  const GradSlot<T> s = cuda::slot_of_chunk(slots, count, chunk);
  const std::int64_t begin = (chunk - s.first_chunk) * kMultiTensorChunk;
  const std::int64_t end =
      begin + kMultiTensorChunk < s.numel ? begin + kMultiTensorChunk : s.numel;
  double acc = 0.0;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const double x = static_cast<double>(s.grad[i]);
    acc = __fma_rn(x, x, acc);
  }
  const double total = block_sum(acc);
  if (threadIdx.x == 0) partial[chunk] = total;
}

// *norm = sqrt(sum of partial[0, chunks)), by one block: thread t adds chunks
// t, t + kThreads, ... in order, then block_sum.
__global__ void global_norm_kernel(const double* partial, std::int64_t chunks, double* norm) {
  double acc = 0.0;
  for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) acc = __dadd_rn(acc, partial[c]);
  const double total = block_sum(acc);
  if (threadIdx.x == 0) *norm = __dsqrt_rn(total);
}

// Scales every gradient by coef = max_norm / (norm + eps) when the norm is
// finite and coef < 1, with the CPU's rule; otherwise leaves them alone.
template <class T>
__global__ void scale_kernel(const GradSlot<T>* slots, int count, const double* norm,
                             double max_norm, double eps) {
  const double n = *norm;
  const double coef = __ddiv_rn(max_norm, __dadd_rn(n, eps));
  if (!isfinite(n) || coef >= 1.0) return;
  const T scale = static_cast<T>(coef);
  const std::int64_t chunk = blockIdx.x;
  const GradSlot<T> s = cuda::slot_of_chunk(slots, count, chunk);
  const std::int64_t begin = (chunk - s.first_chunk) * kMultiTensorChunk;
  const std::int64_t end =
      begin + kMultiTensorChunk < s.numel ? begin + kMultiTensorChunk : s.numel;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    s.grad[i] = mul_rn(s.grad[i], scale);
}

// The fused kernels take one dtype per call (a model's parameters share one).
DType common_dtype(const std::vector<Tensor>& tensors, const char* kernel) {
  const DType dtype = tensors.front().dtype();
  for (const Tensor& t : tensors)
    require(t.dtype() == dtype,
            "{}: tensors of dtypes {} and {} in one call; the fused CUDA "
            "kernel takes one dtype",
            kernel, name_of(dtype), name_of(t.dtype()));
  return dtype;
}

unsigned grid_of(std::int64_t chunks, const char* kernel) {
  require(chunks <= 0x7fffffff, "{}: {} chunks exceed the grid limit", kernel, chunks);
  return static_cast<unsigned>(chunks);
}

}  // namespace

void CudaBackend::adam_update(const std::vector<AdamUpdate>& updates) {
  std::vector<Tensor> params;
  for (const AdamUpdate& u : updates) params.push_back(u.param);
  if (params.empty()) return;
  dispatch_floating(common_dtype(params, "adam_update"), [&](auto zero) {
    using T = decltype(zero);
    std::vector<AdamSlot<T>> slots;
    std::int64_t chunks = 0;
    for (const AdamUpdate& u : updates) {
      if (u.param.numel() == 0) continue;
      slots.push_back(adam_slot<T>(u, chunks));
      chunks += cuda::chunks_of(u.param.numel());
    }
    if (slots.empty()) return;
    const Tensor device_slots = cuda::upload_slots(slots);
    adam_kernel<T><<<grid_of(chunks, "adam_update"), cuda::kThreads>>>(
        static_cast<const AdamSlot<T>*>(device_slots.raw_data()), static_cast<int>(slots.size()));
    RELPOS_CUDA_CHECK_LAUNCH("adam_kernel");
  });
}

double CudaBackend::clip_grad_norm(const std::vector<Tensor>& grads, double max_norm, double eps) {
  if (grads.empty()) return 0.0;
  return dispatch_floating(common_dtype(grads, "clip_grad_norm"), [&](auto zero) {
    using T = decltype(zero);
    std::vector<GradSlot<T>> slots;
    std::int64_t chunks = 0;
    for (const Tensor& g : grads) {
      if (g.numel() == 0) continue;
      slots.push_back({g.data<T>(), g.numel(), chunks});
      chunks += cuda::chunks_of(g.numel());
    }
    if (slots.empty()) return 0.0;
    const Tensor device_slots = cuda::upload_slots(slots);
    const auto* slot_data = static_cast<const GradSlot<T>*>(device_slots.raw_data());
    const int count = static_cast<int>(slots.size());
    const unsigned grid = grid_of(chunks, "clip_grad_norm");
    const Tensor partial = Tensor::empty({chunks}, DType::f64, Device::cuda);
    const Tensor norm = Tensor::empty({1}, DType::f64, Device::cuda);
    chunk_squares_kernel<T><<<grid, cuda::kThreads>>>(slot_data, count, partial.data<double>());
    RELPOS_CUDA_CHECK_LAUNCH("chunk_squares_kernel");
    global_norm_kernel<<<1, cuda::kThreads>>>(partial.data<double>(), chunks, norm.data<double>());
    RELPOS_CUDA_CHECK_LAUNCH("global_norm_kernel");
    scale_kernel<T><<<grid, cuda::kThreads>>>(slot_data, count, norm.data<double>(), max_norm, eps);
    RELPOS_CUDA_CHECK_LAUNCH("scale_kernel");
    double host_norm = 0.0;
    RELPOS_CUDA_CHECK(
        cudaMemcpy(&host_norm, norm.data<double>(), sizeof(double), cudaMemcpyDeviceToHost));
    return host_norm;
  });
}

}  // namespace relpos
