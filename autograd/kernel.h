#pragma once
// The optional kernels: those a backend may lack (every other Backend kernel is
// required). Each backend states which it has in its supports() (autograd/cpu/
// cpu_backend.h, autograd/cuda/cuda_backend.h); this header is how the code above
// autograd/ asks, so that nothing outside autograd/ chooses a path by device.
// Where a kernel is missing, an op with a fallback composes it from required
// kernels (rotary), a caller picks another path (flash attention), and anything
// else is refused before a run starts (the optimizers' updates).
#include <cstdint>
#include <string_view>

#include "autograd/tensor.h"

namespace relpos {

enum class Kernel : std::uint8_t { flash_attention, rotary, adam_update, sgd_update };
inline constexpr Kernel kOptionalKernels[] = {Kernel::flash_attention, Kernel::rotary,
                                              Kernel::adam_update, Kernel::sgd_update};

std::string_view name_of(Kernel kernel);

// Whether the backend of `device` has the kernel and it is not switched off.
bool kernel_supported(Device device, Kernel kernel);
inline bool kernel_supported(const Tensor& t, Kernel kernel) {
  return kernel_supported(t.device(), kernel);
}
// A UsageError "<who>: the <kernel> kernel is not supported on <device>" unless supported.
void require_kernel(Device device, Kernel kernel, std::string_view who);

// Switches a kernel off on one device while it lives, so that its fallback (or its
// refusal) can be exercised and compared where the kernel exists, e.g. on the CPU.
// Not thread-safe: create it outside any parallel region, around whole steps.
class KernelSwitchedOff {
 public:
  KernelSwitchedOff(Device device, Kernel kernel);
  ~KernelSwitchedOff();
  KernelSwitchedOff(const KernelSwitchedOff&) = delete;
  KernelSwitchedOff& operator=(const KernelSwitchedOff&) = delete;

 private:
  Device device_;
  Kernel kernel_;
  bool was_off_;
};

}  // namespace relpos
