#include "train/divergence.h"

#include <algorithm>
#include <cmath>

namespace relpos {
namespace {

bool all_finite(const Tensor& tensor) {
  if (!is_floating(tensor.dtype())) return true;
  // Scanned in place on the CPU; a device tensor is copied over first.
  const Tensor host =
      tensor.device() == Device::cpu ? tensor.contiguous() : tensor.to(Device::cpu).contiguous();
  return dispatch_floating(host.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* data = host.data<T>();
    return std::all_of(data, data + host.numel(), [](T x) { return std::isfinite(x); });
  });
}

}  // namespace

std::optional<std::string> first_non_finite(const std::map<std::string, Tensor>& tensors) {
  for (const auto& [name, tensor] : tensors)
    if (!all_finite(tensor)) return name;
  return std::nullopt;
}

}  // namespace relpos
