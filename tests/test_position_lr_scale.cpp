// optim.position_lr_scale: the learning rate of the position parameters (the position
// scheme's, named position.*) is lr times the scale; 0 freezes exactly them, 1 changes
// nothing, and any scale leaves the other parameters' first update alone.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "layers/transformer.h"
#include "tests/test_files.h"
#include "tests/tiny_run.h"
#include "train/trainer.h"

using namespace relpos;
using testing::TempDir;

namespace {

// Every parameter's values, by name, after `steps` training steps of the tiny run with
// `changes`.
std::map<std::string, std::vector<double>> trained(const std::vector<std::string>& changes,
                                                   std::int64_t steps, bool initial = false) {
  const TempDir box("position_lr_scale");
  std::vector<std::string> all = changes;
  all.push_back("train.out_dir=" + (box.path() / "run").string());
  all.push_back("train.steps=" + std::to_string(steps));
  RunState run = build_run(testing::tiny_run_config(all));
  if (!initial) train(run);
  std::map<std::string, std::vector<double>> values;
  for (const NamedParameter& p : run.model->parameters()) values[p.name] = p.tensor.to_vector();
  return values;
}

const std::vector<std::vector<std::string>> kSchemes = {
    {"model.position.scheme=t5", "model.position.max_distance=32"},
    {"model.position.scheme=shaw"},
    {"model.position.scheme=xl"},
    {"model.position.scheme=kerple"},
    {"model.position.scheme=learned", "model.position.max_len=16"}};

}  // namespace

TEST_CASE("position_lr_scale 0 freezes exactly the position parameters",
          "[optim][position_lr_scale]") {
  for (const std::vector<std::string>& scheme : kSchemes) {
    INFO(scheme[0]);
    std::vector<std::string> frozen = scheme;
    frozen.push_back("optim.position_lr_scale=0");
    const auto before = trained(frozen, 4, true);
    const auto after = trained(frozen, 4);
    std::size_t position_parameters = 0;
    for (const auto& [name, values] : after) {
      INFO(name);
      if (is_position_parameter(name)) {
        ++position_parameters;
        CHECK(values == before.at(name));  // bit for bit
      } else {
        CHECK(values != before.at(name));
      }
    }
    CHECK(position_parameters > 0);
  }
}

TEST_CASE("position_lr_scale 1 changes nothing; another scale only the position parameters",
          "[optim][position_lr_scale]") {
  for (const std::vector<std::string>& scheme : kSchemes) {
    INFO(scheme[0]);
    std::vector<std::string> one = scheme, three = scheme;
    one.push_back("optim.position_lr_scale=1");
    three.push_back("optim.position_lr_scale=3");
    CHECK(trained(one, 4) == trained(scheme, 4));  // bit for bit
    // After one step every gradient is still the same: only the position parameters moved
    // differently.
    const auto plain = trained(scheme, 1);
    for (const auto& [name, values] : trained(three, 1)) {
      INFO(name);
      if (is_position_parameter(name))
        CHECK(values != plain.at(name));
      else
        CHECK(values == plain.at(name));
    }
  }
  REQUIRE_THROWS_WITH(testing::tiny_run_config({"optim.position_lr_scale=-1"}),
                      Catch::Contains("optim.position_lr_scale must be finite and >= 0, got -1"));
}
