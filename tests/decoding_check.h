#pragma once
// Decoding that must equal the full forward, shared by the tests of features that keep
// it exact (sliding windows, attention temperature, FIRE in a per-layer list): random
// token ids, and a model's logits by KV cache and by segments with memory.
#include <cstdint>
#include <vector>

#include "autograd/ops/shape.h"
#include "autograd/random.h"
#include "layers/transformer.h"
#include "test_helpers.h"

namespace relpos::testing {

// (batch, len) i64 ids, uniform in [0, vocab).
inline Tensor random_ids(std::int64_t batch, std::int64_t len, std::int64_t vocab, Rng& rng) {
  Tensor t = Tensor::empty({batch, len}, DType::i64);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.data<std::int64_t>()[i] = static_cast<std::int64_t>(rng.below(vocab));
  return t;
}

// `tokens` (B, 12) and the model's full forward `full` (B, 12, V): a prompt of 5 tokens
// then one token at a time through the KV cache, and two segments of 6 with a memory of
// 6, each give `full` to 2e-5 (positions count from the start of the sequence).
inline void require_decoding_equals_full(TransformerLM& model, const Tensor& tokens,
                                         const Tensor& full) {
  const std::int64_t len = tokens.size(1);
  REQUIRE(len == 12);
  DecodeState state;
  std::vector<Tensor> pieces{model.forward(slice(tokens, 1, 0, 5), state, true)};
  for (std::int64_t t = 5; t < len; ++t)
    pieces.push_back(model.forward(slice(tokens, 1, t, t + 1), state, true));
  require_close(concat(pieces, 1).to_vector(), full.to_vector(), 2e-5);
  DecodeState segments;
  const Tensor first = model.forward(slice(tokens, 1, 0, 6), segments, false, 6);
  const Tensor second = model.forward(slice(tokens, 1, 6, 12), segments, false, 6);
  require_close(concat({first, second}, 1).to_vector(), full.to_vector(), 2e-5);
}

}  // namespace relpos::testing
