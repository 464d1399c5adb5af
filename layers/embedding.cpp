#include "layers/embedding.h"

#include "autograd/ops/embedding.h"

namespace relpos {

Embedding::Embedding(std::int64_t vocab, std::int64_t dim, Rng& rng, bool decay) {
  table_ = register_parameter("weight", normal_init({vocab, dim}, rng, kEmbeddingInitStd), decay);
}

Tensor Embedding::forward(const Tensor& indices) const { return embedding(table_, indices); }

}  // namespace relpos
