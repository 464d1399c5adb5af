#include "autograd/ops/loss.h"

#include "autograd/backend.h"
#include "autograd/ops/check.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/reduce.h"
#include "autograd/tape.h"

namespace relpos {
namespace {

// Checks every target and returns how many are not ignored.
std::int64_t count_valid_targets(const Tensor& targets, std::int64_t classes,
                                 std::int64_t ignore_index) {
  const Tensor host = targets.to(Device::cpu).contiguous();
  const std::int64_t* t = host.data<std::int64_t>();
  std::int64_t valid = 0;
  for (std::int64_t i = 0; i < host.numel(); ++i) {
    if (t[i] == ignore_index) continue;
    require(t[i] >= 0 && t[i] < classes,
            "cross_entropy: target {} at position {} is out of range for {} classes "
            "(ignore_index is {})",
            t[i], position_of(i, host.shape()), classes, ignore_index);
    ++valid;
  }
  return valid;
}

// Per-position losses, shape targets.shape.
Tensor cross_entropy_rows(const Tensor& logits, const Tensor& targets, std::int64_t ignore_index) {
  Tensor x = logits.contiguous().detach();  // (rows, classes)
  Tensor t = targets.contiguous();          // (rows)
  const std::int64_t rows = t.numel();
  Tensor loss = Tensor::empty(targets.shape(), logits.dtype(), logits.device());  // (rows)
  Tensor lse = Tensor::empty({rows}, logits.dtype(), logits.device());            // (rows)
  if (rows > 0) backend_of(loss).cross_entropy(x, t, ignore_index, loss, lse);
  if (Tape::should_record({&logits})) {
    Tape::current().record("cross_entropy", {logits}, loss,
                           [x, t, lse, ignore_index](const Tensor& grad) {
                             Tensor g = grad.contiguous();
                             Tensor grad_logits = Tensor::empty(x.shape(), x.dtype(), x.device());
                             if (grad_logits.numel() > 0)
                               backend_of(x).cross_entropy_backward(x, t, ignore_index, lse, g,
                                                                    grad_logits);
                             return std::vector<Tensor>{grad_logits};
                           },
                           {x, t});
  }
  return loss;
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, std::int64_t ignore_index,
                     Reduction reduction) {
  check_floating(logits, "cross_entropy");
  if (!(logits.dim() >= 1))
    fail("cross_entropy: logits must have a class axis, got {}", logits.describe());
  if (!(targets.defined() && targets.dtype() == DType::i64))
    fail("cross_entropy: targets must be an i64 tensor, got {}",
         targets.defined() ? targets.describe() : std::string("undefined tensor"));
  if (!(targets.device() == logits.device()))
    fail("cross_entropy: logits {} and targets {} are on different devices", logits.describe(),
         targets.describe());
  const Shape rows_shape(logits.shape().begin(), logits.shape().end() - 1);
  if (!(targets.shape() == rows_shape))
    fail("cross_entropy: targets shape {} does not match logits shape {} without its last axis",
         to_string(targets.shape()), to_string(logits.shape()));
  const std::int64_t valid = count_valid_targets(targets, logits.size(-1), ignore_index);

  Tensor loss = cross_entropy_rows(logits, targets, ignore_index);
  switch (reduction) {
    case Reduction::none:
      return loss;
    case Reduction::sum:
      return sum(loss);
    default:
      // All targets ignored: the sum is 0, and so is the mean by our convention.
      return valid == 0 ? sum(loss) : mul_scalar(sum(loss), 1.0 / static_cast<double>(valid));
  }
}

}  // namespace relpos
