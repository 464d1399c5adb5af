#pragma once
// OpenBLAS picks its kernels from the CPU model at load time. Debian 12's
// OpenBLAS (0.3.21) does not know newer CPUs and falls back to older kernels: its
// AVX2 "Haswell" ones on some (sgemm about 1.5x slower than with its AVX-512
// "SkylakeX" kernels on the same core, bench/README.md), its SSE3 "Prescott" ones on
// a Sapphire Rapids Xeon under KVM (seen 2026-11-26, `OPENBLAS_VERBOSE=2`).
namespace relpos {

// The kernel set OpenBLAS chose, e.g. "Haswell".
const char* blas_kernel_name();

// Call first thing in main(). When OPENBLAS_CORETYPE is not set and OpenBLAS chose
// kernels below what the CPU can run (no AVX-512 kernels on a CPU with the AVX-512
// subsets SkylakeX needs, or no AVX2 kernels on a CPU with AVX2 and FMA), re-executes
// the program with OPENBLAS_CORETYPE=SkylakeX or Haswell (the only way to change the
// choice, made before main runs). Setting OPENBLAS_CORETYPE to anything keeps that choice.
void use_best_blas_kernel(char** argv);

}  // namespace relpos
