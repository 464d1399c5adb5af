#include "train/evaluate.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <numbers>

#include "autograd/error.h"
#include "autograd/ops/loss.h"
#include "autograd/tape.h"
#include "train/answer_accuracy.h"
#include "train/device_placement.h"
#include "train/distributed/distributed.h"

namespace relpos {

std::string progress_text(const EvalProgress& p) {
  const auto seconds = static_cast<std::int64_t>(std::llround(p.seconds));
  if (p.batches_done >= p.batches)
    return fmt::format("eval at {}: {} batches, {}s", p.length, p.batches, seconds);
  return fmt::format("eval at {}: {}/{} batches, {}s", p.length, p.batches_done, p.batches,
                     seconds);
}

std::vector<EvalPoint> evaluate(TransformerLM& model, const DataSource& data,
                                const std::vector<std::int64_t>& lengths, const EvalAmount& amount,
                                const std::function<bool()>& stop,
                                const std::function<void(const EvalProgress&)>& progress) {
  using Clock = std::chrono::steady_clock;
  NoGradGuard no_grad;
  const bool was_training = model.training();
  model.set_training(false);
  const Device device = device_of(model);
  const bool has_answers = task_from_name(data.config().source).has_value();
  require(!amount.by_position || world_size() == 1,
          "the loss by position is evaluated in a single process, not under mpirun");
  std::vector<EvalPoint> points;
  for (std::int64_t length : lengths) {
    double total = 0.0;
    std::int64_t scored = 0, bytes = 0, sequences = 0;
    const Tokenizer& tokenizer = data.tokenizer();
    AnswerCounts answers;
    const std::int64_t batches =
        amount.batches > 0 ? amount.batches
                           : data.whole_eval_batches(length, amount.sequences, amount.stride);
    const std::vector<Batch> all = data.eval_batches(length, batches, amount.stride);
    std::vector<double> position_loss(amount.by_position ? length : 0, 0.0);
    std::vector<std::int64_t> position_tokens(position_loss.size(), 0);
    const Clock::time_point start = Clock::now();
    Clock::time_point told = start;
    // Under mpirun, rank r evaluates batches r, r + N, ...; the sums are then reduced.
    for (std::size_t i = static_cast<std::size_t>(rank()); i < all.size();
         i += static_cast<std::size_t>(world_size())) {
      if (stop && world_size() == 1 && stop()) {
        model.set_training(was_training);
        return {};
      }
      const Batch& batch = all[i];
      const Tensor targets = batch.targets.to(device);
      const Tensor logits = model.forward(batch.inputs.to(device));  // (B, L, V)
      total += cross_entropy(logits, targets, kIgnoreTarget, Reduction::sum).item();
      const std::int64_t* t = batch.targets.data<std::int64_t>();
      for (std::int64_t j = 0; j < batch.targets.numel(); ++j) {
        if (t[j] == kIgnoreTarget) continue;
        ++scored;
        bytes += tokenizer.byte_length(t[j]);
      }
      sequences += batch.targets.size(0);
      if (amount.by_position) {
        const std::vector<double> losses =  // (B, L), 0 where not scored
            cross_entropy(logits, targets, kIgnoreTarget, Reduction::none).to_vector();
        for (std::int64_t j = 0; j < batch.targets.numel(); ++j) {
          if (t[j] == kIgnoreTarget) continue;
          const auto position = static_cast<std::size_t>(j % length);
          position_loss[position] += losses[static_cast<std::size_t>(j)];
          ++position_tokens[position];
        }
      }
      if (has_answers) answers.add(count_answers(logits, batch.targets));
      const Clock::time_point now = Clock::now();
      if (progress && now - told > std::chrono::seconds(10) && i + 1 < all.size()) {
        told = now;
        progress({length, static_cast<std::int64_t>(i + 1), static_cast<std::int64_t>(all.size()),
                  std::chrono::duration<double>(now - start).count()});
      }
    }
    if (progress)
      progress({length, static_cast<std::int64_t>(all.size()),
                static_cast<std::int64_t>(all.size()),
                std::chrono::duration<double>(Clock::now() - start).count()});
    if (world_size() > 1) {
      std::array<double, 8> sums{total,
                                 static_cast<double>(scored),
                                 static_cast<double>(bytes),
                                 static_cast<double>(answers.correct),
                                 static_cast<double>(answers.scored),
                                 static_cast<double>(answers.exact),
                                 static_cast<double>(answers.rows),
                                 static_cast<double>(sequences)};
      all_reduce_sum(sums, false);
      total = sums[0];
      scored = static_cast<std::int64_t>(sums[1]);
      bytes = static_cast<std::int64_t>(sums[2]);
      answers = {static_cast<std::int64_t>(sums[3]), static_cast<std::int64_t>(sums[4]),
                 static_cast<std::int64_t>(sums[5]), static_cast<std::int64_t>(sums[6])};
      sequences = static_cast<std::int64_t>(sums[7]);
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
    p.sequences = sequences;
    for (std::size_t k = 0; k < position_loss.size(); ++k)
      position_loss[k] /= static_cast<double>(std::max<std::int64_t>(position_tokens[k], 1));
    p.loss_by_position = std::move(position_loss);
    p.tokens_by_position = std::move(position_tokens);
    points.push_back(p);
  }
  model.set_training(was_training);
  return points;
}

}  // namespace relpos
