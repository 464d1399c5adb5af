#include "layers/position/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "autograd/error.h"

namespace relpos {
namespace {

std::vector<PositionSchemeEntry>& entries() {
  static std::vector<PositionSchemeEntry> registered;
  return registered;
}

const SchemeKey* find_key(const std::string& name) {
  for (const PositionSchemeEntry& entry : entries())
    for (const SchemeKey& key : entry.keys)
      if (key.name == name) return &key;
  return nullptr;
}

}  // namespace

bool register_position_scheme(PositionSchemeEntry entry) {
  for (const PositionSchemeEntry& other : entries()) {
    if (other.name == entry.name || other.order == entry.order)
      throw InternalError(
          fmt::format("position scheme '{}' (order {}) clashes with '{}' (order {})", entry.name,
                      entry.order, other.name, other.order));
  }
  for (const SchemeKey& key : entry.keys) {
    const SchemeKey* shared = find_key(key.name);
    if (shared && shared->default_value != key.default_value)
      throw InternalError(
          fmt::format("position scheme '{}': key '{}' has another default than "
                      "in an earlier scheme",
                      entry.name, key.name));
  }
  auto& all = entries();
  const auto at = std::find_if(all.begin(), all.end(),
                               [&](const PositionSchemeEntry& e) { return e.order > entry.order; });
  all.insert(at, std::move(entry));
  return true;
}

const std::vector<PositionSchemeEntry>& position_schemes() { return entries(); }

const PositionSchemeEntry* find_position_scheme(const std::string& name) {
  for (const PositionSchemeEntry& entry : entries())
    if (entry.name == name) return &entry;
  return nullptr;
}

std::vector<std::string> position_scheme_names() {
  std::vector<std::string> names;
  for (const PositionSchemeEntry& entry : entries()) names.push_back(entry.name);
  return names;
}

std::vector<PositionKey> position_keys() {
  std::vector<PositionKey> keys;
  for (const PositionSchemeEntry& entry : entries()) {
    for (const SchemeKey& key : entry.keys) {
      const auto known = std::find_if(keys.begin(), keys.end(),
                                      [&](const PositionKey& k) { return k.key.name == key.name; });
      if (known == keys.end())
        keys.push_back({key, {entry.name}});
      else
        known->schemes.push_back(entry.name);
    }
  }
  return keys;
}

std::vector<PositionConfig> test_position_configs(const std::string& scheme) {
  const PositionSchemeEntry* entry = find_position_scheme(scheme);
  if (!entry) throw InternalError(fmt::format("no position scheme '{}'", scheme));
  std::vector<PositionConfig> configs;
  for (const auto& variant : entry->test_variants) {
    PositionConfig& config = configs.emplace_back();
    config.scheme = scheme;
    for (const auto& [key, value] : variant) config.set(key, value);
  }
  if (configs.empty()) configs.emplace_back().scheme = scheme;
  return configs;
}

PositionConfig::PositionConfig() {
  for (const PositionSchemeEntry& entry : entries())
    for (const SchemeKey& key : entry.keys) values_.emplace(key.name, key.default_value);
}

const OptionValue& PositionConfig::at(const std::string& key) const {
  const auto it = values_.find(key);
  if (it == values_.end())
    throw InternalError(fmt::format("model.position.{}: no scheme has this key", key));
  return it->second;
}

OptionValue& PositionConfig::at(const std::string& key) {
  return const_cast<OptionValue&>(std::as_const(*this).at(key));
}

void PositionConfig::set(const std::string& key, OptionValue value) {
  OptionValue& slot = at(key);
  if (slot.index() != value.index())
    throw InternalError(fmt::format("model.position.{}: value of the wrong type", key));
  slot = value;
}

std::unique_ptr<PositionScheme> make_position_scheme(const PositionConfig& config,
                                                     const ModelDims& dims, Rng& rng) {
  const PositionSchemeEntry* entry = find_position_scheme(config.scheme);
  require(entry != nullptr, "model.position.scheme: unknown scheme '{}' (expected one of {})",
          config.scheme, fmt::join(position_scheme_names(), ", "));
  if (entry->validate) entry->validate(config, SchemeContext{dims, 0, {}});
  return entry->build(config, dims, rng);
}

}  // namespace relpos
