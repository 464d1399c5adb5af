#include "train/evaluate_stream.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "autograd/error.h"
#include "autograd/ops/loss.h"
#include "autograd/tape.h"
#include "data/sampler.h"
#include "train/device_placement.h"

namespace relpos {

std::vector<StreamEvalPoint> evaluate_streams(TransformerLM& model, const TokenSequence& tokens,
                                              const std::vector<std::int64_t>& lengths,
                                              const std::vector<std::int64_t>& mem_lens,
                                              std::int64_t rows, std::int64_t segments,
                                              const std::vector<std::int64_t>& knn_sizes,
                                              const Tokenizer& tokenizer) {
  NoGradGuard no_grad;
  const bool was_training = model.training();
  model.set_training(false);
  require(model.config().causal, "evaluation with memory needs a causal model");
  const Device device = device_of(model);
  const KnnMemoryConfig& knn_config = model.config().knn_memory;
  const bool has_knn = knn_config.enabled();
  require(has_knn || knn_sizes.empty(),
          "evaluation with a kNN memory: the model has no kNN layer (model.knn_memory.layer: -1)");
  const std::vector<std::int64_t> sizes = !has_knn ? std::vector<std::int64_t>{0}
                                          : knn_sizes.empty()
                                              ? std::vector<std::int64_t>{knn_config.size}
                                              : knn_sizes;
  std::vector<StreamEvalPoint> points;
  for (const std::int64_t length : lengths) {
    const std::int64_t per_row = stream_segments_per_row(tokens.size(), length, rows);
    require(per_row >= 1,
            "evaluation with memory: {} validation tokens cannot hold {} streams of one segment "
            "of {}",
            tokens.size(), rows, length);
    const std::int64_t count = std::min(per_row, segments);
    for (const std::int64_t mem_len : mem_lens) {
      require(mem_len >= 0, "evaluation memory length must be >= 0, got {}", mem_len);
      for (const std::int64_t knn_size : sizes) {
        require(knn_size >= 0, "evaluation kNN memory size must be >= 0, got {}", knn_size);
        std::vector<Tensor> memory;  // per layer (rows, M, d_model)
        KnnMemory knn(knn_size);     // (rows, H, <= S, D)
        double total = 0.0;
        std::int64_t bytes = 0;
        for (std::int64_t s = 0; s < count; ++s) {
          const Batch batch = stream_segment(tokens, length, rows, static_cast<std::uint64_t>(s));
          const std::int64_t* t = batch.targets.data<std::int64_t>();
          for (std::int64_t i = 0; i < batch.targets.numel(); ++i)
            bytes += tokenizer.byte_length(t[i]);
          const Tensor logits =  // (rows, L, V)
              forward_segment(model, batch.inputs.to(device), memory, mem_len,
                              has_knn ? &knn : nullptr);
          total +=
              cross_entropy(logits, batch.targets.to(device), kIgnoreTarget, Reduction::sum).item();
        }
        StreamEvalPoint p;
        p.length = length;
        p.mem_len = mem_len;
        p.knn_size = knn_size;
        p.tokens = count * rows * length;
        p.loss = total / static_cast<double>(p.tokens);
        p.perplexity = std::exp(p.loss);
        p.bits_per_byte =
            total / static_cast<double>(std::max<std::int64_t>(bytes, 1)) / std::numbers::ln2;
        points.push_back(p);
      }
    }
  }
  model.set_training(was_training);
  return points;
}

}  // namespace relpos
