#pragma once
// The one place where relpos depends on oneDNN's major version: making a matmul or an
// inner-product primitive.
// Debian 12's libdnnl-dev is oneDNN 2.6 (the default build); RELPOS_ONEDNN_PREFIX builds
// against a oneDNN 3.x instead (tools/install-onednn3.sh, bench/results/onednn3.md).
// oneDNN 3 dropped the operation descriptor (matmul::desc) and the output scales that 2.x
// applied alpha with; there alpha is an eltwise_linear post-op, applied before the sum.
// Only this file and the rest of the 2.x/3.x-common API (memory descriptors, engine,
// stream, execute, reorder) are used by relpos's code and benchmarks.
#include <dnnl.hpp>

namespace relpos::cpu {

// C = alpha·op(A)·op(B) + beta·C as one primitive: a, b, c describe the operands as stored
// (types and strides), alpha and beta apply to the f32 result.
inline dnnl::matmul make_onednn_matmul(const dnnl::engine& engine, const dnnl::memory::desc& a,
                                       const dnnl::memory::desc& b, const dnnl::memory::desc& c,
                                       float alpha = 1.f, float beta = 0.f) {
  dnnl::primitive_attr attr;
  dnnl::post_ops ops;
#if DNNL_VERSION_MAJOR >= 3
  if (alpha != 1.f) ops.append_eltwise(dnnl::algorithm::eltwise_linear, alpha, 0.f);
#else
  if (alpha != 1.f) attr.set_output_scales(0, {alpha});
#endif
  if (beta != 0.f) ops.append_sum(beta);
  if (ops.len() > 0) attr.set_post_ops(ops);
#if DNNL_VERSION_MAJOR >= 3
  return dnnl::matmul(dnnl::matmul::primitive_desc(engine, a, b, c, attr));
#else
  return dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, engine));
#endif
}

// C (m, n) = A (m, k) · Wᵀ + beta·C as oneDNN's inner product (forward, no bias): a is A
// as stored (dense rows), c is C, w_any is W (n, k) with format_tag::any, so that the
// primitive picks its blocked weight layout (its weights_desc(), which the caller reorders W
// into). Measured against the matmul for relpos's products and not used by them
// (bench/gemm_in_torch.cpp, bench/results/gemm-gap.md).
inline dnnl::inner_product_forward::primitive_desc make_onednn_inner_product(
    const dnnl::engine& engine, const dnnl::memory::desc& a, const dnnl::memory::desc& w_any,
    const dnnl::memory::desc& c, float beta) {
  dnnl::primitive_attr attr;
  if (beta != 0.f) {
    dnnl::post_ops ops;
    ops.append_sum(beta);
    attr.set_post_ops(ops);
  }
  const auto prop = dnnl::prop_kind::forward_inference;
#if DNNL_VERSION_MAJOR >= 3
  return dnnl::inner_product_forward::primitive_desc(engine, prop, a, w_any, c, attr);
#else
  return dnnl::inner_product_forward::primitive_desc(
      dnnl::inner_product_forward::desc(prop, a, w_any, c), attr, engine);
#endif
}

}  // namespace relpos::cpu
