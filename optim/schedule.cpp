#include "optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "autograd/error.h"

namespace relpos {

LrSchedule::LrSchedule(ScheduleKind kind, const ScheduleOptions& options)
    : kind_(kind), options_(options) {
  require(std::isfinite(options.lr) && options.lr > 0, "lr schedule: lr {} must be finite and > 0",
          options.lr);
  require(options.min_lr >= 0 && options.min_lr <= options.lr,
          "lr schedule: min_lr {} must be in [0, lr = {}]", options.min_lr, options.lr);
  require(options.warmup_steps >= 0, "lr schedule: warmup_steps {} must be >= 0",
          options.warmup_steps);
  require(options.total_steps >= 1, "lr schedule: total_steps {} must be >= 1",
          options.total_steps);
  require(options.warmup_steps <= options.total_steps,
          "lr schedule: warmup_steps {} must be <= total_steps {}", options.warmup_steps,
          options.total_steps);
}

double LrSchedule::operator()(std::int64_t step) const {
  require(step >= 0, "lr schedule: step {} must be >= 0", step);
  const auto [lr, min_lr, warmup, total] = options_;
  if (step < warmup) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  const std::int64_t decay_steps = total - warmup;
  const double progress = decay_steps <= 1
                              ? 1.0
                              : std::min(1.0, static_cast<double>(step - warmup) /
                                                  static_cast<double>(decay_steps - 1));
  switch (kind_) {
    case ScheduleKind::warmup_cosine:
      return min_lr + (lr - min_lr) * (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
    case ScheduleKind::warmup_linear:
      return lr + (min_lr - lr) * progress;
    case ScheduleKind::constant:
      break;
  }
  return lr;
}

ScheduleKind schedule_kind_from_name(std::string_view name) {
  if (name == "constant") return ScheduleKind::constant;
  if (name == "warmup_cosine") return ScheduleKind::warmup_cosine;
  if (name == "warmup_linear") return ScheduleKind::warmup_linear;
  fail("unknown lr schedule '{}'; valid schedules: constant, warmup_cosine, warmup_linear", name);
}

LrSchedule make_schedule(std::string_view name, const ScheduleOptions& options) {
  return LrSchedule(schedule_kind_from_name(name), options);
}

}  // namespace relpos
