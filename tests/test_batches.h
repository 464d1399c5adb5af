#pragma once
// Comparing data batches in tests.
#include <vector>

#include "data/batch.h"

namespace relpos::testing {

// True when both lists hold the same batches, element for element.
inline bool same_batches(const std::vector<Batch>& a, const std::vector<Batch>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].inputs.to_vector() != b[i].inputs.to_vector() ||
        a[i].targets.to_vector() != b[i].targets.to_vector())
      return false;
  return true;
}

}  // namespace relpos::testing
