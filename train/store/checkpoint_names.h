#pragma once
// Names in a checkpoint <-> HDF5 paths (docs/checkpoint.md, "Names"): a dotted
// parameter name is one group per part, an optimizer state one more part below it.
#include <string>
#include <vector>

namespace relpos {

// {"blocks", "0", "w"}, '.' -> "blocks.0.w"
std::string join_parts(const std::vector<std::string>& parts, char separator);

// "blocks.0.attn.q.weight" -> {"blocks", "0", "attn", "q", "weight"}; a name with an
// empty part or a '/' is a UsageError.
std::vector<std::string> param_path(const std::string& name);

// "blocks.0.attn.q.weight/exp_avg" -> {"blocks", "0", "attn", "q", "weight", "exp_avg"};
// a key without '/' (optimizer-wide state such as "step") -> {"step"}.
std::vector<std::string> optim_path(const std::string& key);

}  // namespace relpos
