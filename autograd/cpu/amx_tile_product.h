#pragma once
// The tiled attention's bf16 block product on AMX tiles (tdpbf16ps), for a CPU whose
// kernel granted the tile data state (cpu::has_amx_bf16()). bf16_gemm_rows.cpp decides
// when it runs and packs its operands; this file only multiplies them.
#include <cstdint>

namespace relpos::cpu {

// C (m, n) = alpha · A·B, or C += alpha · A·B when accumulate, from operands packed as
// 32-bit words that each hold two consecutive k in bf16 (the even k in the low half):
//   A: word (r, kk) at a[r * lda + kk] for r < round_up16(m), kk < round_up16(pairs);
//      the words at kk >= pairs must be zero, rows r >= m are read and their results
//      dropped;
//   B: word (kk, j) at b[kk * ldb + j] for kk < round_up16(pairs), j < round_up16(n);
//      all must be readable and finite (they meet A's zero words or dropped columns).
// Only C's first n columns of its first m rows are read or written. Loads this thread's
// tile configuration on entry and releases the tiles on return, so it may run between
// other AMX users (oneDNN) on any thread.
void amx_tile_product(std::int64_t m, std::int64_t n, std::int64_t pairs, const std::uint32_t* a,
                      std::int64_t lda, const std::uint32_t* b, std::int64_t ldb, float* c,
                      std::int64_t ldc, float alpha, bool accumulate);

}  // namespace relpos::cpu
