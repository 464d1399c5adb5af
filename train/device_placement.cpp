#include "train/device_placement.h"

#include "autograd/backend.h"
#include "autograd/error.h"

namespace relpos {

Device train_device(const std::string& name) {
  if (name == "cpu") return Device::cpu;
  require(name == "cuda", "train.device must be cpu or cuda, got '{}'", name);
  try {
    backend_for(Device::cuda);  // throws without a CUDA build or a usable device
  } catch (const UsageError& e) {
    fail("train.device: cuda is not available: {}; use train.device=cpu", e.what());
  }
  return Device::cuda;
}

void move_parameters(const std::vector<NamedParameter>& parameters, Device device) {
  for (const NamedParameter& p : parameters) {
    if (p.tensor.device() == device) continue;
    require(!p.tensor.grad().defined(),
            "move_parameters: parameter '{}' already has a gradient; move before training", p.name);
    const Tensor moved = p.tensor.contiguous().to(device);  // contiguous, offset 0
    TensorImpl& impl = *p.tensor.impl();
    impl.storage = moved.storage();
    impl.strides = moved.strides();
    impl.offset = 0;
  }
}

Device device_of(const Module& module) {
  const std::vector<NamedParameter> parameters = module.parameters();
  return parameters.empty() ? Device::cpu : parameters.front().tensor.device();
}

}  // namespace relpos
