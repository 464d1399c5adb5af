// Checking a checkpoint's parameter names, shapes and dtypes against a model's, and its
// parameters' values: the part of train/store/checkpoint.h that needs no HDF5.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

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
  for (const auto& [name, tensor] : expected) {
    const DType found = loaded.at(name).dtype();
    require(found == tensor.dtype(),
            "checkpoint {} does not match the model: parameter '{}' is {} in the checkpoint but "
            "{} in the model (parameters are not converted)",
            source, name, name_of(found), name_of(tensor.dtype()));
  }
}

void require_finite_parameters(const std::map<std::string, Tensor>& params,
                               const std::string& source) {
  for (const auto& [name, tensor] : params) {
    if (!is_floating(tensor.dtype())) continue;
    const std::vector<double> values = tensor.to_vector();
    require(std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); }),
            "checkpoint {}: parameter '{}' holds NaN or Inf; a model needs finite weights", source,
            name);
  }
}

}  // namespace relpos
