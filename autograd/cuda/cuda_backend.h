#pragma once
// The CUDA backend: cuBLAS for GEMM, our own kernels elsewhere (one .cu file per
// kernel family in this folder, mirroring autograd/cpu/). Same contracts as the
// CPU backend; every reduction runs in a fixed order without atomics, so results
// are bit-identical from run to run. All work is queued on the default stream.
//
// Host-only header: it names no CUDA type, so plain C++ files can include it.
#include <cstddef>
#include <cstdint>

#include "autograd/backend.h"

namespace relpos {

// Statistics that only a caching device allocator has (the common ones are in
// Allocator::stats()).
struct CudaMemoryStats {
  std::uint64_t device_mallocs = 0;  // real cudaMalloc calls since start-up
  std::size_t reserved_bytes = 0;    // held from the driver: in use + cached
  std::size_t cached_bytes = 0;      // freed blocks kept for reuse
};

class CudaBackend final : public Backend {
 public:
  Device device() const override { return Device::cuda; }
  Allocator& allocator() override;
  bool supports(Kernel kernel) const override;  // cuda_backend.cpp
  CudaMemoryStats memory_stats();
  // Gives every cached (free) block back to the driver.
  void release_cached_memory();

  // f32 GEMMs may use TF32 tensor cores (10-bit mantissa inputs) when allowed.
  // Off by default, so f32 results match the CPU to f32 rounding.
  void set_allow_tf32(bool allow) { allow_tf32_ = allow; }
  bool allow_tf32() const { return allow_tf32_; }

  // Waits for all queued work; kernel faults surface here as exceptions.
  void synchronize();

  void copy(const Tensor& dst, const Tensor& src) override;
  void fill(const Tensor& dst, double value) override;
  void gemm(const GemmArgs& args) override;

  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void unary(UnaryOp op, const Tensor& x, const Tensor& out, double param) override;
  void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                      const Tensor& grad_x, double param) override;
  void where(const Tensor& mask, const Tensor& a, const Tensor& b, const Tensor& out) override;

  void sum_axis(const Tensor& x, std::int64_t outer, std::int64_t n, std::int64_t inner,
                const Tensor& out) override;
  void max_axis(const Tensor& x, std::int64_t outer, std::int64_t n, std::int64_t inner,
                const Tensor& out, const Tensor& argmax) override;
  void max_axis_backward(const Tensor& grad_out, const Tensor& argmax, std::int64_t outer,
                         std::int64_t n, std::int64_t inner, const Tensor& grad_x) override;

  void softmax(const Tensor& x, const Tensor& y, std::int64_t rows, std::int64_t n,
               bool log) override;
  void softmax_backward(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x,
                        std::int64_t rows, std::int64_t n, bool log) override;
  void cross_entropy(const Tensor& logits, const Tensor& targets, std::int64_t ignore_index,
                     const Tensor& loss, const Tensor& lse) override;
  void cross_entropy_backward(const Tensor& logits, const Tensor& targets,
                              std::int64_t ignore_index, const Tensor& lse, const Tensor& grad_loss,
                              const Tensor& grad_logits) override;
  void norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, bool rms,
            std::int64_t rows, std::int64_t n, const Tensor& y, const Tensor& mean,
            const Tensor& rstd) override;
  void norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                     const Tensor& grad_y, bool rms, std::int64_t rows, std::int64_t n,
                     const Tensor& grad_x, const Tensor& grad_gamma,
                     const Tensor& grad_beta) override;
  void embedding(const Tensor& table, const Tensor& indices, const Tensor& out) override;
  void embedding_backward(const Tensor& grad_out, const Tensor& indices,
                          const Tensor& grad_table) override;
  void dropout_mask(std::uint64_t seed, std::uint64_t offset, double p,
                    const Tensor& mask) override;

  void relative_gather(RelativeGather kind, const Tensor& src, const Tensor& out,
                       const RelativeShape& shape) override;
  void relative_scatter(RelativeGather kind, const Tensor& grad_out, const Tensor& grad_src,
                        const RelativeShape& shape) override;
  void bucket_gather(const Tensor& table, const Tensor& buckets, const Tensor& out) override;
  void bucket_gather_backward(const Tensor& grad_out, const Tensor& buckets,
                              const Tensor& grad_table) override;
  void relative_softmax(const RelativeSoftmaxArgs& args, const Tensor& probs) override;
  void relative_softmax_backward(const RelativeSoftmaxArgs& args, const Tensor& probs,
                                 const Tensor& grad_probs,
                                 const RelativeSoftmaxGrads& grads) override;

  // optimizer kernels (optimizer.cu)
  void adam_update(const std::vector<AdamUpdate>& updates) override;
  double clip_grad_norm(const std::vector<Tensor>& grads, double max_norm, double eps) override;

 private:
  bool allow_tf32_ = false;
};

CudaBackend& cuda_backend();

}  // namespace relpos
