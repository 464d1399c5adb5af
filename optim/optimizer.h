#pragma once
// Optimizer: updates parameters in place (under a NoGradGuard) from their .grad,
// with every piece of state in a named tensor, so that a checkpoint saves it and
// a resumed run continues bit for bit.
//
// State keys: "step" (i64 scalar: the number of step() calls) and
// "<param name>/<buffer>" for per-parameter buffers, e.g.
// "blocks.0.attn.q.weight/exp_avg". Every buffer exists, zero-initialised, from
// construction, so the set of keys depends only on the parameters and settings.
//
// Parameters: contiguous f32 or f64 tensors, all on one device, whose backend must
// have the optimizer's update kernel (autograd/kernel.h): otherwise construction
// fails with "<name>: the <kernel> kernel is not supported on <device>", before any
// step. Per-parameter step counters stay on the host; the other buffers live with
// the parameters.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/kernel.h"
#include "autograd/tensor.h"
#include "optim/parameter.h"

namespace relpos {

class Optimizer {
 public:
  // `name` (e.g. "sgd") names the optimizer in errors; `update` is the backend kernel
  // its update() runs.
  Optimizer(std::vector<NamedParameter> parameters, std::string_view name, Kernel update);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update, with learning rate lr >= 0, of every parameter that has a
  // gradient; parameters without one are skipped and their buffers untouched.
  void step(double lr);
  // Drops every parameter's gradient.
  void zero_grad();

  std::int64_t step_count() const;
  const std::vector<NamedParameter>& parameters() const { return parameters_; }

  // A snapshot (copies) of every state tensor, by key.
  std::map<std::string, Tensor> state() const;
  // Copies `state` into this optimizer. It must hold exactly this optimizer's
  // keys, with the same shapes and dtypes; otherwise a UsageError names the key
  // (and both shapes) and nothing is changed.
  void load_state(const std::map<std::string, Tensor>& state);

 protected:
  // Registers the zero state tensor "<name of parameter index>/<buffer>" on
  // `device` and returns it (a handle that load_state writes through).
  Tensor add_buffer(std::size_t index, const std::string& buffer, const Shape& shape, DType dtype,
                    Device device);
  // A parameter to update and its gradient: contiguous, with the parameter's
  // shape, dtype and device.
  struct GradientOf {
    std::size_t index;  // into parameters()
    Tensor grad;
  };
  // Updates every listed parameter in place (in list order, each at most once).
  // Runs under a NoGradGuard.
  virtual void update(const std::vector<GradientOf>& gradients, double lr) = 0;
  // Increments an i64 scalar counter tensor and returns the new value.
  static std::int64_t increment(const Tensor& counter);

 private:
  void check_gradient(const NamedParameter& parameter) const;

  std::vector<NamedParameter> parameters_;
  std::map<std::string, Tensor> state_;
  Tensor steps_;  // i64 scalar, also state_["step"]
};

}  // namespace relpos
