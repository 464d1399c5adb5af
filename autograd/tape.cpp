#include "autograd/tape.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "autograd/backend.h"
#include "autograd/error.h"
#include "autograd/ops/elementwise.h"

namespace relpos {
namespace {

thread_local bool grad_mode = true;

// A non-leaf tensor from an earlier (freed) tape can no longer carry gradients.
bool is_live_output(const TensorImpl& impl, std::uint64_t epoch) {
  return impl.tape_slot >= 0 && impl.tape_epoch == epoch;
}

void check_not_stale(const Tensor& t, std::uint64_t epoch, const std::string& op) {
  const TensorImpl& impl = *t.impl();
  if (impl.tape_slot >= 0 && impl.tape_epoch != epoch)
    fail("{}: input {} comes from a graph already freed by backward(); detach() it or recompute it",
         op, t.describe());
}

// Whether no other handle or view can see t's elements: then a leaf may keep t
// itself as its .grad, and a gradient slot may be added to in place. Gradients that
// backward functions pass through (add's returns its input) are shared and must be copied.
bool seen_only_here(const Tensor& t) {
  return t.impl_ptr().use_count() == 1 && t.storage().use_count() == 1;
}
bool held_only_here(const Tensor& t) { return seen_only_here(t) && t.is_contiguous(); }

// Whether t's elements are distinct and fill one block: contiguous, or a permutation of a
// contiguous tensor (e.g. a (B, H, L, D) gradient in the (B, L, H, D) layout of the attention
// layer's projections).
bool dense(const Tensor& t) {
  std::vector<std::int64_t> axes;
  for (std::int64_t a = 0; a < t.dim(); ++a)
    if (t.size(a) != 1) axes.push_back(a);
  const Shape& strides = t.strides();
  std::sort(axes.begin(), axes.end(),
            [&](std::int64_t a, std::int64_t b) { return strides[a] < strides[b]; });
  std::int64_t expected = 1;
  for (const std::int64_t a : axes) {
    if (strides[a] != expected) return false;
    expected *= t.size(a);
  }
  return true;
}

// slot += grad. In place when the slot's tensor is seen by no one else (the same sum as
// add(slot, grad), without a new block whose pages the step would fault in again). A slot
// that is a permutation of one block, like grad (e.g. a (B, H, L, D) gradient in the (B, L,
// H, D) layout of the attention layer's projections), is added to as that flat block: it
// keeps its layout, so that the backward of the permute that made it is a view, not a copy.
// An in-place add bumps the slot's version: a bf16 rounding kept with the slot's storage
// (autograd/ops/bf16_input.h) is of the values before it.
void accumulate(Tensor& slot, const Tensor& grad) {
  const bool same_kind = slot.defined() && slot.shape() == grad.shape() &&
                         slot.dtype() == grad.dtype() && slot.device() == grad.device() &&
                         slot.storage() != grad.storage();
  if (!slot.defined()) {
    slot = grad;
  } else if (same_kind && held_only_here(slot)) {
    backend_of(slot).binary(BinaryOp::add, slot, grad, slot);
    slot.bump_version();
  } else if (same_kind && seen_only_here(slot) && dense(slot) && slot.strides() == grad.strides()) {
    const Shape flat{slot.numel()}, unit{1};
    const Tensor flat_slot = Tensor::view_of(slot, flat, unit, slot.offset());
    backend_of(slot).binary(BinaryOp::add, flat_slot,
                            Tensor::view_of(grad, flat, unit, grad.offset()), flat_slot);
    slot.bump_version();
  } else {
    slot = add(slot, grad);
  }
}

void check_saved_unchanged(const TapeNode& node) {
  for (const SavedTensor& s : node.saved)
    if (s.tensor.version() != s.version)
      throw UsageError(fmt::format(
          "backward(): a tensor saved by '{}' ({}) was modified in place after it was used "
          "(version {} -> {}); its gradient would be wrong",
          node.op, s.tensor.describe(), s.version, s.tensor.version()));
}

}  // namespace

bool grad_enabled() { return grad_mode; }

NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }

Tape& Tape::current() {
  thread_local Tape tape;
  return tape;
}

void Tape::clear() {
  nodes_.clear();
  slot_node_.clear();
  ++epoch_;
}

bool Tape::should_record(std::initializer_list<const Tensor*> inputs) {
  if (!grad_mode) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

bool Tape::should_record(const std::vector<Tensor>& inputs) {
  if (!grad_mode) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

TapeNode& Tape::push_node(const std::string& op, const std::vector<Tensor>& inputs,
                          const std::vector<Tensor>& saved, std::int64_t outputs) {
  TapeNode node;
  node.op = op;
  node.inputs.reserve(inputs.size());
  node.input_slots.reserve(inputs.size());
  node.saved.reserve(saved.size());
  for (const Tensor& input : inputs) {
    if (!input.defined() || !input.requires_grad()) {
      node.inputs.emplace_back();
      node.input_slots.push_back(-1);
      continue;
    }
    check_not_stale(input, epoch_, op);
    if (input.is_leaf()) {
      node.inputs.push_back(input);
      node.input_slots.push_back(-1);
    } else {
      node.inputs.emplace_back();
      node.input_slots.push_back(input.impl()->tape_slot);
    }
  }
  for (const Tensor& s : saved) node.saved.push_back({s, s.version()});
  node.first_slot = static_cast<std::int64_t>(slot_node_.size());
  node.outputs = outputs;
  slot_node_.insert(slot_node_.end(), static_cast<std::size_t>(outputs), size());
  nodes_.push_back(std::move(node));
  return nodes_.back();
}

void Tape::record(const std::string& op, const std::vector<Tensor>& inputs, const Tensor& output,
                  BackwardFn backward, const std::vector<Tensor>& saved) {
  TapeNode& node = push_node(op, inputs, saved, 1);
  node.backward = std::move(backward);
  TensorImpl& out = *output.impl();
  out.requires_grad = true;
  out.tape_slot = node.first_slot;
  out.tape_epoch = epoch_;
}

void Tape::record_multi(const std::string& op, const std::vector<Tensor>& inputs,
                        const std::vector<Tensor>& outputs, MultiBackwardFn backward,
                        const std::vector<Tensor>& saved) {
  if (outputs.empty()) throw InternalError(fmt::format("'{}' recorded with no outputs", op));
  TapeNode& node = push_node(op, inputs, saved, static_cast<std::int64_t>(outputs.size()));
  node.backward_multi = std::move(backward);
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    TensorImpl& out = *outputs[k].impl();
    out.requires_grad = true;
    out.tape_slot = node.first_slot + static_cast<std::int64_t>(k);
    out.tape_epoch = epoch_;
  }
}

void Tape::backward(const Tensor& root, const Tensor& grad_root) {
  // if/fail rather than require(): the message arguments are only built on failure.
  if (!root.defined()) fail("backward(): the root tensor is undefined");
  if (!root.requires_grad())
    fail("backward(): {} does not require grad (nothing was recorded)", root.describe());
  if (grad_root.shape() != root.shape())
    fail("backward(): output gradient shape {} does not match output shape {}",
         to_string(grad_root.shape()), to_string(root.shape()));
  if (root.is_leaf()) {
    const_cast<Tensor&>(root).set_grad(grad_root.clone());
    return;
  }
  if (!is_live_output(*root.impl(), epoch_))
    fail("backward(): {} comes from a graph already freed by an earlier backward()",
         root.describe());

  NoGradGuard no_grad;
  const std::int64_t start = slot_node_[static_cast<std::size_t>(root.impl()->tape_slot)];
  const TapeNode& last = nodes_[static_cast<std::size_t>(start)];
  std::vector<Tensor> grads(static_cast<std::size_t>(last.first_slot + last.outputs));
  grads[root.impl()->tape_slot] = grad_root;
  for (std::int64_t i = start; i >= 0; --i) {
    TapeNode& node = nodes_[i];
    std::vector<Tensor> input_grads;
    if (node.outputs == 1) {
      Tensor grad_output = std::move(grads[node.first_slot]);
      if (!grad_output.defined()) continue;
      check_saved_unchanged(node);
      input_grads = node.backward(grad_output);
    } else {
      std::vector<Tensor> grad_outputs(static_cast<std::size_t>(node.outputs));
      bool reached = false;
      for (std::int64_t k = 0; k < node.outputs; ++k) {
        grad_outputs[k] = std::move(grads[node.first_slot + k]);
        reached = reached || grad_outputs[k].defined();
      }
      if (!reached) continue;
      check_saved_unchanged(node);
      input_grads = node.backward_multi(grad_outputs);
    }
    if (input_grads.size() != node.input_slots.size())
      throw InternalError(fmt::format("backward of '{}' returned {} gradients for {} inputs",
                                      node.op, input_grads.size(), node.input_slots.size()));
    for (std::size_t k = 0; k < input_grads.size(); ++k) {
      const Tensor& g = input_grads[k];
      if (!g.defined()) continue;
      if (node.input_slots[k] >= 0) {
        accumulate(grads[node.input_slots[k]], g);
      } else if (node.inputs[k].defined()) {
        const Tensor& leaf = node.inputs[k];
        if (g.shape() != leaf.shape())
          throw InternalError(fmt::format("backward of '{}' gave gradient {} for input {}", node.op,
                                          to_string(g.shape()), leaf.describe()));
        Tensor existing = leaf.grad();
        leaf.set_grad(existing.defined() ? add(existing, g) : held_only_here(g) ? g : g.clone());
      }
    }
  }
  clear();
}

bool Tape::saves_storage_of(const Tensor& t) const {
  for (const TapeNode& node : nodes_)
    for (const SavedTensor& s : node.saved)
      if (s.tensor.storage() == t.storage()) return true;
  return false;
}

void backward(const Tensor& root) {
  if (!root.defined() || root.numel() != 1)
    fail("backward(): {} is not a scalar; pass an output gradient of the same shape",
         root.describe());
  Tape::current().backward(root, Tensor::ones(root.shape(), root.dtype(), root.device()));
}

void backward(const Tensor& root, const Tensor& grad_root) {
  Tape::current().backward(root, grad_root);
}

}  // namespace relpos
