#pragma once
// Thread count for our OpenMP loops and OpenBLAS (one pool: the OpenMP build).
namespace relpos {

void set_num_threads(int threads);
int num_threads();
// True when the linked OpenBLAS is its OpenMP build (required, see GUIDE.md §3).
bool blas_uses_openmp();

}  // namespace relpos
