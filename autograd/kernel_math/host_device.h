#pragma once
// RELPOS_HOST_DEVICE marks the inline functions of autograd/kernel_math/ that both
// backends call: __host__ __device__ under nvcc, nothing for the host compiler. The
// headers here hold formulas only: no memory, no threads, no library calls. Where a
// formula needs an elementary function (exp, log, erf, ...), it takes it from a
// `Math` policy the backend passes (CpuMath in autograd/cpu/cpu_math.h, DeviceMath in
// autograd/cuda/device_math.cuh), so each backend keeps its own fast or exact version
// and the formula itself is written once.
#ifdef __CUDACC__
#define RELPOS_HOST_DEVICE __host__ __device__
#else
#define RELPOS_HOST_DEVICE
#endif
