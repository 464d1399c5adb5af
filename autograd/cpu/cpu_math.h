#pragma once
// The CPU's elementary functions for the shared kernel formulas (autograd/kernel_math/):
// libm, except exp_finite, the exponential inside GELU's tanh form, which must vectorise
// in f32 (cpu::exp_approx, fast_exp.h) and stay finite for every argument. f64 keeps
// libm throughout: it serves the gradient checks, not speed.
#include <algorithm>
#include <cmath>

#include "autograd/cpu/fast_exp.h"

namespace relpos::cpu {

struct CpuMath {
  template <class T>
  static T exp(T x) {
    return std::exp(x);
  }
  template <class T>
  static T log(T x) {
    return std::log(x);
  }
  template <class T>
  static T sqrt(T x) {
    return std::sqrt(x);
  }
  template <class T>
  static T tanh(T x) {
    return std::tanh(x);
  }
  template <class T>
  static T erf(T x) {
    return std::erf(x);
  }
  template <class T>
  static T pow(T x, T p) {
    return std::pow(x, p);
  }
  static float exp_finite(float x) { return exp_approx(x); }
  static double exp_finite(double x) { return std::exp(std::min(std::max(x, -700.0), 700.0)); }
};

}  // namespace relpos::cpu
