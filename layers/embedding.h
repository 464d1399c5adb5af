#pragma once
// Token embedding table (vocab, dim).
#include "layers/module.h"

namespace relpos {

class Embedding : public Module {
 public:
  Embedding(std::int64_t vocab, std::int64_t dim, Rng& rng, bool decay = true);
  Tensor forward(const Tensor& indices) const;  // i64 (...) -> (..., dim)
  const Tensor& table() const { return table_; }

 private:
  Tensor table_;
};

}  // namespace relpos
