#pragma once
// OpenBLAS picks its kernels from the CPU model at load time. Debian 12's
// OpenBLAS (0.3.21) does not know newer AVX-512 CPUs such as Sapphire Rapids and
// falls back to its AVX2 "Haswell" kernels: sgemm runs about 1.5x slower than with
// its AVX-512 "SkylakeX" kernels on the same core (bench/README.md).
namespace relpos {

// The kernel set OpenBLAS chose, e.g. "Haswell".
const char* blas_kernel_name();

// Call first thing in main(). When OpenBLAS chose Haswell on a CPU with the
// AVX-512 subsets SkylakeX needs, and OPENBLAS_CORETYPE is not set, re-executes
// the program with OPENBLAS_CORETYPE=SkylakeX (the only way to change the choice,
// made before main runs). Setting OPENBLAS_CORETYPE to anything keeps that choice.
void use_best_blas_kernel(char** argv);

}  // namespace relpos
