#include "train/divergence.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "train/distributed/distributed.h"
#include "train/store/checkpoint.h"

namespace relpos {
namespace {

bool all_finite(const Tensor& tensor) {
  if (!is_floating(tensor.dtype())) return true;
  // Scanned in place on the CPU; a device tensor is copied over first.
  const Tensor host =
      tensor.device() == Device::cpu ? tensor.contiguous() : tensor.to(Device::cpu).contiguous();
  return dispatch_floating(host.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* data = host.data<T>();
    return std::all_of(data, data + host.numel(), [](T x) { return std::isfinite(x); });
  });
}

}  // namespace

std::optional<std::string> first_non_finite(const std::map<std::string, Tensor>& tensors) {
  for (const auto& [name, tensor] : tensors)
    if (!all_finite(tensor)) return name;
  return std::nullopt;
}

Divergence::Divergence(RunState& run, RunOutput& output) : run_(run), output_(output) {
  if (!run.resumed_from.empty()) last_good_ = run.resumed_from;
}

std::optional<std::string> Divergence::in_step(const StepResult& step) const {
  if (std::isfinite(step.loss) && std::isfinite(step.grad_norm)) return std::nullopt;
  return fmt::format("loss {}, gradient norm {}", step.loss, step.grad_norm);
}

std::optional<std::string> Divergence::in_update(const StepResult& step) const {
  const auto bad = first_non_finite(parameter_map(*run_.model));
  if (!bad) return std::nullopt;
  return fmt::format("the update made {} non-finite (loss {}, gradient norm {})", *bad, step.loss,
                     step.grad_norm);
}

bool Divergence::save_or_roll_back() {
  const Checkpoint state = snapshot(run_);
  std::optional<std::string> bad = first_non_finite(state.params);
  if (!bad) bad = first_non_finite(state.optim);
  if (bad) {
    roll_back(run_.step, fmt::format("{} is not finite, so it cannot be saved", *bad));
    return false;
  }
  last_good_ = output_.save_checkpoint(state, run_.step);
  return true;
}

void Divergence::roll_back(std::int64_t step, const std::string& what) {
  const RunConfig& c = run_.config;
  const bool rollback = c.train.on_divergence == "rollback";
  // Every rank reaches this alike: the loss, the norm and the parameters are global.
  if (!rollback || !last_good_ || run_.lr_halvings >= c.train.max_rollbacks)
    fail_everywhere(
        "training diverged at step {}: {}{}; lower optim.lr or raise optim.grad_clip{}. {}", step,
        what,
        rollback ? fmt::format(" (after {} rollbacks, train.max_rollbacks={})", run_.lr_halvings,
                               c.train.max_rollbacks)
                 : "",
        rollback ? "" : ", or set train.on_divergence=rollback",
        last_good_ ? fmt::format("The last good checkpoint is {}", last_good_->string())
                   : fmt::format("No good checkpoint of this run exists yet (in {})",
                                 output_.checkpoints().string()));
  const std::int64_t halvings = run_.lr_halvings + 1;
  restore_training_state(run_, load_checkpoint(*last_good_), *last_good_);
  run_.lr_halvings = halvings;
  const double scale = std::ldexp(1.0, -static_cast<int>(halvings));
  output_.rewind_metrics(run_.step);
  output_.record({{"event", "rollback"},
                  {"step", run_.step},
                  {"diverged_at", step},
                  {"reason", what},
                  {"lr_scale", scale},
                  {"rollback", halvings},
                  {"max_rollbacks", c.train.max_rollbacks}});
  output_.say(fmt::format(
      "relpos: training diverged at step {} ({}); rolled back to {} (step {}) with the learning "
      "rate scaled by {} (rollback {} of {})",
      step, what, last_good_->string(), run_.step, scale, halvings, c.train.max_rollbacks));
}

}  // namespace relpos
