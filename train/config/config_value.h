#pragma once
// Reading one config key's value from a YAML node (with type checks and error
// messages naming where it came from) and writing it back as YAML.
#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "train/config/config_schema.h"

namespace relpos {

// Where YAML nodes came from, for error messages: a file (or other named text),
// whose nodes are located as "name:line", or a command-line override, named whole.
struct ConfigSource {
  std::string name;
  bool is_override = false;
  // "x.yaml:7" for a file node; "override 'model.foo=1'" for an override.
  std::string at(const YAML::Node& node) const;
};

// The one YAML document in `text` (a null node when there is none). Invalid YAML
// throws "<origin>:<line>:<column>: invalid YAML: ..."; a second document (after
// `---`) throws "<origin>:<line>: a second YAML document; one is read, so the rest
// would be ignored". `origin` names the text, e.g. a file.
YAML::Node parse_one_yaml_document(const std::string& text, const std::string& origin);
// Sets the key's field of `config` from `node`, or throws a UsageError like
// "x.yaml:7: model.d_model: expected an integer, got 'abc'".
void read_config_value(const ConfigKey& key, const YAML::Node& node, const ConfigSource& source,
                       RunConfig& config);
// Appends the key's value in `config` to `out` (a scalar or a flow list).
void emit_config_value(const ConfigKey& key, const RunConfig& config, YAML::Emitter& out);
// The key's value in `config` as YAML text, e.g. "128", "[]", "rope".
std::string config_value_text(const ConfigKey& key, const RunConfig& config);
// "int", "uint64", "float", "bool", "string", "enum" or "list of int".
std::string config_type_name(const ConfigKey& key);
// A node as an error message shows it: 'abc', a mapping, a list or null.
std::string describe_node(const YAML::Node& node);
// `text` in single quotes for a one-line message: a newline shows as \n; other control
// characters, the quote and the backslash are escaped too (\t, \r, \', \\, \x1b).
std::string in_quotes(std::string_view text);

}  // namespace relpos
