#pragma once
// The arithmetic precision of a run's matrix products (train.precision; docs/bf16.md).
#include <string>

#include "autograd/precision.h"

namespace relpos {

// Precision::fp32 for "fp32"; Precision::bf16 for "bf16" when `device` (train.device) is
// "cpu" and bf16 products can run here (autograd/bf16_support.h). Otherwise a UsageError
// naming train.precision.
Precision train_precision(const std::string& name, const std::string& device);

}  // namespace relpos
