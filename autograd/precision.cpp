#include "autograd/precision.h"

namespace relpos {
namespace {
thread_local Precision t_precision = Precision::fp32;
}  // namespace

Precision current_precision() { return t_precision; }

PrecisionScope::PrecisionScope(Precision p) : previous_(t_precision) { t_precision = p; }

PrecisionScope::~PrecisionScope() { t_precision = previous_; }

}  // namespace relpos
