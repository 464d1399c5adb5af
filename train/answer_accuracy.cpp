#include "train/answer_accuracy.h"

#include <limits>

#include "autograd/error.h"
#include "data/batch.h"

namespace relpos {

void AnswerCounts::add(const AnswerCounts& other) {
  correct += other.correct;
  scored += other.scored;
  exact += other.exact;
  rows += other.rows;
}

double AnswerCounts::accuracy() const {
  if (scored == 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(correct) / static_cast<double>(scored);
}

double AnswerCounts::exact_match() const {
  if (rows == 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(exact) / static_cast<double>(rows);
}

AnswerCounts count_answers(const Tensor& logits, const Tensor& targets) {
  require(logits.dim() == 3 && targets.dim() == 2 && logits.size(0) == targets.size(0) &&
              logits.size(1) == targets.size(1),
          "count_answers: logits (B, L, V) and targets (B, L) disagree: {} and {}",
          logits.describe(), targets.describe());
  const Tensor host = logits.to(Device::cpu).to(DType::f32).contiguous();  // (B, L, V)
  const Tensor target_host = targets.to(Device::cpu).contiguous();         // (B, L)
  const std::int64_t rows = host.size(0), len = host.size(1), vocab = host.size(2);
  const float* l = host.data<float>();
  const std::int64_t* t = target_host.data<std::int64_t>();
  AnswerCounts counts;
  for (std::int64_t b = 0; b < rows; ++b) {
    std::int64_t row_scored = 0, row_correct = 0;
    for (std::int64_t p = 0; p < len; ++p) {
      const std::int64_t target = t[b * len + p];
      if (target == kIgnoreTarget) continue;
      const float* v = l + (b * len + p) * vocab;
      std::int64_t best = 0;
      for (std::int64_t c = 1; c < vocab; ++c)
        if (v[c] > v[best]) best = c;
      ++row_scored;
      row_correct += best == target;
    }
    counts.scored += row_scored;
    counts.correct += row_correct;
    if (row_scored > 0) {
      ++counts.rows;
      counts.exact += row_correct == row_scored;
    }
  }
  return counts;
}

}  // namespace relpos
