// GPU vs CPU: embedding gather, its deterministic scatter-add backward (the same
// additions in the same order, so bit-identical), and dropout masks from the
// shared counter hash (bit-identical).
#include <catch2/catch.hpp>

#include "cuda_test_helpers.h"

using namespace relpos;
using namespace relpos::cuda_testing;

namespace {

struct EmbeddingCase {
  std::int64_t vocab, dim;
  Shape indices;
};

// Repeated indices, unused rows, a one-row table and a table that needs 17 key bits.
const EmbeddingCase kEmbeddingCases[] = {
    {50, 24, {3, 40}}, {1, 5, {7}}, {70000, 3, {500}}, {8, 1, {2, 2, 2}}, {20, 16, {0}}};

}  // namespace

TEST_CASE("embedding forward and backward are bit-identical to the CPU", "[cuda]") {
  Rng rng(51);
  for (const EmbeddingCase& c : kEmbeddingCases) {
    INFO("vocab " << c.vocab << " dim " << c.dim << " indices " << to_string(c.indices));
    Pair table = randn_pair({c.vocab, c.dim}, rng);
    Pair indices = integer_pair(c.indices, rng, 0, c.vocab - 1, DType::i64);
    const std::int64_t count = numel_of(c.indices);
    Pair out = poisoned_pair({count, c.dim});
    if (count > 0) {  // the op skips empty outputs
      cpu().embedding(table.host, indices.host, out.host);
      gpu().embedding(table.device, indices.device, out.device);
      require_identical(out.device, out.host);
    }

    Pair grad_out = randn_pair({count, c.dim}, rng);
    Pair grad_table = poisoned_pair({c.vocab, c.dim});
    cpu().embedding_backward(grad_out.host, indices.host, grad_table.host);
    gpu().embedding_backward(grad_out.device, indices.device, grad_table.device);
    require_identical(grad_table.device, grad_table.host);
  }
}

TEST_CASE("embedding backward: one hot row gathers hundreds of positions in order", "[cuda]") {
  Rng rng(52);
  const std::int64_t vocab = 6, dim = 33, count = 900;
  std::vector<double> idx(count);
  for (std::int64_t i = 0; i < count; ++i) idx[i] = i % 7 == 0 ? 5.0 : 2.0;
  Pair indices = pair_of(Tensor::from_data(idx, {count}, DType::i64));
  Pair grad_out = randn_pair({count, dim}, rng);
  Pair grad_table = poisoned_pair({vocab, dim});
  cpu().embedding_backward(grad_out.host, indices.host, grad_table.host);
  gpu().embedding_backward(grad_out.device, indices.device, grad_table.device);
  require_identical(grad_table.device, grad_table.host);
}

TEST_CASE("dropout masks are bit-identical to the CPU's", "[cuda]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const double p : {0.1, 0.5, 0.9}) {
      INFO(name_of(dtype) << " p " << p);
      Pair mask = poisoned_pair({1000, 37}, dtype);
      cpu().dropout_mask(1234, 99991, p, mask.host);
      gpu().dropout_mask(1234, 99991, p, mask.device);
      require_identical(mask.device, mask.host);
    }
  }
}
