#pragma once
// Finite-difference gradient checking in fp64, usable on any function of tensors.
//
// The function's output y is contracted with fixed random weights w, so one
// backward pass gives the analytic gradient of <y, w>, compared element by
// element with central differences. At a kink (relu at 0, max at a tie) the
// one-sided slopes disagree; there the analytic value is accepted if it lies
// between them (a subgradient), as Caffe's and ggml's checkers allow.
#include <functional>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace relpos {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  std::uint64_t seed = 1234;
};

struct GradcheckResult {
  bool ok = true;
  std::string message;  // the first failure, with input, element, analytic and numeric values
  double max_abs_error = 0.0;
  std::int64_t checked = 0;  // elements compared
  std::int64_t kinks = 0;    // elements judged to sit on a kink
};

using TensorFunction = std::function<Tensor(const std::vector<Tensor>&)>;

// Inputs that require grad are checked; they must be f64 CPU tensors (views allowed).
GradcheckResult gradcheck(const TensorFunction& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace relpos
