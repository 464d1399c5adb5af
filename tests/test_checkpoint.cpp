// HDF5 checkpoints: bit-exact round trips, the on-disk layout, rotation, error
// paths, atomic replacement, and readability from Python (h5py).
#include <H5Cpp.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "autograd/ops/shape.h"
#include "tests/test_files.h"
#include "train/checkpoint.h"

using namespace relpos;
namespace fs = std::filesystem;
using testing::FileSizeLimit;
using testing::slurp;
using testing::TempDir;

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.numel() == 0) return true;  // an empty tensor may have no data pointer (memcmp: UB)
  const Tensor ca = a.contiguous();
  const Tensor cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(),
                     static_cast<std::size_t>(a.numel()) * element_size(a.dtype())) == 0;
}

void require_same_tensors(const std::map<std::string, Tensor>& actual,
                          const std::map<std::string, Tensor>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (const auto& [name, tensor] : expected) {
    INFO(name);
    REQUIRE(actual.count(name) == 1);
    REQUIRE(same_bits(actual.at(name), tensor));
  }
}

Tensor f32_tensor(const std::vector<float>& values, const Shape& shape) {
  return Tensor::from_data(values, shape);
}

Tensor i64_tensor(const std::vector<std::int64_t>& values, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::i64);
  std::copy(values.begin(), values.end(), t.data<std::int64_t>());
  return t;
}

// Values chosen to expose any rounding or conversion: subnormals, -0, extremes, NaN.
Checkpoint sample_checkpoint() {
  Checkpoint c;
  const float subnormal = std::numeric_limits<float>::denorm_min();
  c.params["blocks.0.attn.q.weight"] =
      f32_tensor({0.1f, -0.0f, subnormal, 3.4e38f, -1.0f / 3.0f, std::nanf("")}, {2, 3});
  c.params["blocks.0.attn.q.bias"] = f32_tensor({1.5f, -2.25f}, {2});
  c.params["blocks.1.mlp.fc.weight"] =
      Tensor::from_data(std::vector<double>{0.1, 1e-310, -1e300, 2.0 / 3.0}, {2, 1, 2}, DType::f64);
  c.params["positions.t5.bucket_ids"] =
      i64_tensor({std::numeric_limits<std::int64_t>::min(), -1, 0, 42,
                  std::numeric_limits<std::int64_t>::max()},
                 {5});
  c.params["final_norm.scale"] = Tensor::scalar(0.7f);
  c.params["blocks.1.mlp.fc.bias"] = Tensor::zeros({2, 0});
  c.params["head.weight"] =
      transpose(f32_tensor({1, 2, 3, 4, 5, 6}, {2, 3}), 0, 1);  // non-contiguous (3, 2) view
  c.optim["blocks.0.attn.q.weight/exp_avg"] = f32_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  c.optim["blocks.0.attn.q.weight/exp_avg_sq"] = f32_tensor({1e-8f, 0, 0, 0, 0, 7}, {2, 3});
  c.optim["final_norm.scale/step"] = Tensor::scalar(17, DType::i64);
  c.step = 1234567890123;
  c.tokens_seen = 987654321987;
  c.config_yaml = "model:\n  d_model: 64\n  position: t5  # \xc3\xa4 UTF-8\n";
  c.rng_states["data_rng"] = {1, 0, std::numeric_limits<std::uint64_t>::max(), 0x9E3779B97F4A7C15};
  c.rng_states["sampler"] = {7, 8};
  c.rng_states["unused"] = {};
  return c;
}

void require_same_checkpoint(const Checkpoint& actual, const Checkpoint& expected) {
  require_same_tensors(actual.params, expected.params);
  require_same_tensors(actual.optim, expected.optim);
  REQUIRE(actual.step == expected.step);
  REQUIRE(actual.tokens_seen == expected.tokens_seen);
  REQUIRE(actual.config_yaml == expected.config_yaml);
  REQUIRE(actual.rng_states == expected.rng_states);
  REQUIRE(actual.format_version == expected.format_version);
}

}  // namespace

TEST_CASE("checkpoint round trip is bit-exact", "[checkpoint]") {
  TempDir dir("checkpoint");
  const fs::path path = dir.path() / "ckpt.h5";
  const Checkpoint saved = sample_checkpoint();
  save_checkpoint(path, saved);
  REQUIRE(fs::exists(path));
  REQUIRE_FALSE(fs::exists(path.string() + ".tmp"));
  const Checkpoint loaded = load_checkpoint(path);
  require_same_checkpoint(loaded, saved);
  // The transposed view is stored row-major: element (i, j) of the (3, 2) view.
  REQUIRE(loaded.params.at("head.weight").to_vector() == std::vector<double>{1, 4, 2, 5, 3, 6});
  REQUIRE(loaded.params.at("final_norm.scale").shape().empty());

  SECTION("saving again replaces the file atomically") {
    Checkpoint next = saved;
    next.step += 1;
    next.params["blocks.0.attn.q.bias"] = f32_tensor({9, 9}, {2});
    save_checkpoint(path, next);
    REQUIRE_FALSE(fs::exists(path.string() + ".tmp"));
    require_same_checkpoint(load_checkpoint(path), next);
  }
}

TEST_CASE("checkpoint layout: nested groups, typed datasets, /state attributes", "[checkpoint]") {
  TempDir dir("checkpoint");
  const fs::path path = dir.path() / "ckpt.h5";
  save_checkpoint(path, sample_checkpoint());

  const H5::H5File h5(path.string(), H5F_ACC_RDONLY);
  const H5::DataSet q = h5.openDataSet("/params/blocks/0/attn/q/weight");
  REQUIRE(q.getTypeClass() == H5T_FLOAT);
  REQUIRE(q.getDataType().getSize() == 4);
  hsize_t dims[2] = {0, 0};
  REQUIRE(q.getSpace().getSimpleExtentDims(dims) == 2);
  REQUIRE(dims[0] == 2);
  REQUIRE(dims[1] == 3);
  REQUIRE(h5.openDataSet("/params/blocks/1/mlp/fc/weight").getDataType().getSize() == 8);
  REQUIRE(h5.openDataSet("/params/positions/t5/bucket_ids").getTypeClass() == H5T_INTEGER);
  REQUIRE(h5.openDataSet("/params/final_norm/scale").getSpace().getSimpleExtentType() ==
          H5S_SCALAR);
  REQUIRE(h5.nameExists("/optim/blocks/0/attn/q/weight/exp_avg_sq"));
  REQUIRE(h5.nameExists("/optim/final_norm/scale/step"));

  const H5::Group state = h5.openGroup("/state");
  std::int64_t step = 0;
  state.openAttribute("step").read(H5::PredType::NATIVE_INT64, &step);
  REQUIRE(step == 1234567890123);
  std::int64_t version = 0;
  state.openAttribute("format_version").read(H5::PredType::NATIVE_INT64, &version);
  REQUIRE(version == 1);
  const H5::Attribute rng = state.openAttribute("sampler");
  REQUIRE(rng.getSpace().getSimpleExtentNpoints() == 2);
  std::uint64_t sampler[2] = {0, 0};
  rng.read(H5::PredType::NATIVE_UINT64, sampler);
  REQUIRE(sampler[0] == 7);
  REQUIRE(sampler[1] == 8);
  REQUIRE(state.attrExists("config"));
  REQUIRE(state.attrExists("tokens_seen"));
}

TEST_CASE("checkpoint_path, latest_checkpoint and keep_last_checkpoints", "[checkpoint]") {
  TempDir dir("checkpoint");
  REQUIRE(checkpoint_path(dir.path(), 42) == dir.path() / "ckpt_00000042.h5");
  REQUIRE(checkpoint_path(dir.path(), 123456789) == dir.path() / "ckpt_123456789.h5");
  REQUIRE_THROWS_WITH(checkpoint_path(dir.path(), -1), Catch::Contains("step -1 is negative"));
  REQUIRE_FALSE(latest_checkpoint(dir.path()).has_value());
  REQUIRE_FALSE(latest_checkpoint(dir.path() / "missing").has_value());

  // A 9-digit step sorts after 99999999 by number, not by name.
  for (const std::int64_t step : {5, 100, 99999999, 123456789, 10})
    std::ofstream(checkpoint_path(dir.path(), step)) << "x";
  dir.write("notes.txt", "keep me");
  dir.write("ckpt_00000001.h5.tmp", "not a checkpoint");
  dir.write("ckpt_1.h5", "too few digits");
  REQUIRE(latest_checkpoint(dir.path()) == checkpoint_path(dir.path(), 123456789));

  keep_last_checkpoints(dir.path(), 0);
  REQUIRE(fs::exists(checkpoint_path(dir.path(), 5)));

  keep_last_checkpoints(dir.path(), 2);
  for (const std::int64_t step : {5, 10, 100})
    REQUIRE_FALSE(fs::exists(checkpoint_path(dir.path(), step)));
  REQUIRE(fs::exists(checkpoint_path(dir.path(), 99999999)));
  REQUIRE(fs::exists(checkpoint_path(dir.path(), 123456789)));
  REQUIRE(fs::exists(dir.path() / "notes.txt"));
  REQUIRE(fs::exists(dir.path() / "ckpt_00000001.h5.tmp"));
  REQUIRE(fs::exists(dir.path() / "ckpt_1.h5"));

  keep_last_checkpoints(dir.path(), 5);  // fewer than keep: nothing to delete
  REQUIRE(fs::exists(checkpoint_path(dir.path(), 99999999)));
}

TEST_CASE("load_checkpoint rejects bad files with one clear line", "[checkpoint]") {
  TempDir dir("checkpoint");
  const fs::path good = dir.path() / "good.h5";
  save_checkpoint(good, sample_checkpoint());

  SECTION("missing file") {
    REQUIRE_THROWS_WITH(load_checkpoint(dir.path() / "nope.h5"),
                        Catch::Contains("nope.h5") && Catch::Contains("no such file"));
  }
  SECTION("a text file named .h5") {
    const fs::path text = dir.write("text.h5", "model:\n  d_model: 64\n");
    REQUIRE_THROWS_WITH(load_checkpoint(text), Catch::Contains("text.h5: not an HDF5 file"));
  }
  SECTION("a checkpoint truncated to half its size") {
    fs::resize_file(good, fs::file_size(good) / 2);
    REQUIRE_THROWS_WITH(load_checkpoint(good),
                        Catch::Contains("good.h5") && Catch::Contains("truncated or corrupt") &&
                            Catch::Contains("truncated file"));
  }
  SECTION("an HDF5 file without /state") {
    H5::H5File(good.string(), H5F_ACC_RDWR).unlink("state");
    REQUIRE_THROWS_WITH(load_checkpoint(good), Catch::Contains("good.h5: no /state group"));
  }
  SECTION("a missing required attribute") {
    H5::H5File(good.string(), H5F_ACC_RDWR).openGroup("state").removeAttr("tokens_seen");
    REQUIRE_THROWS_WITH(load_checkpoint(good),
                        Catch::Contains("good.h5: /state has no attribute 'tokens_seen'"));
  }
  SECTION("an unsupported format_version") {
    {
      const H5::Group state = H5::H5File(good.string(), H5F_ACC_RDWR).openGroup("state");
      const std::int64_t future = 99;
      state.openAttribute("format_version").write(H5::PredType::NATIVE_INT64, &future);
    }
    REQUIRE_THROWS_WITH(load_checkpoint(good),
                        Catch::Contains("good.h5: format_version 99 is not supported"));
  }
}

TEST_CASE("save_checkpoint failures keep what is on disk and leave no .tmp", "[checkpoint]") {
  TempDir dir("checkpoint");
  const fs::path path = dir.path() / "ckpt.h5";
  const Checkpoint previous = sample_checkpoint();
  save_checkpoint(path, previous);
  const std::string previous_bytes = slurp(path);
  const auto require_previous_intact = [&] {
    REQUIRE(slurp(path) == previous_bytes);
    REQUIRE_FALSE(fs::exists(path.string() + ".tmp"));
    require_same_checkpoint(load_checkpoint(path), previous);
  };

  SECTION("a directory that cannot be written: a path below a regular file") {
    const fs::path below_file = path / "ckpt.h5";
    REQUIRE_THROWS_WITH(save_checkpoint(below_file, previous),
                        Catch::Contains("cannot save checkpoint " + below_file.string()) &&
                            Catch::Contains("Not a directory"));
    require_previous_intact();
  }
  SECTION("an entry that conflicts with another one, found mid-write") {
    Checkpoint conflicting = previous;
    conflicting.params["blocks.0.attn.q.weight.extra"] = Tensor::scalar(1.0f);
    REQUIRE_THROWS_WITH(save_checkpoint(path, conflicting),
                        Catch::Contains("cannot save checkpoint " + path.string()) &&
                            Catch::Contains("'blocks.0.attn.q.weight.extra' needs") &&
                            Catch::Contains("/params/blocks/0/attn/q/weight to be a group"));
    require_previous_intact();
  }
  SECTION("the disk fills up mid-write (file size limit)") {
    Checkpoint big = previous;
    big.params["embedding.weight"] = Tensor::zeros({1024, 1024});  // 4 MiB
    {
      const FileSizeLimit limit(1 << 20);
      REQUIRE_THROWS_WITH(save_checkpoint(path, big),
                          Catch::Contains("cannot save checkpoint " + path.string()) &&
                              Catch::Contains("cannot write " + path.string() +
                                              ".tmp: File too large"));
    }
    require_previous_intact();
  }
  SECTION("bad names and versions are refused") {
    Checkpoint bad = previous;
    bad.params["blocks..weight"] = Tensor::scalar(1.0f);
    REQUIRE_THROWS_WITH(save_checkpoint(path, bad), Catch::Contains("'blocks..weight'"));
    bad = previous;
    bad.optim["embed.weight/"] = Tensor::scalar(1.0f);
    REQUIRE_THROWS_WITH(save_checkpoint(path, bad),
                        Catch::Contains("'embed.weight/' must look like '<param name>/<state>'"));
    bad = previous;
    bad.rng_states["step"] = {1};
    REQUIRE_THROWS_WITH(save_checkpoint(path, bad), Catch::Contains("'step' is empty or reserved"));
    bad = previous;
    bad.format_version = 2;
    REQUIRE_THROWS_WITH(save_checkpoint(path, bad),
                        Catch::Contains("format_version 2 cannot be written"));
    require_previous_intact();
  }
}

TEST_CASE("check_params_match names the file, the parameter and both shapes", "[checkpoint]") {
  const std::map<std::string, Tensor> model = {{"embed.weight", Tensor::zeros({10, 4})},
                                               {"head.weight", Tensor::zeros({4, 10})}};
  std::map<std::string, Tensor> loaded = model;
  REQUIRE_NOTHROW(check_params_match(model, loaded, "run/ckpt.h5"));

  loaded["head.weight"] = Tensor::zeros({4, 12});
  REQUIRE_THROWS_WITH(check_params_match(model, loaded, "run/ckpt.h5"),
                      Catch::Contains("checkpoint run/ckpt.h5 does not match the model") &&
                          Catch::Contains("'head.weight' has shape [4, 12] in the checkpoint "
                                          "but [4, 10] in the model"));
  loaded = model;
  loaded.erase("embed.weight");
  REQUIRE_THROWS_WITH(check_params_match(model, loaded, "run/ckpt.h5"),
                      Catch::Contains("'embed.weight' (shape [10, 4]) is missing"));
  loaded = model;
  loaded["blocks.0.extra"] = Tensor::zeros({3});
  REQUIRE_THROWS_WITH(check_params_match(model, loaded, "run/ckpt.h5"),
                      Catch::Contains("unexpected parameter 'blocks.0.extra' (shape [3])"));
}

TEST_CASE("tools/load_checkpoint.py reads a checkpoint with h5py", "[checkpoint][python]") {
  if (std::system("/usr/bin/python3 -c 'import h5py, numpy' >/dev/null 2>&1") != 0) {
    WARN("skipped: /usr/bin/python3 with h5py and numpy is not available");
    return;
  }
  TempDir dir("checkpoint");
  const fs::path path = dir.path() / "ckpt.h5";
  Checkpoint c = sample_checkpoint();
  c.params["blocks.0.attn.q.weight"] = f32_tensor({3, 0, 0, 4}, {2, 2});  // L2 norm 5
  save_checkpoint(path, c);

  const std::string command = std::string("/usr/bin/python3 ") + RELPOS_SOURCE_DIR +
                              "/tools/load_checkpoint.py " + path.string() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = ::pclose(pipe);
  INFO(output);
  REQUIRE(status == 0);
  REQUIRE_THAT(output, Catch::Contains("step: 1234567890123"));
  REQUIRE_THAT(output, Catch::Contains("d_model: 64"));
  REQUIRE_THAT(output, Catch::Contains("rng sampler: [7, 8]"));
  REQUIRE_THAT(output,
               Catch::Contains("blocks.0.attn.q.weight shape=(2, 2) dtype=float32 norm=5\n"));
  REQUIRE_THAT(output, Catch::Contains("final_norm.scale shape=() dtype=float32"));
  REQUIRE_THAT(output, Catch::Contains("blocks.0.attn.q.weight/exp_avg shape=(2, 3)"));
}

TEST_CASE("optimizer-wide state without a parameter name round-trips as /optim/<state>",
          "[checkpoint]") {
  const TempDir dir("checkpoint_optim");
  relpos::Checkpoint c;
  c.params["embed.weight"] = relpos::Tensor::ones({2, 2});
  c.optim["step"] = relpos::Tensor::from_data(std::vector<double>{7}, {}, relpos::DType::i64);
  c.optim["embed.weight/exp_avg"] = relpos::Tensor::full({2, 2}, 0.5);
  const auto path = dir.path() / "c.h5";
  relpos::save_checkpoint(path, c);
  const relpos::Checkpoint back = relpos::load_checkpoint(path);
  REQUIRE(back.optim.size() == 2);
  REQUIRE(back.optim.at("step").item() == 7);
  REQUIRE(back.optim.at("embed.weight/exp_avg").to_vector() == std::vector<double>(4, 0.5));
}
