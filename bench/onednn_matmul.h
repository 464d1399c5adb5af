#pragma once
// oneDNN's matmul primitive alone on one row-major GEMM C (m, n) = op(A) op(B), C in f32 (or
// bf16 when bf16_c, as torch.matmul on bf16 tensors writes it), A and B in f32 or bf16
// (uint16 bits) as stored: the raw library rate, without relpos's operand rounding or
// primitive cache. Shared by bench_gemm_precision and bench_gemm_mkl.
#include <cstdint>
#include <dnnl.hpp>
#include <unordered_map>

#include "autograd/cpu/onednn_matmul_primitive.h"

namespace relpos::bench {

class OnednnMatmul {
 public:
  // a: (k, m) when trans_a, else (m, k); b: (n, k) when trans_b, else (k, n); dense rows.
  OnednnMatmul(std::int64_t m, std::int64_t n, std::int64_t k, bool trans_a, bool trans_b,
               bool bf16, const void* a, const void* b, void* c, bool bf16_c = false) {
    using dnnl::memory;
    const auto type = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
    const memory::desc ad =
        trans_a ? memory::desc({m, k}, type, {1, m}) : memory::desc({m, k}, type, {k, 1});
    const memory::desc bd =
        trans_b ? memory::desc({k, n}, type, {1, k}) : memory::desc({k, n}, type, {n, 1});
    const memory::desc cd({m, n}, bf16_c ? memory::data_type::bf16 : memory::data_type::f32,
                          {n, 1});
    primitive_ = relpos::cpu::make_onednn_matmul(engine_, ad, bd, cd);
    args_ = {{DNNL_ARG_SRC, memory(ad, engine_, const_cast<void*>(a))},
             {DNNL_ARG_WEIGHTS, memory(bd, engine_, const_cast<void*>(b))},
             {DNNL_ARG_DST, memory(cd, engine_, c)}};
  }
  void run() {
    primitive_.execute(stream_, args_);
    stream_.wait();
  }

 private:
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  dnnl::matmul primitive_;
  std::unordered_map<int, dnnl::memory> args_;
};

}  // namespace relpos::bench
