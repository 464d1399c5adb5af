#include "train/train_step.h"

#include <fmt/format.h>

#include <array>
#include <limits>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/loss.h"
#include "autograd/tape.h"
#include "optim/clip.h"
#include "train/distributed/distributed.h"
#include "train/dynamic_chunk.h"

namespace relpos {

TrainStep::TrainStep(RunState& run) : run_(run), world_(world_size()) {
  const RunConfig& c = run.config;
  if (c.data.batch_size % world_ != 0)
    fail_everywhere(
        "data.batch_size: {} is not a multiple of the {} MPI ranks (each rank trains on "
        "batch_size / ranks rows of every batch)",
        c.data.batch_size, world_);
  if (world_ > 1 && c.train.mem_len > 0)
    fail_everywhere(
        "train.mem_len={}: segment-recurrent training runs in one process, not under mpirun "
        "({} ranks); set train.mem_len: 0 or run without mpirun",
        c.train.mem_len, world_);
  if (world_ > 1 && c.model.knn_memory.enabled())
    fail_everywhere(
        "model.knn_memory.layer={}: training with a kNN memory runs in one process, not under "
        "mpirun ({} ranks); set model.knn_memory.layer: -1 or run without mpirun",
        c.model.knn_memory.layer, world_);
  if (world_ > 1) all_reduce_.emplace(run.model->parameters(), c.train.deterministic_reduce);
}

void TrainStep::add_micro_batch(std::int64_t micro, StepResult& result) {
  const RunConfig& c = run_.config;
  TransformerLM& model = *run_.model;
  const Batch batch = run_.data->next_train();  // the global batch, (B, L)
  if (c.model.attention_chunk.dynamic)
    model.set_attention_chunk_size(
        dynamic_chunk_size(c.train.seed, run_.step, micro, c.model.attention_chunk.size));
  Tensor loss;
  const PrecisionScope precision(run_.precision);  // the backward repeats the forward's
  if (world_ == 1) {
    if (batch.starts_streams) {  // the rows' texts start over: no earlier text to recall
      run_.memory.clear();
      run_.knn_memory.clear();
    }
    const Tensor logits =  // (B, L, V)
        forward_segment(model, batch.inputs.to(run_.device), run_.memory, c.train.mem_len,
                        c.model.knn_memory.enabled() ? &run_.knn_memory : nullptr);
    loss = cross_entropy(logits, batch.targets.to(run_.device), kIgnoreTarget);
  } else {
    // This rank's rows, (B/N, L): its summed loss over the global batch's scored
    // targets, so that the ranks' losses (and gradients) add up to the global mean.
    const Batch mine = rank_rows(batch, rank(), world_);
    const Tensor logits = model.forward(mine.inputs.to(run_.device));  // (B/N, L, V)
    loss = cross_entropy(logits, mine.targets.to(run_.device), kIgnoreTarget, Reduction::sum) *
           (1.0 / static_cast<double>(std::max<std::int64_t>(1, scored_targets(batch))));
  }
  if (c.optim.grad_accum > 1) loss = loss * (1.0 / static_cast<double>(c.optim.grad_accum));
  result.loss += loss.item();
  backward(loss);
  result.tokens += batch.inputs.numel();
  run_.tokens_seen += batch.inputs.numel();
}

StepResult TrainStep::compute() {
  const RunConfig& c = run_.config;
  run_.optimizer->zero_grad();
  run_.model->set_dropout_seed(mix64(c.train.seed, static_cast<std::uint64_t>(run_.step) + 3));
  StepResult result;
  for (std::int64_t micro = 0; micro < c.optim.grad_accum; ++micro) add_micro_batch(micro, result);
  run_.model->set_attention_chunk_size(c.model.attention_chunk.size);  // evaluation's chunks
  if (all_reduce_) {
    result.all_reduce_seconds = all_reduce_->sum(run_.optimizer->parameters());
    std::array<double, 1> loss{result.loss};
    all_reduce_sum(loss, c.train.deterministic_reduce);
    result.loss = loss[0];
  }
  // With a bound no norm reaches, clip_grad_norm only measures.
  const double bound =
      c.optim.grad_clip > 0 ? c.optim.grad_clip : std::numeric_limits<double>::max();
  result.grad_norm = clip_grad_norm(run_.optimizer->parameters(), bound);
  return result;
}

std::optional<std::string> TrainStep::confirm_same_state() const {
  if (world_ == 1) return std::nullopt;
  const Checkpoint state = snapshot(run_);
  std::uint64_t hash = state_hash(state.params);
  hash ^= state_hash(state.optim) * 31;
  hash = require_same_state_on_all_ranks(hash);
  return fmt::format(
      "relpos: all {} ranks hold the same parameters and optimizer state (hash {:#018x})", world_,
      hash);
}

}  // namespace relpos
