#include "train/config/config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
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
    fill_unset_position_keys(config_.model.position, set_keys_);
    if (per_layer_) {
      config_.model.position = PositionConfig();  // unused: every layer has its own
      config_.model.layer_positions = expand_layers();
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
    // log_length's L_train: the training length unless set, kept in the resolved config.
    AttentionTemperatureConfig& temperature = config_.model.attention_temperature;
    if (temperature.kind == "log_length" && temperature.train_len == 0)
      temperature.train_len = config_.data.seq_len;
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

  // model.position as a per-layer list or rule (docs/config.md, "Per-layer position
  // schemes"): each entry's config and the model.position keys it set.
  struct LayerEntry {
    PositionConfig config;
    std::set<std::string> set_keys;
    std::optional<std::int64_t> window;  // the entry's attention_window, if it has one
  };

  static bool is_layer_form(const YAML::Node& value) {
    return value.IsSequence() || (value.IsMap() && value["every"]);
  }

  void fill_unset_position_keys(PositionConfig& p, const std::set<std::string>& set) const {
    for (const PositionKey& k : position_keys()) {
      if (k.key.unset_default && !set.contains("model.position." + k.key.name))
        p.set(k.key.name, k.key.unset_default(model_dims(config_.model)));
    }
  }

  // One entry: a scheme name or a mapping of model.position keys over the defaults.
  static LayerEntry read_layer_entry(const YAML::Node& node, const std::string& name,
                                     const ConfigSource& source) {
    require(node.IsScalar() || (node.IsMap() && !is_layer_form(node)),
            "{}: {}: expected a scheme name or a mapping of model.position keys, got {}",
            source.at(node), name, describe_node(node));
    LayerEntry out;
    ConfigBuilder entry;
    try {
      if (node.IsScalar()) {
        entry.apply_path("model.position.scheme", source.at(node), node, source);
      } else {
        // The entry's own sliding window (model.attention_window for this layer).
        YAML::Node keys(YAML::NodeType::Map);
        for (const auto& kv : node) {
          if (kv.first.IsScalar() && kv.first.Scalar() == "attention_window") {
            std::int64_t w = -1;
            try {
              w = kv.second.as<std::int64_t>();
            } catch (const YAML::Exception&) {
            }
            require(w >= 0, "{}: attention_window: expected an integer >= 0, got {}",
                    source.at(kv.second), describe_node(kv.second));
            out.window = w;
          } else {
            keys[kv.first] = kv.second;
          }
        }
        entry.apply_section(keys, "model.position", source);
      }
    } catch (const UsageError& e) {
      fail("{}: {}", name, e.what());
    }
    out.config = entry.config_.model.position;
    out.set_keys = entry.set_keys_;
    return out;
  }

  // A list replaces whatever model.position held; keys set after it apply to every layer.
  void read_layers(const YAML::Node& value, const std::string& where, const ConfigSource& source) {
    layers_.clear();
    every_ = 0;
    layers_at_ = where;
    per_layer_ = true;
    if (value.IsSequence()) {
      require(value.size() > 0, "{}: model.position: an empty list; give one entry per layer",
              where);
      for (std::size_t i = 0; i < value.size(); ++i)
        layers_.push_back(read_layer_entry(value[i], fmt::format("model.position[{}]", i), source));
      return;
    }
    for (const auto& entry : value) {
      const std::string name = entry.first.IsScalar() ? entry.first.Scalar() : "";
      require(name == "every" || name == "scheme" || name == "else",
              "{}: model.position: unknown key {} in a per-layer rule (expected every, scheme "
              "and else)",
              source.at(entry.first), in_quotes(name));
    }
    require(value["scheme"] && value["else"],
            "{}: model.position: a per-layer rule needs every, scheme and else", where);
    const YAML::Node every = value["every"];
    try {
      every_ = every.as<std::int64_t>();
    } catch (const YAML::Exception&) {
      every_ = 0;
    }
    require(every_ >= 1, "{}: model.position.every: expected an integer >= 1, got {}",
            source.at(every), describe_node(every));
    layers_.push_back(read_layer_entry(value["scheme"], "model.position.scheme", source));
    layers_.push_back(read_layer_entry(value["else"], "model.position.else", source));
  }

  // The per-layer configs: the list, or the rule applied to every layer. Entries with an
  // attention_window set model.attention_window (0 for the entries without one).
  std::vector<PositionConfig> expand_layers() {
    const std::int64_t n = config_.model.n_layers;
    require(every_ > 0 || static_cast<std::int64_t>(layers_.size()) == n,
            "{}: model.position: a list of {} entries, expected one per layer "
            "(model.n_layers={})",
            layers_at_, layers_.size(), n);
    std::vector<PositionConfig> out;
    std::vector<std::int64_t> windows;
    bool any_window = false;
    for (std::int64_t l = 0; l < n; ++l) {
      // The every rule: layer l uses `scheme` when (l + 1) % every == 0, else `else`.
      const LayerEntry& e = layers_[static_cast<std::size_t>(every_ == 0             ? l
                                                             : (l + 1) % every_ == 0 ? 0
                                                                                     : 1)];
      out.push_back(e.config);
      fill_unset_position_keys(out.back(), e.set_keys);
      windows.push_back(e.window.value_or(0));
      any_window = any_window || e.window.has_value();
    }
    if (any_window) {
      require(config_.model.attention_window.empty(),
              "{}: model.position: entries set attention_window, and so does "
              "model.attention_window; set the windows in one place",
              layers_at_);
      config_.model.attention_window = windows;
    }
    return out;
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
    if (path == "model.position" && is_layer_form(value)) {
      if (!source.is_override) {
        const auto [first, inserted] = first_set_at_.emplace(path, where);
        require(inserted, "{}: key {} is set twice (first at {})", where, in_quotes(path),
                first->second);
      }
      return read_layers(value, where, source);
    }
    if (const ConfigKey* key = find_config_key(path)) {
      if (!source.is_override) {
        const auto [first, inserted] = first_set_at_.emplace(path, where);
        require(inserted, "{}: key {} is set twice (first at {})", where, in_quotes(path),
                first->second);
      }
      read_config_value(*key, value, source, config_);
      set_keys_.insert(path);
      if (path.starts_with("model.position."))  // after a per-layer list: every layer's key
        for (LayerEntry& e : layers_) {
          std::swap(config_.model.position, e.config);
          read_config_value(*key, value, source, config_);
          std::swap(config_.model.position, e.config);
          e.set_keys.insert(path);
        }
      return;
    }
    if (!is_config_section(path)) throw UsageError(unknown_key(where, path));
    if (value.IsNull()) return;  // an empty section
    require(value.IsMap(), "{}: {}: expected a mapping of keys, got {}", source.at(value), path,
            describe_node(value));
    apply_section(value, path, source);
  }

  RunConfig config_;
  bool per_layer_ = false;          // model.position is a per-layer list or rule
  std::vector<LayerEntry> layers_;  // the list's entries, or a rule's {scheme, else}
  std::int64_t every_ = 0;          // a rule's period; 0: layers_ is the list
  std::string layers_at_;           // where the list or rule was given
  std::set<std::string> set_keys_;  // by any layer
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

namespace {

// Writes `keys` (in schema order) of `config` as nested mappings into the open mapping
// `out`, each key's path without its first `strip` components.
void emit_keys(YAML::Emitter& out, const std::vector<const ConfigKey*>& keys,
               const RunConfig& config, std::size_t strip) {
  std::vector<std::string> open;  // the sections currently open, outermost first
  for (const ConfigKey* key : keys) {
    std::vector<std::string> parts;
    for (std::size_t begin = 0, dot = 0; dot != std::string::npos; begin = dot + 1) {
      dot = key->path.find('.', begin);
      parts.push_back(key->path.substr(begin, dot - begin));
    }
    parts.erase(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(strip));
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
    emit_config_value(*key, config, out);
  }
  for (; !open.empty(); open.pop_back()) out << YAML::EndMap;
}

bool is_position_key(const ConfigKey& key) { return key.path.starts_with("model.position."); }

}  // namespace

std::string to_yaml(const RunConfig& config) {
  const auto& layers = config.model.layer_positions;
  std::vector<const ConfigKey*> model, position, rest;
  for (const ConfigKey& key : config_schema()) {
    if (is_position_key(key))
      position.push_back(&key);
    else
      (key.path.starts_with("model.") ? model : rest).push_back(&key);
  }
  YAML::Emitter out;
  out << YAML::BeginMap;
  if (layers.empty()) {
    model.insert(model.end(), position.begin(), position.end());
    emit_keys(out, model, config, 0);
  } else {
    // model.position: one full mapping per layer.
    out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
    emit_keys(out, model, config, 1);
    out << YAML::Key << "position" << YAML::Value << YAML::BeginSeq;
    RunConfig entry = config;
    for (const PositionConfig& p : layers) {
      entry.model.position = p;
      out << YAML::BeginMap;
      emit_keys(out, position, entry, 2);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap;
  }
  emit_keys(out, rest, config, 0);
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
