#pragma once
// Whether Precision::bf16 matrix products can run in this process (docs/bf16.md): they
// need a build with oneDNN (RELPOS_ONEDNN) and a CPU with AVX-512-BF16 or AMX.
#include <string>

namespace relpos {

// Empty when they can; otherwise what is missing, as a phrase ("this CPU has ...").
std::string bf16_unavailable_reason();

}  // namespace relpos
