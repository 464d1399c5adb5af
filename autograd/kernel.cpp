#include "autograd/kernel.h"

#include <array>

#include "autograd/backend.h"
#include "autograd/error.h"

namespace relpos {
namespace {

constexpr std::size_t kDevices = 2, kKernels = std::size(kOptionalKernels);

// switched_off()[device][kernel]: set by KernelSwitchedOff.
std::array<std::array<bool, kKernels>, kDevices>& switched_off() {
  static std::array<std::array<bool, kKernels>, kDevices> flags{};
  return flags;
}

bool& switched_off(Device device, Kernel kernel) {
  return switched_off()[static_cast<std::size_t>(device)][static_cast<std::size_t>(kernel)];
}

}  // namespace

std::string_view name_of(Kernel kernel) {
  switch (kernel) {
    case Kernel::flash_attention:
      return "flash_attention";
    case Kernel::rotary:
      return "rotary";
    case Kernel::adam_update:
      return "adam_update";
    case Kernel::sgd_update:
      return "sgd_update";
  }
  return "?";
}

bool kernel_supported(Device device, Kernel kernel) {
  return !switched_off(device, kernel) && backend_for(device).supports(kernel);
}

void require_kernel(Device device, Kernel kernel, std::string_view who) {
  require(kernel_supported(device, kernel), "{}: the {} kernel is not supported on {}", who,
          name_of(kernel), name_of(device));
}

KernelSwitchedOff::KernelSwitchedOff(Device device, Kernel kernel)
    : device_(device), kernel_(kernel), was_off_(switched_off(device, kernel)) {
  switched_off(device, kernel) = true;
}

KernelSwitchedOff::~KernelSwitchedOff() { switched_off(device_, kernel_) = was_off_; }

}  // namespace relpos
