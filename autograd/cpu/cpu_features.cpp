#include "autograd/cpu/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace relpos::cpu {
namespace {

struct Leaf7 {
  unsigned ebx = 0, ecx = 0, edx = 0, eax1 = 0;  // eax1: EAX of sub-leaf 1
};

Leaf7 read_leaf7() {
  Leaf7 r;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return r;
  __cpuid_count(7, 0, a, b, c, d);
  r.ebx = b;
  r.ecx = c;
  r.edx = d;
  __cpuid_count(7, 1, a, b, c, d);
  r.eax1 = a;
  return r;
}

// The OS must have enabled the AVX-512 state (XCR0 bits 1, 2, 5, 6, 7).
bool os_saves_avx512() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 0xE6u) == 0xE6u;
}

// Linux grants a process the AMX tile data state only on request (arch_prctl).
bool request_amx_permission() {
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

}  // namespace

bool has_avx512_bf16() {
  static const bool has = [] {
    const Leaf7 l = read_leaf7();
    const bool avx512f = l.ebx & (1u << 16), avx512bw = l.ebx & (1u << 30);
    const bool bf16 = l.eax1 & (1u << 5);
    return avx512f && avx512bw && bf16 && os_saves_avx512();
  }();
  return has;
}

bool has_amx_bf16() {
  static const bool has = [] {
    const Leaf7 l = read_leaf7();
    const bool amx_bf16 = l.edx & (1u << 22), amx_tile = l.edx & (1u << 24);
    return amx_bf16 && amx_tile && request_amx_permission();
  }();
  return has;
}

}  // namespace relpos::cpu
