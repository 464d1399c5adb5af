#include "train/sample.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "autograd/error.h"
#include "autograd/ops/shape.h"
#include "autograd/random.h"
#include "autograd/tape.h"
#include "train/device_placement.h"

namespace relpos {
namespace {

// (1, length): the tokens, then their last one repeated up to `length`.
Tensor as_batch(const std::vector<std::int64_t>& tokens, Device device, std::int64_t length = 0) {
  length = std::max(length, static_cast<std::int64_t>(tokens.size()));
  Tensor t = Tensor::empty({1, length}, DType::i64);
  std::copy(tokens.begin(), tokens.end(), t.data<std::int64_t>());
  std::fill(t.data<std::int64_t>() + tokens.size(), t.data<std::int64_t>() + length, tokens.back());
  return t.to(device);
}

// Draws the next token from the logits of the last position.
std::int64_t draw(const std::vector<double>& logits, const SampleOptions& o, Rng& rng) {
  const auto vocab = static_cast<std::int64_t>(logits.size());
  std::vector<std::int64_t> order(static_cast<std::size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  // Highest logit first; ties broken by token id so the choice is deterministic.
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t a, std::int64_t b) { return logits[a] > logits[b]; });
  if (o.temperature == 0.0) return order.front();
  const std::int64_t keep = o.top_k > 0 ? std::min(o.top_k, vocab) : vocab;
  std::vector<double> weights(static_cast<std::size_t>(keep));
  for (std::int64_t i = 0; i < keep; ++i)
    weights[i] = std::exp((logits[order[i]] - logits[order[0]]) / o.temperature);
  double u = rng.uniform() * std::accumulate(weights.begin(), weights.end(), 0.0);
  for (std::int64_t i = 0; i < keep; ++i) {
    u -= weights[i];
    if (u < 0) return order[i];
  }
  return order[keep - 1];
}

// (1, L, V) -> position `at`'s V logits.
std::vector<double> row_at(const Tensor& logits, std::int64_t at) {
  return slice(logits, 1, at, at + 1).to_vector();
}

}  // namespace

std::int64_t recompute_length(const TransformerLM& model, std::int64_t length) {
  if (model.positions_depend_on_length()) return length;
  const std::int64_t padded = (length + kRecomputeBucket - 1) / kRecomputeBucket * kRecomputeBucket;
  const std::int64_t limit = model.max_positions();
  return limit > 0 && padded > limit ? std::max(limit, length) : padded;
}

std::vector<std::int64_t> generate(TransformerLM& model, const std::vector<std::int64_t>& prompt,
                                   const SampleOptions& o,
                                   const std::function<void(std::int64_t)>& on_token) {
  require(model.config().causal,
          "sample: sampling needs a causal model (model.causal: true); this one is bidirectional "
          "(model.causal: false), trained to fill in masked tokens");
  require(!prompt.empty(), "sample: the prompt is empty");
  require(o.temperature >= 0.0, "sample: --temperature must be >= 0, got {}", o.temperature);
  require(o.top_k >= 0, "sample: --top-k must be >= 0, got {}", o.top_k);
  require(o.tokens >= 0 && o.tokens <= kMaxSampleTokens,
          "sample: --tokens must be in [0, {}], got {}", kMaxSampleTokens, o.tokens);
  NoGradGuard no_grad;
  model.set_training(false);
  Rng rng(o.seed);
  std::vector<std::int64_t> context = prompt, generated;
  DecodeState state;
  const Device device = device_of(model);
  // A rotation that depends on the length (dynamic NTK) leaves nothing to cache.
  const bool use_cache = o.use_cache && !model.positions_depend_on_length();
  // Recomputing, the context is padded (recompute_length): the logits of its last real
  // position are read.
  const auto recompute = [&] {
    return model.forward(as_batch(
        context, device, recompute_length(model, static_cast<std::int64_t>(context.size()))));
  };
  Tensor logits = use_cache ? model.forward(as_batch(prompt, device), state, true) : recompute();
  for (std::int64_t n = 0; n < o.tokens; ++n) {
    const auto last =
        use_cache ? logits.size(1) - 1 : static_cast<std::int64_t>(context.size()) - 1;
    const std::vector<double> row = row_at(logits, last);
    require(std::all_of(row.begin(), row.end(), [](double v) { return std::isfinite(v); }),
            "sample: the model's logits are not finite at generated token {} (its weights "
            "overflow); nothing sensible can be drawn",
            n);
    const std::int64_t next = draw(row, o, rng);
    generated.push_back(next);
    if (on_token) on_token(next);
    context.push_back(next);
    if (n + 1 == o.tokens) break;
    logits = use_cache ? model.forward(as_batch({next}, device), state, true) : recompute();
  }
  return generated;
}

}  // namespace relpos
