#pragma once
// The tiny training run of the tests: a model of a few thousand parameters (d_model 16,
// one layer of 2 heads, d_ff 32) on the bundled corpus, 16 tokens by 2 rows a batch,
// 4 steps, logging every step, evaluating (1 batch) and saving every 2, one thread.
// `changes` (key.path=value, applied after the base as on the command line) set what a
// test needs otherwise. The same run as overrides, as a resolved config, or as the
// text of a config file for the relpos executable.
#include <yaml-cpp/yaml.h>

#include <sstream>
#include <string>
#include <vector>

#include "train/config/config.h"

namespace relpos::testing {

inline std::vector<std::string> tiny_run_overrides(const std::vector<std::string>& changes = {}) {
  std::vector<std::string> overrides = {
      "model.d_model=16",     "model.n_layers=1",         "model.n_heads=2",
      "model.d_ff=32",        "data.seq_len=16",          "data.batch_size=2",
      "train.steps=4",        "train.log_every=1",        "train.eval_every=2",
      "train.eval_batches=1", "train.checkpoint_every=2", "schedule.warmup_steps=1",
      "train.threads=1"};
  overrides.insert(overrides.end(), changes.begin(), changes.end());
  return overrides;
}

inline RunConfig tiny_run_config(const std::vector<std::string>& changes = {}) {
  return load_config({}, tiny_run_overrides(changes));
}

// A YAML file holding the overrides' keys as nested maps (a later override of a key
// replaces an earlier one), e.g. "model:\n  d_model: 16\n...".
inline std::string tiny_run_yaml(const std::vector<std::string>& changes = {}) {
  YAML::Node root(YAML::NodeType::Map);
  for (const std::string& override : tiny_run_overrides(changes)) {
    const auto equals = override.find('=');
    std::vector<std::string> keys;
    std::istringstream path(override.substr(0, equals));
    for (std::string key; std::getline(path, key, '.');) keys.push_back(key);
    std::vector<YAML::Node> chain{root};
    for (std::size_t i = 0; i + 1 < keys.size(); ++i) chain.push_back(chain.back()[keys[i]]);
    chain.back()[keys.back()] = YAML::Load(override.substr(equals + 1));
  }
  std::ostringstream text;
  text << root << "\n";
  return text.str();
}

}  // namespace relpos::testing
