#include "layers/position/scheme.h"

#include "autograd/error.h"
#include "layers/position/absolute.h"
#include "layers/position/relative.h"
#include "layers/position/rope.h"

namespace relpos {

std::unique_ptr<PositionScheme> make_position_scheme(const PositionConfig& c,
                                                     const ModelDims& dims, Rng& rng) {
  const std::string& s = c.scheme;
  if (s == "none") return std::make_unique<NoPosition>();
  if (s == "sinusoidal") {
    require(dims.d_model % 2 == 0, "model.position.scheme=sinusoidal needs an even d_model, got {}",
            dims.d_model);
    return std::make_unique<SinusoidalPosition>(dims.d_model);
  }
  if (s == "learned") {
    require(c.max_len >= 1, "model.position.max_len must be >= 1, got {}", c.max_len);
    return std::make_unique<LearnedPosition>(c.max_len, dims.d_model, rng);
  }
  if (s == "shaw") return std::make_unique<ShawPosition>(c, dims, rng);
  if (s == "t5") return std::make_unique<T5Position>(c, dims, rng);
  if (s == "xl") return std::make_unique<XlPosition>(c, dims, rng);
  if (s == "alibi") return std::make_unique<AlibiPosition>(dims);
  if (s == "rope") return std::make_unique<RotaryPosition>(dims.head_dim(), c.rope_base);
  fail("model.position.scheme: unknown scheme '{}' (expected none, sinusoidal, learned, shaw, t5, "
       "xl, alibi or rope)",
       s);
}

}  // namespace relpos
