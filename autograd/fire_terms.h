#pragma once
// FIRE (Li et al. 2023, arXiv:2310.04418): a learned logit bias per head that depends on
// the query position as well as the distance,
//   b_h(i, j) = f_h(x),  x = psi(i - j) / psi(max(i, threshold)),  psi(d) = log(1 + c d),
//   f_h(x) = sum_k w2[h, k] relu(w1_k x + b1_k),
// for a query at position i (its index among the keys, layers/scaled_attention.h) and
// past keys j <= i. One MLP per layer, 1 -> hidden -> H; its output layer has no bias, as a
// constant per head cancels in the softmax (its gradient would be zero). The flash kernel evaluates
// it piece by piece, as a linear function of x between the hidden units' switches along each query
// row (autograd/cpu/flash_fire.h), the other paths through ops (autograd/ops/fire_bias.h);
// docs/relative-kernels.md has the choice and its cost.
#include "autograd/tensor.h"

namespace relpos {

struct FireTerms {
  Tensor w1, b1;        // (hidden) first layer
  Tensor w2;            // (H, hidden) second layer
  Tensor c, threshold;  // (1) each, positive (the scheme passes exp of its parameters)
  bool defined() const { return w1.defined(); }
};

}  // namespace relpos
