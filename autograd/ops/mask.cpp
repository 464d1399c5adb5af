#include "autograd/ops/mask.h"

#include "autograd/backend.h"
#include "autograd/ops/check.h"
#include "autograd/ops/elementwise.h"
#include "autograd/tape.h"

namespace relpos {
namespace {

void check_mask(const Tensor& mask, const Tensor& like, const char* op) {
  if (!(mask.defined() && mask.dtype() == DType::u8))
    fail("{}: mask must be a u8 tensor, got {}", op,
         mask.defined() ? mask.describe() : std::string("undefined tensor"));
  if (!(mask.device() == like.device()))
    fail("{}: mask {} and input {} are on different devices", op, mask.describe(), like.describe());
}

}  // namespace

Tensor where(const Tensor& mask, const Tensor& a, const Tensor& b) {
  check_same_kind(a, b, "where");
  check_mask(mask, a, "where");
  const Shape shape =
      broadcast_shapes(broadcast_shapes(mask.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  if (out.numel() > 0)
    backend_of(out).where(broadcast_view(mask, shape), broadcast_view(a, shape),
                          broadcast_view(b, shape), out);
  if (Tape::should_record({&a, &b})) {
    Tensor m = mask.detach();
    Shape shape_a = a.shape(), shape_b = b.shape();
    const bool need_a = a.requires_grad(), need_b = b.requires_grad();
    Tape::current().record(
        "where", {a, b}, out,
        [m, shape_a, shape_b, need_a, need_b](const Tensor& g) {
          Tensor zero = Tensor::zeros({}, g.dtype(), g.device());  // broadcast scalar
          return std::vector<Tensor>{need_a ? sum_to(where(m, g, zero), shape_a) : Tensor(),
                                     need_b ? sum_to(where(m, zero, g), shape_b) : Tensor()};
        },
        {m});
  }
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  check_floating(x, "masked_fill");
  check_mask(mask, x, "masked_fill");
  if (!(broadcast_shapes(x.shape(), mask.shape(), "masked_fill") == x.shape()))
    fail("masked_fill: mask of shape {} cannot be broadcast to the input shape {}",
         to_string(mask.shape()), to_string(x.shape()));
  return where(mask, Tensor::full({}, value, x.dtype(), x.device()), x);
}

Tensor causal_mask(std::int64_t q_len, std::int64_t k_len, Device device) {
  require(q_len >= 0 && k_len >= 0, "causal_mask: negative length (q_len {}, k_len {})", q_len,
          k_len);
  require(q_len <= k_len,
          "causal_mask: q_len {} exceeds k_len {}; the first queries would see no key", q_len,
          k_len);
  Tensor mask = Tensor::empty({q_len, k_len}, DType::u8);  // (q_len, k_len)
  auto* p = mask.data<std::uint8_t>();
  const std::int64_t shift = k_len - q_len;  // absolute position of query 0
  for (std::int64_t i = 0; i < q_len; ++i)
    for (std::int64_t j = 0; j < k_len; ++j) p[i * k_len + j] = j > i + shift ? 1 : 0;
  return mask.to(device);
}

Tensor chunk_mask(std::int64_t q_len, std::int64_t k_len, const AttentionChunk& chunk,
                  Device device) {
  require(q_len >= 0 && q_len <= k_len, "chunk_mask: need 0 <= q_len {} <= k_len {}", q_len, k_len);
  require(chunk.banded(), "chunk_mask: chunk size {} or window {} must be positive", chunk.size,
          chunk.window);
  Tensor mask = Tensor::empty({q_len, k_len}, DType::u8);  // (q_len, k_len)
  auto* p = mask.data<std::uint8_t>();
  for (std::int64_t i = 0; i < q_len; ++i) {
    const std::int64_t pos = k_len - q_len + i;
    const std::int64_t begin = chunk.key_begin(pos), end = chunk.key_end(pos);
    for (std::int64_t j = 0; j < k_len; ++j) p[i * k_len + j] = j < begin || j >= end ? 1 : 0;
  }
  return mask.to(device);
}

}  // namespace relpos
