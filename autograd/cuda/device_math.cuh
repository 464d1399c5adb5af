#pragma once
// The GPU's elementary functions for the shared kernel formulas (autograd/kernel_math/):
// CUDA's math library. exp_finite clamps its argument so that the result stays finite
// (GELU's tanh form needs e^(-2u) finite for every u), at the CPU's bound in f64.
#include <cmath>

namespace relpos::cuda {

struct DeviceMath {
  template <class T>
  __host__ __device__ static T exp(T x) {
    return ::exp(x);
  }
  template <class T>
  __host__ __device__ static T log(T x) {
    return ::log(x);
  }
  template <class T>
  __host__ __device__ static T sqrt(T x) {
    return ::sqrt(x);
  }
  template <class T>
  __host__ __device__ static T tanh(T x) {
    return ::tanh(x);
  }
  template <class T>
  __host__ __device__ static T erf(T x) {
    return ::erf(x);
  }
  template <class T>
  __host__ __device__ static T pow(T x, T p) {
    return ::pow(x, p);
  }
  __host__ __device__ static float exp_finite(float x) { return ::expf(x < 88.0f ? x : 88.0f); }
  __host__ __device__ static double exp_finite(double x) {
    return ::exp(x < -700.0 ? -700.0 : (x > 700.0 ? 700.0 : x));
  }
};

}  // namespace relpos::cuda
