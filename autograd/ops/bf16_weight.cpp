#include "autograd/ops/bf16_weight.h"

namespace relpos {
namespace {

thread_local std::uint64_t roundings = 0;

}  // namespace

std::shared_ptr<Storage> find_bf16_weight(const Tensor& w) {
  const Storage::Derived& d = w.storage()->derived();
  if (!d.block || d.version != w.version() || d.offset != w.offset() || d.rows != w.size(0) ||
      d.cols != w.size(1))
    return nullptr;
  return d.block;
}

void keep_bf16_weight(const Tensor& w, std::shared_ptr<Storage> bits) {
  w.storage()->set_derived({std::move(bits), w.version(), w.offset(), w.size(0), w.size(1)});
  ++roundings;
}

std::uint64_t bf16_weight_roundings() { return roundings; }

}  // namespace relpos
