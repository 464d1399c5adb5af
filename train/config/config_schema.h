#pragma once
// The config schema: one entry per key path (e.g. `model.position.scheme`), in
// the order to_yaml writes them. Each entry binds its key to a field of RunConfig.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "train/config/config.h"

namespace relpos {

// Where a key's value lives inside a RunConfig.
using ConfigField = std::variant<std::int64_t*, std::uint64_t*, double*, bool*, std::string*,
                                 NormKind*, AttentionPath*, std::vector<std::int64_t>*>;

struct ConfigKey {
  std::string path;
  // Allowed values of an enum key, for enum-class fields in the enum's order;
  // empty for every other key.
  std::vector<std::string> choices;
  std::string meaning;
  std::function<ConfigField(RunConfig&)> field;
};

const std::vector<ConfigKey>& config_schema();
// The entry for `path`, or nullptr.
const ConfigKey* find_config_key(std::string_view path);
// True when `path` names a section holding keys (e.g. "model", "model.position").
bool is_config_section(std::string_view path);
// The key or section closest to an unknown `path` when it is a likely typo of
// it (a small edit distance, or the same last component in another section); "" otherwise.
std::string closest_config_path(std::string_view path);

}  // namespace relpos
