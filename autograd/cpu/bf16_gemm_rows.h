#pragma once
// The tiled attention's products (q·kᵀ, p·v and the backward's four) and Transformer-XL's
// position products in bf16: operands rounded to bfloat16 (to nearest even), products summed in
// f32, on AMX tiles or vdpbf16ps. How the operands are packed is private to
// bf16_gemm_rows.cpp.
#include <cstdint>

namespace relpos::cpu {

// Starts a kernel call (a flash forward or backward): B operands that bf16_gemm_rows
// packed before are forgotten.
void bf16_begin_kernel_call();

// Forgets this thread's B operands packed from address b, which is about to be rewritten
// within the kernel call (a per-thread buffer that a kernel refills, e.g. the query tile's
// q + u rows in autograd/cpu/flash_tile.h).
void bf16_forget_operand(const float* b);

// C (m, n) = alpha · op(A) · op(B) + beta · C, beta 0 or 1, with the arguments of
// gemm_rows<float> (autograd/cpu/blas_call.h). On a CPU with AVX512-BF16 the products
// run on AMX tiles where bf16_products_on_amx(), else on vdpbf16ps; otherwise the operands are
// rounded in software and multiplied by the f32 BLAS: the same products, summed in another order
// (slower than f32). B is packed once per kernel call and address: it must not change until the
// next bf16_begin_kernel_call() (A may: the attention's p and ds are rewritten per block).
void bf16_gemm_rows(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                    float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                    float beta, float* c, std::int64_t ldc);

// bf16_gemm_rows with B a window of a larger operand that stays the same through the
// kernel call (Transformer-XL's W_r R of one head, which every block reads at its own
// window of distances; a key block of k or v, which causal query tiles read more of each
// time): op(B) is rows [first, first + n) of `whole` when trans_b (B is
// (n, k)), rows [first, first + k) otherwise (B is (k, n)); `whole` has whole_rows rows
// of stride ldb. `whole` is packed once per kernel call and thread, not once per window;
// the rows next to a window may be read and multiplied by zero, so they must be finite.
void bf16_gemm_rows_window(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
                           std::int64_t k, float alpha, const float* a, std::int64_t lda,
                           const float* whole, std::int64_t ldb, std::int64_t whole_rows,
                           std::int64_t first, float beta, float* c, std::int64_t ldc);

// Whether bf16_gemm_rows runs on vdpbf16ps: the CPU has AVX512-BF16 and no
// Bf16InstructionsSwitchedOff is alive.
bool bf16_products_native();

// Whether bf16_gemm_rows runs on AMX tiles (autograd/cpu/amx_tile_product.h) instead of
// vdpbf16ps: the products are native, the CPU has AMX-BF16 and the OS granted the tile
// state, no AmxTilesSwitchedOff is alive, and the environment variable
// RELPOS_ATTENTION_AMX is not "0" (read once per process; "0" keeps vdpbf16ps, for
// comparisons). The same rounded operands; the f32 sums in another order.
bool bf16_products_on_amx();

// Makes bf16_gemm_rows take the software path while it lives, so that the fallback can
// be tested where the instructions exist. Not thread-safe: create it outside any
// parallel region.
class Bf16InstructionsSwitchedOff {
 public:
  Bf16InstructionsSwitchedOff();
  ~Bf16InstructionsSwitchedOff();
  Bf16InstructionsSwitchedOff(const Bf16InstructionsSwitchedOff&) = delete;
  Bf16InstructionsSwitchedOff& operator=(const Bf16InstructionsSwitchedOff&) = delete;

 private:
  bool was_off_;
};

// Makes bf16_gemm_rows take the vdpbf16ps path instead of AMX tiles while it lives, so
// that the two can be compared. Not thread-safe: create it outside any parallel region.
class AmxTilesSwitchedOff {
 public:
  AmxTilesSwitchedOff();
  ~AmxTilesSwitchedOff();
  AmxTilesSwitchedOff(const AmxTilesSwitchedOff&) = delete;
  AmxTilesSwitchedOff& operator=(const AmxTilesSwitchedOff&) = delete;

 private:
  bool was_off_;
};

}  // namespace relpos::cpu
