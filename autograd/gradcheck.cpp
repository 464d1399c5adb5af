#include "autograd/gradcheck.h"

#include <fmt/format.h>

#include <cmath>

#include "autograd/error.h"
#include "autograd/random.h"
#include "autograd/tape.h"

namespace relpos {
namespace {

// <f(inputs), w> without recording.
double contracted(const TensorFunction& f, const std::vector<Tensor>& inputs,
                  const std::vector<double>& weights) {
  NoGradGuard no_grad;
  const std::vector<double> y = f(inputs).to_vector();
  double total = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) total += y[i] * weights[i];
  return total;
}

// Element `flat` (row-major over the view's shape) of a strided f64 view.
double& element(const Tensor& t, std::int64_t flat) {
  std::int64_t offset = 0;
  for (std::size_t axis = t.shape().size(); axis-- > 0;) {
    offset += (flat % t.shape()[axis]) * t.strides()[axis];
    flat /= t.shape()[axis];
  }
  return t.data<double>()[offset];
}

}  // namespace

GradcheckResult gradcheck(const TensorFunction& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad())
      require(t.dtype() == DType::f64 && t.device() == Device::cpu,
              "gradcheck: inputs must be f64 CPU tensors, got {}", t.describe());

  for (const Tensor& t : inputs)
    if (t.defined()) t.zero_grad();
  Tensor y = f(inputs);
  Rng rng(options.seed);
  std::vector<double> weights(static_cast<std::size_t>(y.numel()));
  for (double& w : weights) w = rng.uniform() * 2.0 - 1.0;
  GradcheckResult result;
  if (!y.requires_grad()) {
    result.ok = false;
    result.message = "gradcheck: the output does not require grad (nothing was recorded)";
    return result;
  }
  backward(y, Tensor::from_data(weights, y.shape(), y.dtype()));

  for (std::size_t input = 0; input < inputs.size(); ++input) {
    const Tensor& x = inputs[input];
    if (!x.defined() || !x.requires_grad()) continue;
    const Tensor grad = x.grad();
    const std::vector<double> analytic =
        grad.defined() ? grad.to_vector() : std::vector<double>(x.numel(), 0.0);
    for (std::int64_t e = 0; e < x.numel(); ++e) {
      double& value = element(x, e);
      const double original = value;
      value = original + options.eps;
      const double plus = contracted(f, inputs, weights);
      value = original - options.eps;
      const double minus = contracted(f, inputs, weights);
      value = original;
      const double center = contracted(f, inputs, weights);
      const double numeric = (plus - minus) / (2.0 * options.eps);
      const double left = (center - minus) / options.eps;
      const double right = (plus - center) / options.eps;
      const double a = analytic[e];
      double error = std::abs(a - numeric);
      const bool kink =
          std::abs(left - right) > 1e3 * options.atol + options.rtol * std::abs(numeric);
      if (kink) {
        ++result.kinks;
        const double lo = std::min(left, right) - options.atol;
        const double hi = std::max(left, right) + options.atol;
        error = (a >= lo && a <= hi) ? 0.0 : std::min(std::abs(a - lo), std::abs(a - hi));
      }
      ++result.checked;
      result.max_abs_error = std::max(result.max_abs_error, error);
      if (error > options.atol + options.rtol * std::abs(numeric) && result.ok) {
        result.ok = false;
        result.message = fmt::format(
            "gradcheck: input {} ({}), element {}: analytic {:.10g} vs numeric {:.10g}{}", input,
            x.describe(), e, a, numeric, kink ? " (at a kink)" : "");
      }
    }
  }
  return result;
}

}  // namespace relpos
