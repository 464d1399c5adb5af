// none: no position information; attention sees the tokens as a set (the causal mask
// alone orders them).
#include "layers/position/registry.h"

namespace relpos {
namespace {

class NoPosition final : public PositionScheme {};

const bool registered = register_position_scheme({
    .name = "none",
    .order = 0,
    .build = [](const PositionConfig&, const ModelDims&, Rng&) -> std::unique_ptr<PositionScheme> {
      return std::make_unique<NoPosition>();
    },
    .table_index = [](const PositionConfig&, std::int64_t rel) { return rel; },
    .caption = [](const PositionConfig&) { return std::string("relative position j - i"); },
});

}  // namespace
}  // namespace relpos
