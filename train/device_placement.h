#pragma once
// Where a run's tensors live (train.device): resolving the setting, moving a
// model's parameters there in place, and finding a model's device.
#include <string>
#include <vector>

#include "autograd/dtype.h"
#include "layers/module.h"
#include "optim/parameter.h"

namespace relpos {

// Device::cpu for "cpu"; Device::cuda for "cuda" when relpos was built with CUDA
// and a device is usable. Otherwise a UsageError naming train.device.
Device train_device(const std::string& name);

// Moves each parameter's data to `device` in place: every module keeps its
// handle, so the model then runs there. Parameters must have no gradient yet.
void move_parameters(const std::vector<NamedParameter>& parameters, Device device);

// The device of a module's parameters (the first one's; a module keeps them on one).
Device device_of(const Module& module);

}  // namespace relpos
