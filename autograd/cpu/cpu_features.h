#pragma once
// What this CPU's matrix units can do, read once at run time (CPUID and, for AMX,
// the kernel's permission to use the tile data state).
namespace relpos::cpu {

// AVX-512 with the BF16 dot product (vdpbf16ps): Cooper Lake, Sapphire Rapids, Zen 4+.
bool has_avx512_bf16();
// AMX tiles with bf16 multiplies (Sapphire Rapids+), the tile state permitted by the OS.
bool has_amx_bf16();

}  // namespace relpos::cpu
