#pragma once
// Element types and devices.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace relpos {

// f32/f64 are differentiable; i64 holds indices and u8 holds boolean masks.
enum class DType : std::uint8_t { f32, f64, i64, u8 };
enum class Device : std::uint8_t { cpu, cuda };

constexpr std::size_t element_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::u8:
      return 1;
    default:
      return 8;
  }
}
constexpr std::string_view name_of(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::i64:
      return "i64";
    default:
      return "u8";
  }
}
constexpr bool is_floating(DType t) { return t == DType::f32 || t == DType::f64; }
constexpr std::string_view name_of(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::f32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::f64;
}
template <>
constexpr DType dtype_of<std::int64_t>() {
  return DType::i64;
}
template <>
constexpr DType dtype_of<std::uint8_t>() {
  return DType::u8;
}

// Calls fn(T{}) with T = float or double according to a floating dtype.
template <class Fn>
decltype(auto) dispatch_floating(DType t, Fn&& fn) {
  if (t == DType::f32) return fn(float{});
  return fn(double{});
}

}  // namespace relpos
