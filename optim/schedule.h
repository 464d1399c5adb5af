#pragma once
// Learning-rate schedules: lr(step) for step = 0, 1, ..., total_steps - 1.
// With W = warmup_steps, T = total_steps, D = T - W (the decay steps):
//   warmup, step < W:     lr * (step + 1) / W          (reaches lr at step W - 1)
//   after warmup, step >= W, with progress = (step - W) / (D - 1), or 1 when
//   D == 1, clamped to at most 1 (steps past the end stay at the final value):
//     constant:       lr
//     warmup_cosine:  min_lr + (lr - min_lr) * (1 + cos(pi * progress)) / 2
//     warmup_linear:  lr + (min_lr - lr) * progress
// So the decaying schedules give lr at step W and min_lr at step T - 1.
#include <cstdint>
#include <string>
#include <string_view>

namespace relpos {

enum class ScheduleKind { constant, warmup_cosine, warmup_linear };

struct ScheduleOptions {
  double lr = 0.0;      // peak learning rate, > 0
  double min_lr = 0.0;  // final learning rate of the decaying schedules, in [0, lr]
  std::int64_t warmup_steps = 0;
  std::int64_t total_steps = 1;  // >= 1 and >= warmup_steps
};

class LrSchedule {
 public:
  // Throws a UsageError naming the option on invalid options.
  LrSchedule(ScheduleKind kind, const ScheduleOptions& options);
  double operator()(std::int64_t step) const;  // step >= 0
  ScheduleKind kind() const { return kind_; }
  const ScheduleOptions& options() const { return options_; }

 private:
  ScheduleKind kind_;
  ScheduleOptions options_;
};

// "constant", "warmup_cosine" or "warmup_linear"; a UsageError lists the valid
// names otherwise.
ScheduleKind schedule_kind_from_name(std::string_view name);
LrSchedule make_schedule(std::string_view name, const ScheduleOptions& options);

}  // namespace relpos
