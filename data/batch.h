#pragma once
// A batch of token windows for a language model.
#include <cstdint>

#include "autograd/tensor.h"

namespace relpos {

// Target value for a position that is not scored (cross_entropy's default ignore_index).
inline constexpr std::int64_t kIgnoreTarget = -100;

struct Batch {
  Tensor inputs;   // i64 (B, L): token ids fed to the model
  Tensor targets;  // i64 (B, L): token to predict at each position, or kIgnoreTarget
  // Stream order only: every row begins its stream here (the first segment, or the
  // text starting over), so memory of earlier segments belongs to no row's past.
  bool starts_streams = false;
};

// A batch of `rows` × `seq_len` i64 tensors on the CPU, left uninitialised.
inline Batch empty_batch(std::int64_t rows, std::int64_t seq_len) {
  return {Tensor::empty({rows, seq_len}, DType::i64), Tensor::empty({rows, seq_len}, DType::i64)};
}

}  // namespace relpos
