#include "train/train_precision.h"

#include "autograd/bf16_support.h"
#include "autograd/error.h"

namespace relpos {

Precision train_precision(const std::string& name, const std::string& device) {
  if (name == "fp32") return Precision::fp32;
  require(name == "bf16", "train.precision must be fp32 or bf16, got '{}'", name);
  require(device == "cpu",
          "train.precision: bf16 runs on the CPU only (train.device=cpu), got train.device={}",
          device);
  const std::string why = bf16_unavailable_reason();
  require(why.empty(), "train.precision: bf16 is not available: {}; use train.precision=fp32", why);
  return Precision::bf16;
}

}  // namespace relpos
