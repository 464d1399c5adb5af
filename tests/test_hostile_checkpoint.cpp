// Issue 28: checkpoints whose digests were recomputed after a hostile edit. The
// reader stays in its file (no external storage, no external link at any level),
// every /state value is in range and of the type written, names are unique,
// parameters are never converted, and eval/sample/resume refuse values that make
// no sense (NaN weights, an lr_halvings of 2^64-1, an all-zero sampler state).
#include <H5Cpp.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <limits>

#include "tests/checkpoint_bytes.h"
#include "tests/test_files.h"
#include "tests/test_process.h"
#include "tests/tiny_run.h"
#include "train/store/checkpoint.h"
#include "train/store/file_digest.h"

using namespace relpos;
namespace fs = std::filesystem;
using testing::redigest;
using testing::relpos_in;
using testing::require_one_line_error;
using testing::slurp;
using testing::TempDir;

namespace {

Checkpoint small_checkpoint() {
  Checkpoint c;
  c.params["a.b"] = Tensor::from_data(std::vector<float>{1, 2, 3, 4}, {4});
  c.config_yaml = "model: {}\n";
  c.rng_states["data_sampler"] = {1, 2, 3, 4, 0};
  return c;
}

// Adds `name` below `group`, 4 floats of zeros, with its fnv1a64 attribute, created
// with `creation` (e.g. external storage).
void add_zeros_dataset(const H5::Group& group, const std::string& name,
                       const H5::DSetCreatPropList& creation) {
  const hsize_t dims[1] = {4};
  H5::DataSet d =
      group.createDataSet(name, H5::PredType::IEEE_F32LE, H5::DataSpace(1, dims), creation);
  const float zeros[4] = {0, 0, 0, 0};
  const std::uint64_t digest = fnv1a64(std::span(reinterpret_cast<const char*>(zeros), 16));
  d.createAttribute("fnv1a64", H5::PredType::STD_U64LE, H5::DataSpace())
      .write(H5::PredType::NATIVE_UINT64, &digest);
}

}  // namespace

TEST_CASE("hostile checkpoint: external storage and external links are refused",
          "[hostile][checkpoint]") {
  TempDir dir("hostile_external");
  const fs::path zeros = dir.write("zeros.bin", std::string(16, '\0'));
  const fs::path path = dir.path() / "ckpt.h5";
  save_checkpoint(path, small_checkpoint());
  {  // a dataset whose 16 bytes live in zeros.bin (before: read from there, accepted)
    const H5::H5File h5(path.string(), H5F_ACC_RDWR);
    H5::DSetCreatPropList creation;
    REQUIRE(H5Pset_external(creation.getId(), zeros.c_str(), 0, 16) >= 0);
    add_zeros_dataset(h5.openGroup("/params"), "outside", creation);
  }
  redigest(path);
  REQUIRE_THROWS_WITH(load_checkpoint(path),
                      Catch::Contains("/params/outside keeps its data in an external file"));

  // /params itself an external link into another checkpoint (before: followed).
  const fs::path other = dir.path() / "other.h5", linked = dir.path() / "linked.h5";
  save_checkpoint(other, small_checkpoint());
  save_checkpoint(linked, small_checkpoint());
  {
    const H5::H5File h5(linked.string(), H5F_ACC_RDWR);
    REQUIRE(H5Ldelete(h5.getId(), "params", H5P_DEFAULT) >= 0);
    REQUIRE(H5Lcreate_external(other.c_str(), "/params", h5.getId(), "params", H5P_DEFAULT,
                               H5P_DEFAULT) >= 0);
  }
  redigest(linked);
  REQUIRE_THROWS_WITH(load_checkpoint(linked),
                      Catch::Contains("/params is a soft or external link"));
}

TEST_CASE("hostile checkpoint: a virtual dataset is refused, in one line",
          "[hostile][checkpoint]") {
  TempDir dir("hostile_virtual");
  const fs::path path = dir.path() / "ckpt.h5";
  save_checkpoint(path, small_checkpoint());
  {  // /params/view: a virtual dataset whose 4 floats are /params/a/b of the same file
    const H5::H5File h5(path.string(), H5F_ACC_RDWR);
    const hsize_t dims[1] = {4};
    const H5::DataSpace space(1, dims);
    H5::DSetCreatPropList creation;
    REQUIRE(H5Pset_virtual(creation.getId(), space.getId(), ".", "/params/a/b", space.getId()) >=
            0);
    add_zeros_dataset(h5.openGroup("/params"), "view", creation);
    REQUIRE(h5.openDataSet("/params/view").getCreatePlist().getLayout() == H5D_VIRTUAL);
  }
  redigest(path);
  REQUIRE_THROWS_WITH(load_checkpoint(path),
                      Catch::Contains("checkpoint " + path.string() +
                                      ": dataset /params/view is not stored contiguously"));
  try {
    load_checkpoint(path);
  } catch (const std::exception& e) {
    REQUIRE(std::string(e.what()).find('\n') == std::string::npos);
  }
}

TEST_CASE("hostile checkpoint: /state counters are int64 and >= 0, names unique",
          "[hostile][checkpoint]") {
  TempDir dir("hostile_state");
  const fs::path path = dir.path() / "ckpt.h5";
  SECTION("a step of 2^64-1 stored as uint64 (before: clamped to 2^63-1)") {
    save_checkpoint(path, small_checkpoint());
    {
      const H5::H5File h5(path.string(), H5F_ACC_RDWR);
      H5::Group state = h5.openGroup("/state");
      state.removeAttr("step");
      const std::uint64_t huge = std::numeric_limits<std::uint64_t>::max();
      state.createAttribute("step", H5::PredType::STD_U64LE, H5::DataSpace())
          .write(H5::PredType::NATIVE_UINT64, &huge);
    }
    redigest(path);
    REQUIRE_THROWS_WITH(load_checkpoint(path),
                        Catch::Contains("/state attribute 'step' must be a single int64"));
  }
  SECTION("a negative step") {
    Checkpoint c = small_checkpoint();
    c.step = -5;
    save_checkpoint(path, c);
    REQUIRE_THROWS_WITH(load_checkpoint(path),
                        Catch::Contains("step -5") && Catch::Contains("must both be >= 0"));
  }
  SECTION("a dotted dataset name that repeats a nested one (before: one silently dropped)") {
    save_checkpoint(path, small_checkpoint());
    {
      const H5::H5File h5(path.string(), H5F_ACC_RDWR);
      add_zeros_dataset(h5.openGroup("/params"), "a.b", H5::DSetCreatPropList());
    }
    redigest(path);
    REQUIRE_THROWS_WITH(load_checkpoint(path), Catch::Contains("the name 'a.b' is stored twice"));
  }
}

TEST_CASE("hostile checkpoint: parameters of another dtype are refused, not converted",
          "[hostile][checkpoint]") {
  const std::map<std::string, Tensor> model = {{"w", Tensor::zeros({2})}};
  for (const DType wrong : {DType::i64, DType::u8, DType::f64}) {
    const std::map<std::string, Tensor> loaded = {{"w", Tensor::zeros({2}).to(wrong)}};
    REQUIRE_THROWS_WITH(check_params_match(model, loaded, "c.h5"),
                        Catch::Contains("parameter 'w' is " + std::string(name_of(wrong)) +
                                        " in the checkpoint but f32 in the model"));
  }
  REQUIRE_NOTHROW(check_params_match(model, model, "c.h5"));
}

TEST_CASE("hostile checkpoint: NaN weights, a huge lr_halvings and a zero sampler are refused",
          "[hostile][checkpoint][cli]") {
  TempDir box("hostile_values");
  box.write("tiny.yaml", relpos::testing::tiny_run_yaml());
  REQUIRE(relpos_in(box.path(), {"train", "tiny.yaml", "train.out_dir=run"}).exit_code == 0);
  const Checkpoint trained = load_checkpoint(box.path() / "run/checkpoints/ckpt_00000004.h5");
  const auto edited = [&](const std::string& name, const auto& edit) {
    Checkpoint c = trained;
    edit(c);
    const fs::path path = box.path() / name;
    save_checkpoint(path, c);
    return path.string();
  };
  const std::string name = trained.params.rbegin()->first;
  for (const float bad : {std::nanf(""), std::numeric_limits<float>::infinity()}) {
    const std::string nan = edited("nan.h5", [&](Checkpoint& c) {
      Tensor weights = c.params.at(name).clone();
      weights.data<float>()[0] = bad;
      c.params[name] = weights;
    });
    // Before: exit 0, one byte printed over and over.
    require_one_line_error(relpos_in(box.path(), {"sample", nan, "--prompt", "a", "--tokens", "4"}),
                           {"'" + name + "' holds NaN or Inf"});
    require_one_line_error(relpos_in(box.path(), {"eval", nan, "--batches", "1"}),
                           {"'" + name + "' holds NaN or Inf"});
  }
  const std::string halvings = edited("halvings.h5", [](Checkpoint& c) {
    c.rng_states["lr_halvings"] = {std::numeric_limits<std::uint64_t>::max()};
  });
  // Before: accepted, the learning rate doubled (0.5^-1).
  require_one_line_error(relpos_in(box.path(), {"train", "tiny.yaml", "train.out_dir=run",
                                                "train.steps=6", "--resume", halvings}),
                         {"lr_halvings", "[1, 1023]"});
  const std::string zero = edited("zero.h5", [](Checkpoint& c) {
    c.rng_states["data_sampler"] = {0, 0, 0, 0, 7};
  });
  require_one_line_error(relpos_in(box.path(), {"train", "tiny.yaml", "train.out_dir=run",
                                                "train.steps=6", "--resume", zero}),
                         {"zero.h5", "all 0"});
}

TEST_CASE("hostile checkpoint: links and attributes stay in object headers; dense storage refused",
          "[hostile][checkpoint]") {
  TempDir dir("hostile_dense");
  const fs::path path = dir.path() / "ckpt.h5";
  Checkpoint c = small_checkpoint();
  for (int i = 0; i < 20; ++i)
    c.params["many." + std::to_string(i)] =
        Tensor::from_data(std::vector<float>{static_cast<float>(i)}, {1});
  for (std::uint64_t i = 0; i < 12; ++i) c.rng_states["stream" + std::to_string(i)] = {i};
  save_checkpoint(path, c);
  // HDF5 would keep the 20 links of /params/many and the 15 attributes of /state in
  // dense storage (a fractal heap and B-trees) by default; relpos keeps them compact.
  REQUIRE(slurp(path).find("FRHP") == std::string::npos);
  const Checkpoint loaded = load_checkpoint(path);
  REQUIRE(loaded.params.size() == 21);
  REQUIRE(loaded.rng_states.size() == 13);

  {  // a group created with HDF5's defaults: its 9 links move to dense storage
    const H5::H5File h5(path.string(), H5F_ACC_RDWR);
    const H5::Group dense = h5.openGroup("/params").createGroup("dense");
    for (int i = 0; i < 9; ++i) dense.createGroup("g" + std::to_string(i));
  }
  REQUIRE(slurp(path).find("FRHP") != std::string::npos);
  redigest(path);
  REQUIRE_THROWS_WITH(load_checkpoint(path),
                      Catch::Contains("checkpoint " + path.string() +
                                      ": /params/dense: the link info message at byte") &&
                          Catch::Contains("names dense storage"));
}

TEST_CASE("hostile checkpoint: each datatype relpos writes passes its own allow-list",
          "[hostile][checkpoint]") {
  // The reader accepts five datatype encodings only (train/store/hdf5_message_check.cpp);
  // each is written here (f32, f64, i64 and u8 datasets; i64 and u64 attributes) and read
  // back as it was.
  TempDir dir("hostile_dtypes");
  const fs::path path = dir.path() / "ckpt.h5";
  Checkpoint c = small_checkpoint();
  for (const DType dtype : {DType::f64, DType::i64, DType::u8})
    c.params["as_" + std::string(name_of(dtype))] =
        Tensor::from_data(std::vector<float>{1, 2, 3}, {3}).to(dtype);
  // Empty ones too: HDF5 allocates no storage for them (an undefined address).
  c.params["empty"] = Tensor::zeros({0, 3});
  c.rng_states["none"] = {};
  save_checkpoint(path, c);
  const Checkpoint loaded = load_checkpoint(path);
  for (const auto& [name, tensor] : c.params) {
    REQUIRE(loaded.params.at(name).shape() == tensor.shape());
    REQUIRE(loaded.params.at(name).dtype() == tensor.dtype());
    REQUIRE(loaded.params.at(name).to_vector() == tensor.to_vector());
  }
  REQUIRE(loaded.rng_states == c.rng_states);
}
