#include "train/config/config_json.h"

#include <variant>

#include "train/config/config_schema.h"
#include "train/config/overloaded.h"

namespace relpos {
namespace {

nlohmann::json value_of(const ConfigKey& key, RunConfig& config) {
  return std::visit(Overloaded{
                        [&](const NormKind* field) -> nlohmann::json {
                          return key.choices[static_cast<std::size_t>(*field)];
                        },
                        [&](const AttentionPath* field) -> nlohmann::json {
                          return key.choices[static_cast<std::size_t>(*field)];
                        },
                        [](const auto* field) -> nlohmann::json { return *field; },
                    },
                    key.field(config));
}

// "model.position.scheme" -> the JSON pointer /model/position/scheme.
nlohmann::json::json_pointer pointer_of(std::string path) {
  for (char& c : path)
    if (c == '.') c = '/';
  return nlohmann::json::json_pointer("/" + path);
}

}  // namespace

nlohmann::json config_to_json(const RunConfig& config) {
  RunConfig copy = config;  // the schema's accessors take a mutable config
  nlohmann::json out = nlohmann::json::object();
  for (const ConfigKey& key : config_schema()) out[pointer_of(key.path)] = value_of(key, copy);
  if (config.model.layer_positions.empty()) return out;
  // Per-layer schemes: model.position is a list of per-layer objects.
  nlohmann::json layers = nlohmann::json::array();
  for (const PositionConfig& p : config.model.layer_positions) {
    copy.model.position = p;
    nlohmann::json entry = nlohmann::json::object();
    for (const ConfigKey& key : config_schema())
      if (key.path.starts_with("model.position."))
        entry[pointer_of(key.path.substr(15))] = value_of(key, copy);
    layers.push_back(std::move(entry));
  }
  out["model"]["position"] = std::move(layers);
  return out;
}

}  // namespace relpos
