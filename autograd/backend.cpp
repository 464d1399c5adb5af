// The one place where a device is mapped to its backend.
#include "autograd/backend.h"

#include "autograd/cpu/cpu_backend.h"
#include "autograd/device_control.h"
#include "autograd/error.h"
#include "autograd/threads.h"
#if RELPOS_HAVE_CUDA
#include "autograd/cuda/cuda_backend.h"
#include "autograd/cuda/device_select.h"
#endif

namespace relpos {

CpuBackend& cpu_backend() {
  static CpuBackend& instance = []() -> CpuBackend& {
    flush_denormals();
    static CpuBackend backend;
    return backend;
  }();
  return instance;
}

Backend& backend_for(Device device) {
  if (device == Device::cpu) return cpu_backend();
#if RELPOS_HAVE_CUDA
  return cuda_backend();
#else
  fail("device 'cuda' requested, but this relpos was built without CUDA (-DRELPOS_CUDA=OFF)");
#endif
}

Allocator& allocator_for(Device device) { return backend_for(device).allocator(); }

void select_gpu([[maybe_unused]] int slot) {
#if RELPOS_HAVE_CUDA
  select_cuda_device(slot);
#endif
}

void synchronize(Device device) {
  if (device == Device::cpu) return;
#if RELPOS_HAVE_CUDA
  cuda_backend().synchronize();
#else
  backend_for(device);  // throws: no CUDA in this build
#endif
}

namespace {
// An optional kernel called where supports() says it is missing: the caller should
// have asked kernel_supported() first.
[[noreturn]] void not_on_device(const Backend& backend, Kernel kernel) {
  throw InternalError(fmt::format("the {} kernel is not supported on {} (the caller did not ask)",
                                  name_of(kernel), name_of(backend.device())));
}
}  // namespace

void Backend::activation_forward(UnaryOp op, const Tensor& bias, std::int64_t rows, std::int64_t n,
                                 const Tensor& z, const Tensor& y, std::uint16_t* y_bf16) {
  if (y_bf16 != nullptr)
    throw InternalError(
        fmt::format("activation_forward: {} writes no bf16 copy of y", name_of(device())));
  if (bias.defined()) {  // z (rows, n) += bias broadcast over rows
    const Tensor rows_of_z = Tensor::view_of(z, {rows, n}, {n, 1}, z.offset());
    binary(BinaryOp::add, rows_of_z, Tensor::view_of(bias, {rows, n}, {0, 1}, bias.offset()),
           rows_of_z);
  }
  unary(op, z, y, 0.0);
}

void Backend::activation_backward(UnaryOp op, const Tensor& z, const Tensor& grad_y,
                                  std::int64_t rows, std::int64_t n, const Tensor& grad_z,
                                  const Tensor& grad_bias, std::uint16_t* grad_z_bf16) {
  if (grad_z_bf16 != nullptr)
    throw InternalError(
        fmt::format("activation_backward: {} writes no bf16 copy of grad_z", name_of(device())));
  if (!(op == UnaryOp::gelu_tanh || op == UnaryOp::gelu_erf || op == UnaryOp::relu))
    throw InternalError(fmt::format(
        "activation_backward: op {} needs y = f(z), which it is not given", static_cast<int>(op)));
  unary_backward(op, z, z, grad_y, grad_z, 0.0);  // y: unread by these derivatives
  if (grad_bias.defined()) sum_axis(grad_z, 1, rows, n, grad_bias);
}

void Backend::add_norm(const Tensor& x, const Tensor& delta, const Tensor& gamma,
                       const Tensor& beta, double eps, bool rms, std::int64_t rows, std::int64_t n,
                       const Tensor& h, const Tensor& y, const Tensor& mean, const Tensor& rstd,
                       std::uint16_t* y_bf16) {
  if (y_bf16 != nullptr)
    throw InternalError(fmt::format("add_norm: {} writes no bf16 copy of y", name_of(device())));
  binary(BinaryOp::add, x, delta, h);
  norm(h, gamma, beta, eps, rms, rows, n, y, mean, rstd);
}

void Backend::norm_backward_add(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                const Tensor& rstd, const Tensor& grad_y,
                                const Tensor& grad_residual, bool rms, std::int64_t rows,
                                std::int64_t n, const Tensor& grad_x, const Tensor& grad_gamma,
                                const Tensor& grad_beta, std::uint16_t* grad_x_bf16) {
  if (grad_x_bf16 != nullptr)
    throw InternalError(
        fmt::format("norm_backward_add: {} writes no bf16 copy of grad_x", name_of(device())));
  norm_backward(x, gamma, mean, rstd, grad_y, rms, rows, n, grad_x, grad_gamma, grad_beta);
  binary(BinaryOp::add, grad_residual, grad_x, grad_x);
}

void Backend::rotary(const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool) {
  not_on_device(*this, Kernel::rotary);
}
void Backend::flash_attention(const FlashAttentionArgs&, const Tensor&, const Tensor&,
                              std::uint16_t*) {
  not_on_device(*this, Kernel::flash_attention);
}
void Backend::flash_attention_backward(const FlashAttentionArgs&, const Tensor&, const Tensor&,
                                       const Tensor&, const FlashAttentionGrads&) {
  not_on_device(*this, Kernel::flash_attention);
}

void Backend::adam_update(const std::vector<AdamUpdate>&) {
  not_on_device(*this, Kernel::adam_update);
}
void Backend::sgd_update(const std::vector<SgdUpdate>&) {
  not_on_device(*this, Kernel::sgd_update);
}

}  // namespace relpos
