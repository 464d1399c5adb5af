#include "train/schedule.h"

#include <array>
#include <cmath>

#include "train/distributed/distributed.h"

namespace relpos {

Schedule::Schedule(const RunConfig& c)
    : steps_(c.train.steps),
      log_every_(c.train.log_every),
      eval_every_(c.train.eval_every),
      checkpoint_every_(c.train.checkpoint_every),
      deterministic_reduce_(c.train.deterministic_reduce),
      lr_(make_schedule(c.schedule.name,
                        {c.optim.lr, c.schedule.min_lr, c.schedule.warmup_steps, c.train.steps})) {}

double Schedule::lr(std::int64_t step, std::int64_t lr_halvings) const {
  return lr_(step) * std::ldexp(1.0, -static_cast<int>(lr_halvings));
}

int Schedule::stop_signal() const {
  const int signal = signals_.requested();
  std::array<double, 1> requests{signal != 0 ? 1.0 : 0.0};  // summed over the ranks
  all_reduce_sum(requests, deterministic_reduce_);
  if (signal == 0 && requests[0] > 0) return SIGTERM;  // another rank's request
  return signal;
}

}  // namespace relpos
