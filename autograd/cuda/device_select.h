#pragma once
// select_gpu (autograd/device_control.h) in a CUDA build: binds this process to GPU number
// `slot` modulo the machine's GPU count; nothing when no GPU is usable.
namespace relpos {

void select_cuda_device(int slot);

}  // namespace relpos
