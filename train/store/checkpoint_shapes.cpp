// Checking a checkpoint's parameter names and shapes against a model's: the part of
// train/store/checkpoint.h that needs no HDF5.
#include <fmt/format.h>

#include "autograd/error.h"
#include "train/store/checkpoint.h"

namespace relpos {

void check_shapes_match(const std::map<std::string, Shape>& expected,
                        const std::map<std::string, Shape>& found, const std::string& source) {
  for (const auto& [name, shape] : expected) {
    const auto match = found.find(name);
    require(match != found.end(),
            "checkpoint {} does not match the model: parameter '{}' (shape {}) is missing", source,
            name, to_string(shape));
    require(match->second == shape,
            "checkpoint {} does not match the model: parameter '{}' has shape {} in the "
            "checkpoint but {} in the model",
            source, name, to_string(match->second), to_string(shape));
  }
  for (const auto& [name, shape] : found)
    require(expected.count(name) == 1,
            "checkpoint {} does not match the model: unexpected parameter '{}' (shape {})", source,
            name, to_string(shape));
}

void check_params_match(const std::map<std::string, Tensor>& expected,
                        const std::map<std::string, Tensor>& loaded, const std::string& source) {
  const auto shapes = [](const std::map<std::string, Tensor>& tensors) {
    std::map<std::string, Shape> out;
    for (const auto& [name, tensor] : tensors) out.emplace(name, tensor.shape());
    return out;
  };
  check_shapes_match(shapes(expected), shapes(loaded), source);
}

}  // namespace relpos
