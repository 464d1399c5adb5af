#include "autograd/ops/embedding.h"

#include "autograd/backend.h"
#include "autograd/ops/check.h"
#include "autograd/tape.h"

namespace relpos {
namespace {

void check_indices(const Tensor& indices, const Tensor& table) {
  const Tensor host = indices.to(Device::cpu).contiguous();
  const std::int64_t* idx = host.data<std::int64_t>();
  const std::int64_t vocab = table.shape()[0];
  for (std::int64_t i = 0; i < host.numel(); ++i)
    if (!(idx[i] >= 0 && idx[i] < vocab))
      fail("embedding: index {} at position {} is out of range for a table of shape {}", idx[i],
           position_of(i, host.shape()), to_string(table.shape()));
}

}  // namespace

Tensor embedding(const Tensor& table, const Tensor& indices) {
  check_floating(table, "embedding");
  if (!(table.dim() == 2)) fail("embedding: table must be (vocab, dim), got {}", table.describe());
  if (!(indices.defined() && indices.dtype() == DType::i64))
    fail("embedding: indices must be an i64 tensor, got {}",
         indices.defined() ? indices.describe() : std::string("undefined tensor"));
  if (!(indices.device() == table.device()))
    fail("embedding: table {} and indices {} are on different devices", table.describe(),
         indices.describe());
  check_indices(indices, table);

  Tensor tab = table.contiguous();    // (V, D)
  Tensor idx = indices.contiguous();  // (count)
  Shape out_shape = indices.shape();
  out_shape.push_back(table.shape()[1]);
  Tensor out = Tensor::empty(out_shape, table.dtype(), table.device());  // (..., D)
  if (out.numel() > 0) backend_of(out).embedding(tab, idx, out);
  if (Tape::should_record({&table})) {
    Shape table_shape = table.shape();
    DType dtype = table.dtype();
    Tape::current().record("embedding", {table}, out,
                           [idx, table_shape, dtype](const Tensor& grad) {
                             Tensor g = grad.contiguous();  // (count, D)
                             Tensor grad_table =
                                 Tensor::empty(table_shape, dtype, g.device());  // (V, D)
                             if (grad_table.numel() > 0) {
                               backend_of(g).embedding_backward(g, idx, grad_table);
                             }
                             return std::vector<Tensor>{grad_table};
                           },
                           {idx});
  }
  return out;
}

}  // namespace relpos
