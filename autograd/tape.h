#pragma once
// The tape: an ordered list of recorded ops. backward() walks it in reverse,
// accumulating gradients into leaves' .grad, then frees it.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace relpos {

// Gradients of an op's inputs given its output gradient; an undefined Tensor
// stands for "no gradient" (for inputs that do not require one).
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;
// The same for an op with several outputs: grad_outputs[k] is output k's gradient, an
// undefined Tensor where no gradient reached that output (at least one is defined).
using MultiBackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grad_outputs)>;

struct SavedTensor {
  Tensor tensor;
  std::uint64_t version;
};

struct TapeNode {
  std::string op;
  std::vector<Tensor> inputs;  // non-leaf inputs are held by their slot only
  std::vector<std::int64_t> input_slots;
  std::vector<SavedTensor> saved;
  BackwardFn backward;             // single-output ops
  MultiBackwardFn backward_multi;  // ops recorded with record_multi
  std::int64_t first_slot = 0;     // the gradient slot of output 0; output k has first_slot + k
  std::int64_t outputs = 1;
};

class Tape {
 public:
  static Tape& current();  // one tape per thread
  std::int64_t size() const { return static_cast<std::int64_t>(nodes_.size()); }
  std::uint64_t epoch() const { return epoch_; }
  void clear();

  // True when an op with these inputs must be recorded.
  static bool should_record(std::initializer_list<const Tensor*> inputs);
  static bool should_record(const std::vector<Tensor>& inputs);

  // Records `output = op(inputs)` and marks output as requiring grad.
  // `saved` lists tensors the backward reads: modifying one in place before
  // backward is reported as an error naming the op.
  void record(const std::string& op, const std::vector<Tensor>& inputs, const Tensor& output,
              BackwardFn backward, const std::vector<Tensor>& saved = {});
  // Records one op with several outputs (e.g. residual add + LayerNorm: the new residual
  // stream and its normalised rows), whose backward sees all their gradients at once.
  void record_multi(const std::string& op, const std::vector<Tensor>& inputs,
                    const std::vector<Tensor>& outputs, MultiBackwardFn backward,
                    const std::vector<Tensor>& saved = {});

  void backward(const Tensor& root, const Tensor& grad_root);

  // Whether an op recorded so far saved a tensor that shares t's storage (a bf16 linear
  // layer then keeps that f32 input rather than a copy of it; autograd/ops/linear.cpp).
  bool saves_storage_of(const Tensor& t) const;

 private:
  TapeNode& push_node(const std::string& op, const std::vector<Tensor>& inputs,
                      const std::vector<Tensor>& saved, std::int64_t outputs);

  std::vector<TapeNode> nodes_;
  std::vector<std::int64_t> slot_node_;  // gradient slot -> index of the node that produced it
  std::uint64_t epoch_ = 1;
};

// Backpropagates from a scalar (seed 1) or with an explicit output gradient.
void backward(const Tensor& root);
void backward(const Tensor& root, const Tensor& grad_root);

bool grad_enabled();

// Disables recording in its scope.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace relpos
