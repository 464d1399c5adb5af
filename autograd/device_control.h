#pragma once
// Control of a device as a whole, for the code outside autograd/ that may not call a
// device runtime itself (cmake/check_layers.cmake): choosing this process's GPU and
// waiting for a device's queued work. Implemented where devices map to backends
// (autograd/backend.cpp).
#include "autograd/dtype.h"

namespace relpos {

// Binds this process to GPU number `slot` modulo the machine's GPU count, before any
// work on a GPU (one GPU per rank of a data-parallel job). Nothing when relpos was built
// without CUDA or no GPU is usable.
void select_gpu(int slot);

// Waits for all the work queued on `device`; a kernel fault surfaces here as an
// exception. Nothing to wait for on the CPU, whose kernels return when they are done.
void synchronize(Device device);

}  // namespace relpos
