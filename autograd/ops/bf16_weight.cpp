#include "autograd/ops/bf16_weight.h"

namespace relpos {
namespace {

thread_local std::uint64_t roundings = 0;

}  // namespace

void keep_bf16_weight(const Tensor& w, std::shared_ptr<Storage> bits) {
  w.storage()->set_derived({std::move(bits), w.version(), w.offset(), w.numel()});
  ++roundings;
}

std::uint64_t bf16_weight_roundings() { return roundings; }

}  // namespace relpos
