#include "layers/knn_memory.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/mask.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/shape.h"
#include "autograd/ops/softmax.h"
#include "autograd/ops/top_k.h"

namespace relpos {

void KnnMemory::append(const Tensor& keys, const Tensor& values) {
  require(keys.dim() == 4 && keys.shape() == values.shape(),
          "knn memory: keys {} and values {} must be (B, H, L, D) alike", keys.describe(),
          values.describe());
  const std::int64_t rows = keys.size(0);
  if (keys_.defined()) {
    require(keys_.size(0) == rows && keys_.size(1) == keys.size(1) && keys_.size(3) == keys.size(3),
            "knn memory: holds {} but was given keys {}; the batch size must stay the same",
            keys_.describe(), keys.describe());
  }
  Tensor all_keys = keys_.defined() ? concat({keys_, keys.detach()}, 2) : keys.detach();
  Tensor all_values = values_.defined() ? concat({values_, values.detach()}, 2) : values.detach();
  if (valid_from_.empty()) valid_from_.assign(static_cast<std::size_t>(rows), 0);
  const std::int64_t total = all_keys.size(2), keep = std::min(size_, total);
  const std::int64_t dropped = total - keep;
  keys_ = slice(all_keys, 2, dropped, total).contiguous();  // (B, H, keep, D)
  values_ = slice(all_values, 2, dropped, total).contiguous();
  for (std::int64_t& first : valid_from_) first = std::max<std::int64_t>(0, first - dropped);
}

void KnnMemory::clear() {
  keys_ = Tensor();
  values_ = Tensor();
  valid_from_.clear();
}

void KnnMemory::forget_row(std::int64_t row) {
  if (valid_from_.empty()) return;  // nothing held
  require(row >= 0 && row < static_cast<std::int64_t>(valid_from_.size()),
          "knn memory: row {} is outside the batch of {} rows", row, valid_from_.size());
  valid_from_[static_cast<std::size_t>(row)] = length();
}

void KnnMemory::restore(const Tensor& keys, const Tensor& values,
                        std::vector<std::int64_t> valid_from) {
  if (!keys.defined() || keys.numel() == 0) {
    clear();
    return;
  }
  require(keys.dim() == 4 && keys.shape() == values.shape() && keys.size(2) <= size_ &&
              static_cast<std::int64_t>(valid_from.size()) == keys.size(0),
          "knn memory: cannot restore keys {}, values {} and {} row starts into a memory of {}",
          keys.describe(), values.describe(), valid_from.size(), size_);
  for (const std::int64_t first : valid_from)
    require(first >= 0 && first <= keys.size(2), "knn memory: a row start {} is outside 0..{}",
            first, keys.size(2));
  keys_ = keys.detach().contiguous();
  values_ = values.detach().contiguous();
  valid_from_ = std::move(valid_from);
}

Tensor retrieve_top_k(const Tensor& q, const Tensor& keys, const Tensor& values,
                      const Tensor& hidden, std::int64_t top_k) {
  const double inv_sqrt_d = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  const double minus_inf = -std::numeric_limits<double>::infinity();
  // One GEMM against every key: (B, H, L, D) x (B, H, D, M) -> (B, H, L, M).
  Tensor scores = matmul(q, transpose(keys, -1, -2)) * inv_sqrt_d;
  if (hidden.defined()) scores = masked_fill(scores, hidden, minus_inf);
  // The exact top-K of each query's row; the others leave the softmax.
  scores = masked_fill(scores, outside_top_k(scores, top_k), minus_inf);
  return matmul(softmax(scores, -1), values);  // (B, H, L, D)
}

KnnRetrieval::KnnRetrieval(std::int64_t n_heads, std::int64_t top_k) : top_k_(top_k) {
  require(top_k >= 1, "model.knn_memory.top_k must be >= 1, got {}", top_k);
  gate_bias_ = register_parameter("gate", Tensor::zeros({n_heads}), false);
}

Tensor KnnRetrieval::gate() const {
  return pow_scalar(exp(neg(gate_bias_)) + 1.0, -1.0);  // sigmoid(b), (H)
}

Tensor KnnRetrieval::mix(const Tensor& q, const Tensor& local, const KnnMemory& memory) const {
  if (memory.length() == 0) return local;
  const std::int64_t rows = q.size(0), length = memory.length();
  require(memory.keys().size(0) == rows,
          "knn memory: holds {} rows, but the batch has {}; the batch size must stay the same",
          memory.keys().size(0), rows);
  // hidden (B, 1, 1, M): entries of an earlier document. A row with nothing left keeps
  // `local` (has_memory 0) and retrieves, unused, from its whole memory so as to stay finite.
  Tensor hidden = Tensor::zeros({rows, 1, 1, length}, DType::u8);
  Tensor has_memory = Tensor::ones({rows, 1, 1, 1}, DType::u8);
  bool any_hidden = false;
  for (std::int64_t b = 0; b < rows; ++b) {
    const std::int64_t first = memory.valid_from()[static_cast<std::size_t>(b)];
    if (first >= length) {
      has_memory.data<std::uint8_t>()[b] = 0;
      continue;
    }
    std::fill_n(hidden.data<std::uint8_t>() + b * length, first, std::uint8_t{1});
    any_hidden = any_hidden || first > 0;
  }
  const Tensor retrieved = retrieve_top_k(q, memory.keys(), memory.values(),
                                          any_hidden ? hidden.to(q.device()) : Tensor(),
                                          top_k_);         // (B, H, L, D)
  const Tensor g = reshape(gate(), {1, q.size(1), 1, 1});  // (1, H, 1, 1)
  Tensor mixed = local + g * (retrieved - local);          // g·retrieved + (1 − g)·local
  return where(has_memory.to(q.device()), mixed, local);
}

}  // namespace relpos
