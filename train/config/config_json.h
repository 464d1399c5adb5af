#pragma once
// The resolved config as typed JSON, nested like its YAML: every key of the schema
// (train/config_schema.h) with its value as a JSON number, bool, string or list.
// Readers without a YAML parser (the PyTorch twin, tools/relpos_torch.py) use it.
#include <nlohmann/json.hpp>

#include "train/config/config.h"

namespace relpos {

nlohmann::json config_to_json(const RunConfig& config);

}  // namespace relpos
