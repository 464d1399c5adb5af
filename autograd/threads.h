#pragma once
// Thread count for our OpenMP loops and OpenBLAS (one pool: the OpenMP build).
namespace relpos {

void set_num_threads(int threads);
int num_threads();
// Sets flush-to-zero and denormals-are-zero on this thread and every OpenMP
// worker (OpenBLAS's OpenMP build uses the same threads). Denormal floats carry
// no useful information in training but make SIMD arithmetic and GEMMs many
// times slower; ALiBi's far-away attention weights produce them at long lengths.
// Called by the CPU backend on first use and by set_num_threads().
void flush_denormals();
// True when the linked OpenBLAS is its OpenMP build (required: its threads are then our
// OpenMP threads, so BLAS calls and our parallel loops do not spin against each other).
bool blas_uses_openmp();

}  // namespace relpos
