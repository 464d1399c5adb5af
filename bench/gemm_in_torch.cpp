// libbench_gemm_in_torch.so: oneDNN 2.6's bf16 products, called as relpos calls them (and one
// alternative), behind
// a C interface that bench/gemm_in_torch.py loads with ctypes into a Python process running
// torch.matmul, so that the two alternate call by call in one process (PyTorch's oneDNN 3.x
// is linked into libtorch_cpu with hidden symbols: the two libraries do not clash). Operands
// are the caller's (torch tensors' data): A, B bf16 as stored, C f32 or bf16.
#include <omp.h>

#include <cstdint>
#include <dnnl.hpp>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "autograd/cpu/onednn_matmul_primitive.h"

namespace {

using dnnl::memory;

struct Product {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  bool inner_product = false, reorder_each_call = true;
  dnnl::matmul matmul;
  dnnl::inner_product_forward product;
  dnnl::reorder to_blocked;
  std::unordered_map<int, memory> args;
  memory w, w_blocked;  // the inner product's W as stored and in its blocked layout
};

}  // namespace

extern "C" {

// C (m, n) = op(A) op(B): A (k, m) when trans_a, else (m, k); B (n, k) when trans_b, else
// (k, n); dense rows. kind 0: the matmul primitive (relpos's bf16 products,
// autograd/cpu/onednn_gemm.cpp); 1: the inner product with W = op(B)ᵀ reordered into its
// blocked layout on every call (A not transposed only), the alternative measured in
// bench/results/gemm-gap.md; 2: the same with W reordered once, here (what a blocked copy of
// W kept across a training step would give). bf16_c: C in bf16, else f32. Null when oneDNN
// refuses.
void* relpos_gemm_make(std::int64_t m, std::int64_t n, std::int64_t k, int trans_a, int trans_b,
                       int kind, int bf16_c, void* a, void* b, void* c) {
  using dt = memory::data_type;
  auto p = std::make_unique<Product>();
  const memory::desc ad =
      trans_a ? memory::desc({m, k}, dt::bf16, {1, m}) : memory::desc({m, k}, dt::bf16, {k, 1});
  const memory::desc cd({m, n}, bf16_c ? dt::bf16 : dt::f32, {n, 1});
  try {
    if (kind == 1 || kind == 2) {
      if (trans_a) return nullptr;
      // W (n, k) = op(B)ᵀ as stored: B itself when trans_b, B read transposed otherwise.
      const memory::desc wd =
          trans_b ? memory::desc({n, k}, dt::bf16, {k, 1}) : memory::desc({n, k}, dt::bf16, {1, n});
      const auto pd = relpos::cpu::make_onednn_inner_product(
          p->engine, ad, memory::desc({n, k}, dt::bf16, memory::format_tag::any), cd, 0.f);
      p->inner_product = true;
      p->product = dnnl::inner_product_forward(pd);
      p->w = memory(wd, p->engine, b);
      p->w_blocked = memory(pd.weights_desc(), p->engine);
      p->to_blocked = dnnl::reorder(p->w, p->w_blocked);
      p->reorder_each_call = kind == 1;
      if (kind == 2) {
        p->to_blocked.execute(p->stream, p->w, p->w_blocked);
        p->stream.wait();
      }
      p->args = {{DNNL_ARG_SRC, memory(ad, p->engine, a)},
                 {DNNL_ARG_WEIGHTS, p->w_blocked},
                 {DNNL_ARG_DST, memory(cd, p->engine, c)}};
    } else {
      const memory::desc bd =
          trans_b ? memory::desc({k, n}, dt::bf16, {1, k}) : memory::desc({k, n}, dt::bf16, {n, 1});
      p->matmul = relpos::cpu::make_onednn_matmul(p->engine, ad, bd, cd);
      p->args = {{DNNL_ARG_SRC, memory(ad, p->engine, a)},
                 {DNNL_ARG_WEIGHTS, memory(bd, p->engine, b)},
                 {DNNL_ARG_DST, memory(cd, p->engine, c)}};
    }
  } catch (const dnnl::error&) {
    return nullptr;
  }
  return p.release();
}

void relpos_gemm_run(void* handle) {
  auto* p = static_cast<Product*>(handle);
  if (p->inner_product) {
    if (p->reorder_each_call) {
      const int threads = omp_get_max_threads();  // the reorder on this thread alone
      omp_set_num_threads(1);
      p->to_blocked.execute(p->stream, p->w, p->w_blocked);
      omp_set_num_threads(threads);
    }
    p->product.execute(p->stream, p->args);
  } else {
    p->matmul.execute(p->stream, p->args);
  }
  p->stream.wait();
}

void relpos_gemm_free(void* handle) { delete static_cast<Product*>(handle); }

const char* relpos_gemm_onednn_version() {
  static std::string v = [] {
    const dnnl_version_t* d = dnnl_version();
    return std::to_string(d->major) + "." + std::to_string(d->minor) + "." +
           std::to_string(d->patch);
  }();
  return v.c_str();
}
}
