#pragma once
// The registry of position schemes: one entry per scheme, declared in the scheme's own
// file (docs/position-schemes.md, "Adding a scheme"). Everything that lists the schemes
// -- the config schema and its validation, make_position_scheme, `relpos positions`,
// docs/config.md and the tests -- loops over position_schemes().
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "layers/position/scheme.h"

namespace relpos {

// A config key of a scheme: model.position.<name>. Schemes may share a key (e.g.
// per_layer); they must then agree on its default.
struct SchemeKey {
  std::string name{};
  OptionValue default_value{};
  std::string meaning{};  // one line, for docs/config.md
  // When set, the value used where no config layer sets the key, derived from the model
  // (T5's bucket kind follows model.causal).
  std::function<OptionValue(const ModelDims&)> unset_default{};
  // The allowed values of a string key (e.g. rope_scaling.kind); empty for other keys.
  std::vector<std::string> choices{};
};

// What a scheme's validation may look at beyond its own keys.
struct SchemeContext {
  ModelDims dims{};
  std::int64_t seq_len = 0;                  // the training length; 0 when unknown
  std::vector<std::int64_t> eval_lengths{};  // evaluation lengths
};

struct PositionSchemeEntry {
  std::string name{};
  // Where the scheme stands in every listing (config choices, docs, ablations); unique.
  int order = 0;
  std::vector<SchemeKey> keys{};
  // Throws a UsageError naming the keys and values when the config cannot be built.
  std::function<void(const PositionConfig&, const SchemeContext&)> validate{};
  // Builds the scheme for a validated config.
  std::function<std::unique_ptr<PositionScheme>(const PositionConfig&, const ModelDims&, Rng&)>
      build{};
  // Key settings the tests run the scheme with, each a list of overrides: chosen so that
  // the interesting cases (clipping, bucket saturation, clamping) happen at the tests'
  // small lengths (about 10) and head dimensions (4). No variant: the defaults alone.
  std::vector<std::vector<std::pair<std::string, OptionValue>>> test_variants{};
  // `relpos positions`: the row of the scheme's per-distance table that relative position
  // rel = j - i reads, and a caption; unset for schemes without such a table.
  std::function<std::int64_t(const PositionConfig&, std::int64_t rel)> table_index{};
  // `relpos positions` for a scheme whose input depends on the query's position as well
  // (FIRE): the value for a query at position qpos and a key at qpos + rel, printed with
  // three decimals. A scheme sets table_index or table_value, not both.
  std::function<double(const PositionConfig&, std::int64_t qpos, std::int64_t rel)> table_value{};
  std::function<std::string(const PositionConfig&)> caption{};
  std::vector<std::string> index_keys{};  // the keys table_index reads
  // The names the PyTorch reference (tools/reference/) gives this scheme's keys and
  // parameters where they differ from ours, as {reference name, our name}.
  std::vector<std::pair<std::string, std::string>> reference_names{};
  // Only causal attention (the index is shown for past keys only).
  bool causal_only = false;
  // The integer keys that size a parameter table, each with the largest value accepted.
  // Validation refuses larger values, and the memory estimate (train/config/memory_estimate.h)
  // counts each such key's value v as two tables of (2v + 1) rows of d_model per layer.
  std::vector<std::pair<std::string, std::int64_t>> size_keys{};
  // Positions are absolute (a term added to the embeddings), not distances: segment
  // memory (train.mem_len) cannot reuse cached hidden states under such a scheme.
  bool absolute = false;
};

// Adds an entry; returns true so that a scheme file can register from a static initialiser:
//   const bool registered = register_position_scheme({...});
bool register_position_scheme(PositionSchemeEntry entry);

// Every registered scheme, by order.
const std::vector<PositionSchemeEntry>& position_schemes();
const PositionSchemeEntry* find_position_scheme(const std::string& name);
std::vector<std::string> position_scheme_names();

// Every key of every scheme, once, in scheme order, with the schemes that use it.
struct PositionKey {
  SchemeKey key;
  std::vector<std::string> schemes{};
};
std::vector<PositionKey> position_keys();

// The configs the tests run `scheme` with: one per test variant (at least one).
std::vector<PositionConfig> test_position_configs(const std::string& scheme);

}  // namespace relpos
