// Size bounds: products of sizes that would overflow, each scheme's size keys, and the
// memory estimate that refuses a run which would not fit.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "layers/position/registry.h"
#include "layers/transformer.h"
#include "tests/test_files.h"
#include "train/config/config.h"
#include "train/config/memory_estimate.h"

namespace relpos {

namespace fs = std::filesystem;
using Catch::Contains;
using testing::slurp;
using testing::TempDir;

TEST_CASE("config: sizes whose products overflow are refused, naming the keys",
          "[config][bounds]") {
  struct Case {
    std::vector<std::string> overrides;
    std::vector<std::string> expected;  // substrings of the message
  };
  const std::vector<Case> cases = {
      {{"model.vocab=4611686018427387904"}, {"too large", "model.vocab=4611686018427387904"}},
      {{"data.batch_size=4611686018427387904"},
       {"too large", "data.batch_size=4611686018427387904"}},
      {{"model.d_ff=4611686018427387904"}, {"too large", "model.d_ff=4611686018427387904"}},
      {{"model.d_model=4294967296", "model.n_heads=1"}, {"too large", "model.d_model=4294967296"}},
      {{"eval.lengths=[4611686018427387904]"}, {"too large", "eval.lengths=[4611686018427387904]"}},
      {{"train.eval_batches=4611686018427387904"}, {"too large", "train.eval_batches="}},
      {{"model.n_layers=1000000"}, {"model.n_layers must be <= 1024, got 1000000"}},
      {{"train.threads=100000"}, {"train.threads must be <= 1024, got 100000"}},
      {{"model.position.scheme=t5", "model.position.num_buckets=1000000000"},
       {"model.position.num_buckets must be <= 1048576, got 1000000000"}},
      {{"model.position.scheme=learned", "model.position.max_len=1000000000"},
       {"model.position.max_len must be <= 1048576, got 1000000000"}},
      {{"model.position.scheme=shaw", "model.position.max_relative=1000000000"},
       {"model.position.max_relative must be <= 1048576, got 1000000000"}},
  };
  for (const Case& c : cases) {
    INFO(fmt::format("{}", fmt::join(c.overrides, " ")));
    try {
      load_config({}, c.overrides);
      FAIL("accepted");
    } catch (const UsageError& e) {
      const std::string message = e.what();
      for (const std::string& part : c.expected) CHECK_THAT(message, Contains(part));
    }
  }
  // The caps themselves are accepted.
  CHECK_NOTHROW(load_config({}, {"model.n_layers=1024", "model.d_model=8", "model.d_ff=8",
                                 "model.n_heads=1", "train.threads=1024"}));
}

TEST_CASE("config: every scheme's size keys are integer keys of that scheme", "[config][bounds]") {
  for (const PositionSchemeEntry& entry : position_schemes()) {
    for (const auto& size_key : entry.size_keys) {
      const auto& key = size_key.first;
      INFO(entry.name << ": " << key);
      CHECK(size_key.second >= 1);
      CHECK(std::any_of(entry.keys.begin(), entry.keys.end(), [&](const SchemeKey& k) {
        return k.name == key && std::holds_alternative<std::int64_t>(k.default_value);
      }));
    }
  }
}

TEST_CASE("config: the memory estimate bounds every scheme's parameters", "[config][bounds]") {
  for (const std::string& scheme : position_scheme_names()) {
    for (const PositionConfig& position : test_position_configs(scheme)) {
      for (const bool tied : {true, false}) {
        RunConfig config =
            load_config({}, {"model.d_model=16", "model.n_heads=2", "model.n_layers=2",
                             "model.d_ff=24", "model.vocab=300"});
        config.model.position = position;
        config.model.tie_embeddings = tied;
        Rng rng(1);
        const TransformerLM model(config.model, rng);
        const MemoryEstimate estimate = estimate_memory(config);
        INFO(scheme << (tied ? " tied" : " untied"));
        CHECK(estimate.parameters >= 4.0 * static_cast<double>(model.parameter_count()));
        // An upper bound, not a wild one: within 3x of the real count.
        CHECK(estimate.parameters <= 3 * 4.0 * static_cast<double>(model.parameter_count()));
        CHECK(estimate.training >= 3 * estimate.parameters);  // gradients and AdamW's moments
        CHECK(estimate.activations > 0);
      }
    }
  }
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  const char* name_;
};

TEST_CASE("config: a run that would not fit in memory is refused, naming keys and estimate",
          "[config][bounds]") {
  const RunConfig config = load_config({}, {});
  {
    ScopedEnv limit("RELPOS_MEMORY_LIMIT", "1000000");  // 1 MB
    REQUIRE(available_memory_bytes() == 1e6);
    REQUIRE_THROWS_WITH(require_fits_in_memory(config),
                        Contains("would not fit in memory") && Contains("GiB") &&
                            Contains("model.d_model=128") && Contains("data.batch_size=32") &&
                            Contains("RELPOS_MEMORY_LIMIT"));
  }
  {
    ScopedEnv limit("RELPOS_MEMORY_LIMIT", "lots\nof it");
    REQUIRE_THROWS_WITH(available_memory_bytes(),
                        "RELPOS_MEMORY_LIMIT: expected a number of bytes, got 'lots\\nof it'");
  }
  // Without the override: the machine's available memory, which holds the defaults.
  REQUIRE(available_memory_bytes() > 0);
  REQUIRE_NOTHROW(require_fits_in_memory(config));
  const RunConfig huge = load_config({}, {"model.d_model=100000000", "model.n_heads=1"});
  REQUIRE_THROWS_WITH(require_fits_in_memory(huge),
                      Contains("would not fit") && Contains("model.d_model=100000000,"));
}

}  // namespace relpos
