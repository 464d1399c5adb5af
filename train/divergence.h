#pragma once
// Finiteness checks that keep NaN and Inf out of the optimizer step and out of checkpoints.
#include <map>
#include <optional>
#include <string>

#include "autograd/tensor.h"

namespace relpos {

// The name of the first floating tensor (in name order) holding a NaN or an
// infinity; nullopt when every one is finite. Integer tensors are skipped.
std::optional<std::string> first_non_finite(const std::map<std::string, Tensor>& tensors);

}  // namespace relpos
