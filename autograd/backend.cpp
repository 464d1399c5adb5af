// The one place where a device is mapped to its backend.
#include "autograd/backend.h"

#include "autograd/cpu/cpu_backend.h"
#include "autograd/error.h"
#include "autograd/threads.h"
#if RELPOS_HAVE_CUDA
#include "autograd/cuda/cuda_backend.h"
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

namespace {
[[noreturn]] void not_on_device(const Backend& backend, const char* kernel) {
  throw InternalError(fmt::format("kernel '{}' is not implemented on device {}", kernel,
                                  name_of(backend.device())));
}
}  // namespace

void Backend::activation_backward(UnaryOp op, const Tensor& z, const Tensor& grad_y,
                                  std::int64_t rows, std::int64_t n, const Tensor& grad_z,
                                  const Tensor& grad_bias) {
  if (!(op == UnaryOp::gelu_tanh || op == UnaryOp::gelu_erf || op == UnaryOp::relu))
    throw InternalError(fmt::format(
        "activation_backward: op {} needs y = f(z), which it is not given", static_cast<int>(op)));
  unary_backward(op, z, z, grad_y, grad_z, 0.0);  // y: unread by these derivatives
  if (grad_bias.defined()) sum_axis(grad_z, 1, rows, n, grad_bias);
}

void Backend::relative_gather(RelativeGather, const Tensor&, const Tensor&, const RelativeShape&) {
  not_on_device(*this, "relative_gather");
}
void Backend::relative_scatter(RelativeGather, const Tensor&, const Tensor&, const RelativeShape&) {
  not_on_device(*this, "relative_scatter");
}
void Backend::bucket_gather(const Tensor&, const Tensor&, const Tensor&) {
  not_on_device(*this, "bucket_gather");
}
void Backend::bucket_gather_backward(const Tensor&, const Tensor&, const Tensor&) {
  not_on_device(*this, "bucket_gather_backward");
}
void Backend::relative_softmax(const RelativeSoftmaxArgs&, const Tensor&) {
  not_on_device(*this, "relative_softmax");
}
void Backend::relative_softmax_backward(const RelativeSoftmaxArgs&, const Tensor&, const Tensor&,
                                        const RelativeSoftmaxGrads&) {
  not_on_device(*this, "relative_softmax_backward");
}
void Backend::rotary(const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool) {
  not_on_device(*this, "rotary");
}
void Backend::flash_attention(const FlashAttentionArgs&, const Tensor&, const Tensor&) {
  not_on_device(*this, "flash_attention");
}
void Backend::flash_attention_backward(const FlashAttentionArgs&, const Tensor&, const Tensor&,
                                       const Tensor&, const FlashAttentionGrads&) {
  not_on_device(*this, "flash_attention_backward");
}

}  // namespace relpos
