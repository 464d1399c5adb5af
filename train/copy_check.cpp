#include "train/copy_check.h"

#include <algorithm>

#include "autograd/error.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/shape.h"
#include "autograd/random.h"
#include "autograd/tape.h"
#include "train/device_placement.h"

namespace relpos {

CopyBatch copy_batch(const TokenSequence& text, std::int64_t span, std::int64_t distance,
                     std::int64_t rows, Rng& rng) {
  require(span >= 2, "copy check: the span must be >= 2 tokens, got {}", span);
  require(distance >= span,
          "copy check: distance {} must be >= the span {} (the spans may not overlap)", distance,
          span);
  const auto size = static_cast<std::int64_t>(text.size());
  // The window [o, o + D) and a control span at least N away from the span [o, o + N).
  require(size >= distance + 3 * span,
          "copy check: {} validation tokens cannot hold distance {} and span {} (need {})", size,
          distance, span, distance + 3 * span);
  const std::int64_t length = distance + span - 1;  // inputs per sequence
  CopyBatch b{empty_batch(rows, length), empty_batch(rows, length)};
  std::vector<std::int64_t> sequence(static_cast<std::size_t>(distance + span));
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto o =
        static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(size - distance)));
    std::int64_t c = 0;
    do {
      c = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(size - span)));
    } while (c > o - span && c < o + span);
    text.copy(static_cast<std::size_t>(o), static_cast<std::size_t>(distance), sequence.data());
    text.copy(static_cast<std::size_t>(o), static_cast<std::size_t>(span),
              sequence.data() + distance);  // the repeat
    for (Batch* batch : {&b.repeat, &b.control}) {
      if (batch == &b.control)  // the first span replaced
        text.copy(static_cast<std::size_t>(c), static_cast<std::size_t>(span), sequence.data());
      std::int64_t* inputs = batch->inputs.data<std::int64_t>() + r * length;
      std::int64_t* targets = batch->targets.data<std::int64_t>() + r * length;
      std::copy_n(sequence.begin(), length, inputs);
      std::fill_n(targets, length, kIgnoreTarget);
      // Input position D + k − 1 predicts token k of the repeat, k = 1 .. N − 1.
      for (std::int64_t k = 1; k < span; ++k)
        targets[distance + k - 1] = sequence[static_cast<std::size_t>(distance + k)];
    }
  }
  return b;
}

namespace {

// The summed loss of a batch's scored tokens, read as one window or as segments.
double summed_loss(TransformerLM& model, const Batch& batch, const CopyReading& reading) {
  const Device device = device_of(model);
  const Tensor inputs = batch.inputs.to(device), targets = batch.targets.to(device);
  if (reading.segment == 0)
    return cross_entropy(model.forward(inputs), targets, kIgnoreTarget, Reduction::sum).item();
  std::vector<Tensor> memory;  // per layer (rows, M, d_model)
  KnnMemory knn(reading.knn_size);
  const bool has_knn = model.config().knn_memory.enabled();
  double total = 0.0;
  const std::int64_t length = inputs.size(1);
  for (std::int64_t start = 0; start < length; start += reading.segment) {
    const std::int64_t end = std::min(length, start + reading.segment);
    const Tensor logits =  // (rows, end − start, V)
        forward_segment(model, slice(inputs, 1, start, end).contiguous(), memory, reading.mem_len,
                        has_knn ? &knn : nullptr);
    total += cross_entropy(logits, slice(targets, 1, start, end).contiguous(), kIgnoreTarget,
                           Reduction::sum)
                 .item();
  }
  return total;
}

}  // namespace

std::vector<CopyCheckPoint> copy_check(TransformerLM& model, const TokenSequence& text,
                                       std::int64_t span,
                                       const std::vector<std::int64_t>& distances,
                                       std::int64_t sequences, std::int64_t rows,
                                       std::uint64_t seed, const CopyReading& reading) {
  require(sequences >= 1 && rows >= 1, "copy check: sequences {} and rows {} must be >= 1",
          sequences, rows);
  require(reading.segment >= 0 && reading.mem_len >= 0 && reading.knn_size >= 0,
          "copy check: segment, memory and kNN size must be >= 0");
  require(reading.segment > 0 || (reading.mem_len == 0 && reading.knn_size == 0),
          "copy check: a memory needs the sequences read as segments");
  require(model.config().causal, "copy check: the model is bidirectional (model.causal: false)");
  NoGradGuard no_grad;
  const bool was_training = model.training();
  model.set_training(false);
  std::vector<CopyCheckPoint> points;
  for (const std::int64_t distance : distances) {
    Rng rng(seed);  // the same sequences at every reading
    CopyCheckPoint p;
    p.distance = distance;
    p.span = span;
    p.mem_len = reading.mem_len;
    p.knn_size = reading.knn_size;
    double repeat = 0.0, control = 0.0;
    for (std::int64_t done = 0; done < sequences; done += rows) {
      const CopyBatch batch = copy_batch(text, span, distance, rows, rng);
      repeat += summed_loss(model, batch.repeat, reading);
      control += summed_loss(model, batch.control, reading);
      p.sequences += rows;
    }
    p.tokens = p.sequences * (span - 1);
    p.loss_repeat = repeat / static_cast<double>(p.tokens);
    p.loss_control = control / static_cast<double>(p.tokens);
    points.push_back(p);
  }
  model.set_training(was_training);
  return points;
}

}  // namespace relpos
