#pragma once
// The CPU backend: OpenBLAS for GEMM, OpenMP over outer loops elsewhere.
// Each kernel family is defined in its own file in this folder.
#include "autograd/backend.h"

namespace relpos {

class CpuBackend final : public Backend {
 public:
  Device device() const override { return Device::cpu; }
  Allocator& allocator() override;
  bool supports(Kernel) const override { return true; }  // every optional kernel

  void copy(const Tensor& dst, const Tensor& src) override;
  void fill(const Tensor& dst, double value) override;
  void gemm(const GemmArgs& args) override;

  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void unary(UnaryOp op, const Tensor& x, const Tensor& out, double param) override;
  void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                      const Tensor& grad_x, double param) override;
  void activation_forward(UnaryOp op, const Tensor& bias, std::int64_t rows, std::int64_t n,
                          const Tensor& z, const Tensor& y, std::uint16_t* y_bf16) override;
  void activation_backward(UnaryOp op, const Tensor& z, const Tensor& grad_y, std::int64_t rows,
                           std::int64_t n, const Tensor& grad_z, const Tensor& grad_bias,
                           std::uint16_t* grad_z_bf16) override;
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
  void add_norm(const Tensor& x, const Tensor& delta, const Tensor& gamma, const Tensor& beta,
                double eps, bool rms, std::int64_t rows, std::int64_t n, const Tensor& h,
                const Tensor& y, const Tensor& mean, const Tensor& rstd,
                std::uint16_t* y_bf16) override;
  void norm_backward_add(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& grad_y, const Tensor& grad_residual,
                         bool rms, std::int64_t rows, std::int64_t n, const Tensor& grad_x,
                         const Tensor& grad_gamma, const Tensor& grad_beta,
                         std::uint16_t* grad_x_bf16) override;
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
  void rotary(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor& out,
              bool inverse) override;
  void flash_attention(const FlashAttentionArgs& args, const Tensor& out, const Tensor& lse,
                       std::uint16_t* out_bf16) override;
  void flash_attention_backward(const FlashAttentionArgs& args, const Tensor& out,
                                const Tensor& lse, const Tensor& grad_out,
                                const FlashAttentionGrads& grads) override;

  // optimizer kernels (optimizer.cpp)
  void adam_update(const std::vector<AdamUpdate>& updates) override;
  void sgd_update(const std::vector<SgdUpdate>& updates) override;
  double clip_grad_norm(const std::vector<Tensor>& grads, double max_norm, double eps) override;
};

CpuBackend& cpu_backend();

}  // namespace relpos
