#include "train/evaluate.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

#include "autograd/error.h"
#include "autograd/ops/loss.h"
#include "autograd/tape.h"
#include "train/answer_accuracy.h"
#include "train/device_placement.h"
#include "train/distributed/distributed.h"

namespace relpos {

std::vector<EvalPoint> evaluate(TransformerLM& model, const DataSource& data,
                                const std::vector<std::int64_t>& lengths, std::int64_t batches,
                                const std::function<bool()>& stop) {
  NoGradGuard no_grad;
  const bool was_training = model.training();
  model.set_training(false);
  const Device device = device_of(model);
  const bool has_answers = task_from_name(data.config().source).has_value();
  std::vector<EvalPoint> points;
  for (std::int64_t length : lengths) {
    double total = 0.0;
    std::int64_t scored = 0, bytes = 0;
    const Tokenizer& tokenizer = data.tokenizer();
    AnswerCounts answers;
    const std::vector<Batch> all = data.eval_batches(length, batches);
    // Under mpirun, rank r evaluates batches r, r + N, ...; the sums are then reduced.
    for (std::size_t i = static_cast<std::size_t>(rank()); i < all.size();
         i += static_cast<std::size_t>(world_size())) {
      if (stop && world_size() == 1 && stop()) {
        model.set_training(was_training);
        return {};
      }
      const Batch& batch = all[i];
      const Tensor logits = model.forward(batch.inputs.to(device));  // (B, L, V)
      total +=
          cross_entropy(logits, batch.targets.to(device), kIgnoreTarget, Reduction::sum).item();
      const std::int64_t* t = batch.targets.data<std::int64_t>();
      for (std::int64_t i = 0; i < batch.targets.numel(); ++i) {
        if (t[i] == kIgnoreTarget) continue;
        ++scored;
        bytes += tokenizer.byte_length(t[i]);
      }
      if (has_answers) answers.add(count_answers(logits, batch.targets));
    }
    if (world_size() > 1) {
      std::array<double, 7> sums{total,
                                 static_cast<double>(scored),
                                 static_cast<double>(bytes),
                                 static_cast<double>(answers.correct),
                                 static_cast<double>(answers.scored),
                                 static_cast<double>(answers.exact),
                                 static_cast<double>(answers.rows)};
      all_reduce_sum(sums, false);
      total = sums[0];
      scored = static_cast<std::int64_t>(sums[1]);
      bytes = static_cast<std::int64_t>(sums[2]);
      answers = {static_cast<std::int64_t>(sums[3]), static_cast<std::int64_t>(sums[4]),
                 static_cast<std::int64_t>(sums[5]), static_cast<std::int64_t>(sums[6])};
    }
    require(scored > 0, "evaluation at length {}: the validation data has no scored tokens",
            length);
    EvalPoint p;
    p.length = length;
    p.loss = total / static_cast<double>(scored);
    p.perplexity = std::exp(p.loss);
    // Per byte of text: the scored tokens' bytes (one each for the byte tokenizer).
    p.bits_per_byte =
        total / static_cast<double>(std::max<std::int64_t>(bytes, 1)) / std::numbers::ln2;
    p.bytes = bytes;
    p.tokens = scored;
    if (has_answers) {
      p.accuracy = answers.accuracy();
      p.exact_match = answers.exact_match();
    }
    points.push_back(p);
  }
  model.set_training(was_training);
  return points;
}

}  // namespace relpos
