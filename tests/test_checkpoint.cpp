// HDF5 checkpoints: bit-exact round trips, the on-disk layout, rotation, error
// paths, atomic replacement, digests and corruption (also through the relpos
// binary), and readability from Python (h5py).
#include <H5Cpp.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "autograd/error.h"
#include "autograd/ops/shape.h"
#include "tests/checkpoint_bytes.h"
#include "tests/sample_checkpoint.h"
#include "tests/test_files.h"
#include "tests/test_process.h"
#include "tests/tiny_run.h"
#include "train/store/checkpoint.h"
#include "train/store/checkpoint_folder.h"
#include "train/store/file_digest.h"

using namespace relpos;
namespace fs = std::filesystem;
using testing::data_offset;
using testing::f32_tensor;
using testing::FileSizeLimit;
using testing::flip_byte;
using testing::i64_tensor;
using testing::redigest;
using testing::relpos_in;
using testing::RelposResult;
using testing::require_one_line_error;
using testing::sample_checkpoint;
using testing::slurp;
using testing::TempDir;
using testing::words;

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.numel() == 0) return true;  // memcmp must not see the null data of empty tensors
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
  REQUIRE(version == 2);
  const H5::Attribute rng = state.openAttribute("sampler");
  REQUIRE(rng.getSpace().getSimpleExtentNpoints() == 2);
  std::uint64_t sampler[2] = {0, 0};
  rng.read(H5::PredType::NATIVE_UINT64, sampler);
  REQUIRE(sampler[0] == 7);
  REQUIRE(sampler[1] == 8);
  REQUIRE(state.attrExists("tokens_seen"));

  // Format 2: the config as UTF-8 bytes, a digest on every dataset, checksummed metadata.
  const H5::DataSet config = h5.openDataSet("/config");
  REQUIRE(config.getTypeClass() == H5T_INTEGER);
  REQUIRE(config.getDataType().getSize() == 1);
  REQUIRE(config.getSpace().getSimpleExtentNpoints() ==
          static_cast<hssize_t>(sample_checkpoint().config_yaml.size()));
  for (const char* name : {"/config", "/params/final_norm/scale", "/optim/final_norm/scale/step",
                           "/params/blocks/1/mlp/fc/bias"})
    REQUIRE(h5.openDataSet(name).attrExists("fnv1a64"));
  REQUIRE(slurp(path)[8] == 2);  // superblock version 2: it and the object headers have checksums
  REQUIRE(slurp(digest_path(path)).rfind("fnv1a64 ", 0) == 0);
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
  SECTION("a text file named .h5, with a digest") {
    const fs::path text = dir.write("text.h5", "model:\n  d_model: 64\n");
    redigest(text);
    REQUIRE_THROWS_WITH(load_checkpoint(text), Catch::Contains("text.h5: not an HDF5 file"));
  }
  SECTION("a checkpoint truncated to half its size") {
    const auto size = fs::file_size(good);
    fs::resize_file(good, size / 2);
    REQUIRE_THROWS_WITH(
        load_checkpoint(good),
        Catch::Contains("good.h5: " + std::to_string(size / 2) +
                        " bytes, but its digest file records " + std::to_string(size)));
  }
  SECTION("a checkpoint without its digest (an interrupted save or format 1) is not trusted") {
    fs::remove(digest_path(good));
    REQUIRE_THROWS_WITH(load_checkpoint(good),
                        Catch::Contains("good.h5: no digest file " + good.string() + ".digest") &&
                            Catch::Contains("not trusted"));
  }
  SECTION("a malformed digest file") {
    dir.write("good.h5.digest", "fnv1a64 xyz 12\n");
    REQUIRE_THROWS_WITH(load_checkpoint(good), Catch::Contains("good.h5.digest is malformed"));
  }
  SECTION("an HDF5 file without /state") {
    H5::H5File(good.string(), H5F_ACC_RDWR).unlink("state");
    redigest(good);
    REQUIRE_THROWS_WITH(load_checkpoint(good), Catch::Contains("good.h5: no /state group"));
  }
  SECTION("a missing required attribute") {
    H5::H5File(good.string(), H5F_ACC_RDWR).openGroup("state").removeAttr("tokens_seen");
    redigest(good);
    REQUIRE_THROWS_WITH(load_checkpoint(good),
                        Catch::Contains("good.h5: /state has no attribute 'tokens_seen'"));
  }
  SECTION("an unsupported format_version") {
    {
      const H5::Group state = H5::H5File(good.string(), H5F_ACC_RDWR).openGroup("state");
      const std::int64_t future = 99;
      state.openAttribute("format_version").write(H5::PredType::NATIVE_INT64, &future);
    }
    redigest(good);
    REQUIRE_THROWS_WITH(load_checkpoint(good),
                        Catch::Contains("good.h5: format_version 99 is not supported"));
  }
  SECTION("a soft link, which could lead outside the tree") {
    H5::H5File(good.string(), H5F_ACC_RDWR).link(H5L_TYPE_SOFT, "/params/head", "/params/alias");
    redigest(good);
    REQUIRE_THROWS_WITH(load_checkpoint(good),
                        Catch::Contains("good.h5: /params/alias is a soft or external link"));
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
      REQUIRE_THROWS_WITH(
          save_checkpoint(path, big),
          Catch::Contains("cannot save checkpoint " + path.string()) &&
              Catch::Contains("cannot write " + path.string() + ".tmp: File too large"));
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
    bad.format_version = 1;
    REQUIRE_THROWS_WITH(save_checkpoint(path, bad),
                        Catch::Contains("format_version 1 cannot be written"));
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
    WARN("SKIPPED: /usr/bin/python3 with h5py and numpy is not available");
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

namespace {

const std::string kTinyRun = testing::tiny_run_yaml(
    {"model.d_model=8", "model.d_ff=16", "data.seq_len=8", "train.threads=0"});

}  // namespace

TEST_CASE("cli: a flipped byte in tensor data is an error, never a silent load", "[checkpoint]") {
  TempDir dir("checkpoint_flip");
  const fs::path path = dir.path() / "ckpt.h5";
  save_checkpoint(path, sample_checkpoint());
  REQUIRE(relpos_in(dir.path(), {"inspect", path.string()}).exit_code == 0);
  flip_byte(path, data_offset(path, "/params/blocks/0/attn/q/weight") + 5);

  // The whole-file digest catches it before HDF5 reads anything...
  require_one_line_error(relpos_in(dir.path(), {"inspect", path.string()}),
                         {"ckpt.h5: its content digest fnv1a64"});
  // ... and with a digest file rewritten to match, the dataset's own digest does.
  redigest(path);
  require_one_line_error(relpos_in(dir.path(), {"inspect", path.string()}),
                         {"dataset /params/blocks/0/attn/q/weight is corrupt"});
}

TEST_CASE("cli: eval refuses a trained checkpoint with one flipped parameter byte",
          "[checkpoint]") {
  TempDir dir("checkpoint_eval_flip");
  const fs::path config = dir.write("tiny.yaml", kTinyRun);
  const fs::path run = dir.path() / "run";
  REQUIRE(relpos_in(dir.path(), {"train", config.string(), "train.out_dir=" + run.string()}, 120)
              .exit_code == 0);
  const fs::path ckpt = checkpoint_path(run / "checkpoints", 4);
  REQUIRE(relpos_in(dir.path(), {"eval", ckpt.string(), "--batches", "1"}).exit_code == 0);
  flip_byte(ckpt, data_offset(ckpt, "/params/blocks/0/attn/q/weight") + 3);
  require_one_line_error(relpos_in(dir.path(), {"eval", ckpt.string(), "--batches", "1"}),
                         {"differs from the recorded"});
  redigest(ckpt);
  require_one_line_error(relpos_in(dir.path(), {"eval", ckpt.string(), "--batches", "1"}),
                         {"dataset /params/blocks/0/attn/q/weight is corrupt"});
}

TEST_CASE("cli: a truncated checkpoint and one without its digest are one-line errors",
          "[checkpoint]") {
  TempDir dir("checkpoint_truncated");
  const fs::path path = dir.path() / "ckpt.h5";
  save_checkpoint(path, sample_checkpoint());
  fs::resize_file(path, fs::file_size(path) - 100);
  require_one_line_error(relpos_in(dir.path(), {"inspect", path.string()}),
                         {"but its digest file records"});
  save_checkpoint(path, sample_checkpoint());
  fs::remove(digest_path(path));
  require_one_line_error(relpos_in(dir.path(), {"inspect", path.string()}), {"no digest file"});
}

TEST_CASE("a dataset declaring a huge shape is refused before anything is allocated",
          "[checkpoint]") {
  TempDir dir("checkpoint_huge");
  const fs::path path = dir.path() / "ckpt.h5";
  save_checkpoint(path, sample_checkpoint());
  {  // 2^40 floats (4 TiB) declared, none stored (HDF5 allocates contiguous storage late)
    const H5::H5File h5(path.string(), H5F_ACC_RDWR);
    const hsize_t dims[2] = {hsize_t{1} << 20, hsize_t{1} << 20};
    h5.openGroup("/params").createDataSet("huge", H5::PredType::IEEE_F32LE, H5::DataSpace(2, dims));
  }
  redigest(path);
  REQUIRE_THROWS_WITH(load_checkpoint(path),
                      Catch::Contains("dataset /params/huge declares shape [1048576, 1048576], "
                                      "more than the") &&
                          Catch::Contains("file holds"));
  require_one_line_error(relpos_in(dir.path(), {"inspect", path.string()}),
                         {"/params/huge declares shape"});
}

TEST_CASE("load_checkpoint shows the declared shapes to a check before reading tensors",
          "[checkpoint]") {
  TempDir dir("checkpoint_check");
  const fs::path path = dir.path() / "ckpt.h5";
  save_checkpoint(path, sample_checkpoint());
  std::map<std::string, Shape> seen;
  std::string config;
  const auto refuse = [&](const std::string& yaml, const std::map<std::string, Shape>& shapes) {
    config = yaml;
    seen = shapes;
    check_shapes_match({{"head.weight", {2, 3}}}, shapes, path.string());
  };
  REQUIRE_THROWS_WITH(load_checkpoint(path, refuse),
                      Catch::Contains("does not match the model") &&
                          Catch::Contains("'head.weight' has shape [3, 2] in the checkpoint but "
                                          "[2, 3] in the model"));
  REQUIRE(config == sample_checkpoint().config_yaml);
  REQUIRE(seen.size() == sample_checkpoint().params.size());
  REQUIRE(seen.at("blocks.1.mlp.fc.weight") == Shape{2, 1, 2});
  REQUIRE(seen.at("final_norm.scale").empty());
}

TEST_CASE("cli: --resume falls back to the newest checkpoint that verifies, and says so",
          "[checkpoint]") {
  TempDir dir("checkpoint_fallback");
  const fs::path config = dir.write("tiny.yaml", kTinyRun);
  const fs::path run = dir.path() / "run";
  const std::string train = "train " + config.string() + " train.out_dir=" + run.string();
  REQUIRE(relpos_in(dir.path(), words(train), 120).exit_code == 0);
  const fs::path newest = checkpoint_path(run / "checkpoints", 4);
  REQUIRE(fs::exists(checkpoint_path(run / "checkpoints", 2)));
  flip_byte(newest, fs::file_size(newest) / 2);

  const RelposResult r =
      relpos_in(dir.path(), words(train + " train.steps=6 --resume " + run.string()));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE_THAT(r.err, Catch::Contains("relpos: skipping checkpoint " + newest.string() +
                                      ": its content digest"));
  REQUIRE_THAT(r.out,
               Catch::Contains("resumed from " + checkpoint_path(run / "checkpoints", 2).string() +
                               " at step 2"));

  // When none verifies, the resume is refused.
  for (const std::int64_t step : {2, 4, 6})
    fs::remove(digest_path(checkpoint_path(run / "checkpoints", step)));
  const RelposResult none =
      relpos_in(dir.path(), words(train + " train.steps=8 --resume " + run.string()));
  INFO(none.err);
  REQUIRE(none.exit_code == 2);
  // Steps 6 and 4 are skipped (rotation, keep_checkpoints=2, deleted step 2), then the error.
  REQUIRE(std::count(none.err.begin(), none.err.end(), '\n') == 3);
  REQUIRE_THAT(none.err, Catch::Contains("relpos: error: --resume: no checkpoint in"));
}
