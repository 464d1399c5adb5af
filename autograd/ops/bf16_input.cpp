#include "autograd/ops/bf16_input.h"

namespace relpos {

std::shared_ptr<Storage> find_bf16_input(const Tensor& x) {
  const Storage::Derived& d = x.storage()->derived();
  if (!d.block || d.version != x.version() || d.offset != x.offset() || d.numel != x.numel())
    return nullptr;
  return d.block;
}

void release_bf16_input(const Tensor& x) {
  if (find_bf16_input(x)) x.storage()->set_derived({});
}

Bf16Input bf16_input(const Tensor& x) {
  if (std::shared_ptr<Storage> bits = find_bf16_input(x)) return {bits, true};
  auto bits = std::make_shared<Storage>(static_cast<std::size_t>(x.numel()) * sizeof(std::uint16_t),
                                        x.device());
  x.storage()->set_derived({bits, x.version(), x.offset(), x.numel()});
  return {bits, false};
}

}  // namespace relpos
