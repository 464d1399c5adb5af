#include "train/config/config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "autograd/error.h"
#include "data/input_file.h"
#include "data/masking.h"
#include "data/sentencepiece_tokenizer.h"
#include "layers/position/registry.h"
#include "train/config/config_schema.h"
#include "train/config/config_value.h"
#include "train/config/run_tokenizer.h"

namespace relpos {

std::string read_config_file(const std::string& path, const std::string& what) {
  return read_regular_file(path, what + " " + in_quotes(path), kMaxConfigFileBytes);
}

namespace {

std::string unknown_key(const std::string& where, const std::string& path) {
  const std::string suggestion = closest_config_path(path);
  if (suggestion.empty()) return fmt::format("{}: unknown key {}", where, in_quotes(path));
  return fmt::format("{}: unknown key {} (did you mean '{}'?)", where, in_quotes(path), suggestion);
}

// Applies layers of settings over the defaults, remembering which keys were set.
class ConfigBuilder {
 public:
  void apply_document(const YAML::Node& root, const ConfigSource& source) {
    first_set_at_.clear();
    if (root.IsNull()) return;  // an empty file
    require(root.IsMap(), "{}: expected a mapping of config keys, got {}", source.at(root),
            describe_node(root));
    apply_section(root, "", source);
  }

  void apply_override(const std::string& text) {
    const ConfigSource source{text, true};
    const auto equals = text.find('=');
    require(equals != std::string::npos && equals > 0, "override {}: expected key.path=value",
            in_quotes(text));
    const std::string path = text.substr(0, equals);
    YAML::Node value;
    try {
      value = parse_one_yaml_document(text.substr(equals + 1), "value");
    } catch (const UsageError& e) {
      fail("override {}: invalid YAML value: {}", in_quotes(text), e.what());
    }
    apply_path(path, source.at(value), value, source);
  }

  // Fills the keys derived from others, then validates.
  RunConfig finish() {
    for (const PositionKey& k : position_keys()) {
      if (k.key.unset_default && !set_keys_.contains("model.position." + k.key.name))
        config_.model.position.set(k.key.name, k.key.unset_default(model_dims(config_.model)));
    }
    // A bidirectional model is trained with the masked-token objective: one more token id.
    if (!set_keys_.contains("model.vocab") && !config_.model.causal) {
      config_.model.vocab = kMaskedVocabSize;
    }
    // A SentencePiece tokenizer: the vocabulary is its pieces.
    const std::string& model = config_.data.tokenizer_model;
    if (!set_keys_.contains("model.vocab") && config_.data.tokenizer_kind == "sentencepiece" &&
        !model.empty())
      config_.model.vocab =
          load_sentencepiece(read_tokenizer_model(model), "data.tokenizer.model '" + model + "'")
              ->vocab_size();
    clamp_warmup_to_steps();
    validate(config_);
    return config_;
  }

 private:
  // A warmup longer than the run (a short trial of a long config) becomes the whole run.
  void clamp_warmup_to_steps() {
    std::int64_t& warmup = config_.schedule.warmup_steps;
    const std::int64_t steps = config_.train.steps;
    if (steps < 1 || warmup <= steps) return;  // train.steps < 1 is refused by validate()
    std::cerr << fmt::format(
        "relpos: note: schedule.warmup_steps={} is more than train.steps={}; warming up over "
        "all {} steps\n",
        warmup, steps, steps);
    warmup = steps;
  }

  void apply_section(const YAML::Node& map, const std::string& prefix, const ConfigSource& source) {
    std::map<std::string, std::string> seen;  // key name -> where, in this mapping
    for (const auto& entry : map) {
      const YAML::Node& key = entry.first;
      require(key.IsScalar(), "{}: expected a key name, got {}", source.at(key),
              describe_node(key));
      const std::string path = prefix.empty() ? key.Scalar() : prefix + "." + key.Scalar();
      // A section given twice (`model:` twice) would otherwise merge silently.
      const auto [first, inserted] = seen.emplace(key.Scalar(), source.at(key));
      require(inserted, "{}: key {} is set twice (first at {})", source.at(key), in_quotes(path),
              first->second);
      apply_path(path, source.at(key), entry.second, source);
    }
  }

  // Sets the key `path` (or every key inside the section `path`) from `value`;
  // `where` locates the key for an unknown-key error.
  void apply_path(const std::string& path, const std::string& where, const YAML::Node& value,
                  const ConfigSource& source) {
    if (const ConfigKey* key = find_config_key(path)) {
      if (!source.is_override) {
        const auto [first, inserted] = first_set_at_.emplace(path, where);
        require(inserted, "{}: key {} is set twice (first at {})", where, in_quotes(path),
                first->second);
      }
      read_config_value(*key, value, source, config_);
      set_keys_.insert(path);
      return;
    }
    if (!is_config_section(path)) throw UsageError(unknown_key(where, path));
    if (value.IsNull()) return;  // an empty section
    require(value.IsMap(), "{}: {}: expected a mapping of keys, got {}", source.at(value), path,
            describe_node(value));
    apply_section(value, path, source);
  }

  RunConfig config_;
  std::set<std::string> set_keys_;                   // by any layer
  std::map<std::string, std::string> first_set_at_;  // key -> where, in the current document
};

}  // namespace

RunConfig load_config(const std::vector<std::string>& files,
                      const std::vector<std::string>& overrides) {
  ConfigBuilder builder;
  for (const std::string& file : files) {
    builder.apply_document(parse_one_yaml_document(read_config_file(file, "config file"), file),
                           ConfigSource{file});
  }
  for (const std::string& text : overrides) builder.apply_override(text);
  return builder.finish();
}

RunConfig config_from_yaml(const std::string& yaml, const std::string& origin,
                           const std::vector<std::string>& overrides) {
  ConfigBuilder builder;
  builder.apply_document(parse_one_yaml_document(yaml, origin), ConfigSource{origin});
  for (const std::string& text : overrides) builder.apply_override(text);
  return builder.finish();
}

std::string to_yaml(const RunConfig& config) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  std::vector<std::string> open;  // the sections currently open, outermost first
  for (const ConfigKey& key : config_schema()) {
    std::vector<std::string> parts;
    for (std::size_t begin = 0, dot = 0; dot != std::string::npos; begin = dot + 1) {
      dot = key.path.find('.', begin);
      parts.push_back(key.path.substr(begin, dot - begin));
    }
    const std::vector<std::string> sections(parts.begin(), parts.end() - 1);
    std::size_t common = 0;
    while (common < open.size() && common < sections.size() && open[common] == sections[common]) {
      ++common;
    }
    for (; open.size() > common; open.pop_back()) out << YAML::EndMap;
    for (; open.size() < sections.size(); open.push_back(sections[open.size()])) {
      out << YAML::Key << sections[open.size()] << YAML::Value << YAML::BeginMap;
    }
    out << YAML::Key << parts.back() << YAML::Value;
    emit_config_value(key, config, out);
  }
  for (; !open.empty(); open.pop_back()) out << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::vector<ConfigKeyInfo> config_keys() {
  const RunConfig defaults;
  std::vector<ConfigKeyInfo> keys;
  for (const ConfigKey& key : config_schema()) {
    keys.push_back({key.path, config_type_name(key), key.choices, config_value_text(key, defaults),
                    key.meaning});
  }
  return keys;
}

}  // namespace relpos
