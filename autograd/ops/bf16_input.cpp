#include "autograd/ops/bf16_input.h"

namespace relpos {
namespace {

// What the last call handed out, held weakly: neither x nor its copy is kept alive here.
struct LastRounding {
  std::weak_ptr<Storage> source;
  std::uint64_t version = 0;
  std::int64_t offset = 0;
  Shape shape;
  std::weak_ptr<Storage> bits;
};

thread_local LastRounding last;

}  // namespace

Bf16Input bf16_input(const Tensor& x) {
  const std::shared_ptr<Storage> source = last.source.lock();
  if (source == x.storage() && last.version == x.version() && last.offset == x.offset() &&
      last.shape == x.shape()) {
    if (std::shared_ptr<Storage> bits = last.bits.lock()) return {bits, true};
  }
  auto bits = std::make_shared<Storage>(static_cast<std::size_t>(x.numel()) * sizeof(std::uint16_t),
                                        x.device());
  last = {x.storage(), x.version(), x.offset(), x.shape(), bits};
  return {bits, false};
}

}  // namespace relpos
