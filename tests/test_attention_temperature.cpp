// Attention temperature (model.attention_temperature, layers/attention_temperature.h): the
// factors and the config, learned's exact start at 1, an fp64 gradcheck of q, k, v and the
// learned scale, flash = fused = composed in a model, KV-cache decoding and segment memory
// equal to the full recompute, the PyTorch reference (tests/fixtures/temperature/), and
// one-line errors naming the key.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "decoding_check.h"
#include "fixture.h"
#include "layers/attention_temperature.h"
#include "layers/transformer.h"
#include "reference_scheme.h"
#include "scheme_harness.h"
#include "test_helpers.h"
#include "tests/test_files.h"
#include "tests/test_process.h"
#include "tests/tiny_run.h"
#include "train/config/config.h"

using namespace relpos;
using Catch::Contains;
using testing::largest_difference;

namespace {

AttentionTemperatureConfig temperature_of(const std::string& kind, std::int64_t train_len = 0) {
  AttentionTemperatureConfig t;
  t.kind = kind;
  t.train_len = train_len;
  return t;
}

// Two layers of `scheme` with the temperature, 4 heads.
ModelConfig small_model(const std::string& scheme, const std::string& kind, AttentionPath path) {
  ModelConfig c;
  c.vocab = 32;
  c.d_model = 16;
  c.n_layers = 2;
  c.n_heads = 4;
  c.d_ff = 32;
  c.attention_path = path;
  c.position = test_position_configs(scheme)[0];
  c.attention_temperature = temperature_of(kind, kind == "log_length" ? 5 : 0);
  return c;
}

// learned's parameters set away from 0 (factors 0.5 .. 2), so that they change the logits.
void spread_learned_scales(const TransformerLM& model) {
  NoGradGuard no_grad;
  for (const NamedParameter& p : model.parameters())
    if (p.name.ends_with(".attn.temperature"))
      for (std::int64_t h = 0; h < p.tensor.numel(); ++h)
        p.tensor.data<float>()[h] = static_cast<float>(std::log(0.5) + 0.45 * h);
}

}  // namespace

TEST_CASE("attention temperature: log_length's factors, learned's parameter",
          "[attention][temperature]") {
  // ln(n) / ln(8) for the 1-based positions n = 4..7 (0-based 3..6).
  const auto f = log_length_factors(3, 4, 8, DType::f64).to_vector();
  REQUIRE(f.size() == 4);
  for (std::int64_t i = 0; i < 4; ++i)
    CHECK(f[static_cast<std::size_t>(i)] == std::log(4.0 + static_cast<double>(i)) / std::log(8.0));
  CHECK(log_length_factors(0, 1, 8, DType::f64).to_vector()[0] == 0.0);  // n = 1
  CHECK(log_length_factors(7, 1, 8, DType::f64).to_vector()[0] == 1.0);  // n = L_train
  // learned: one zero-initialised parameter (H) per layer, not a position parameter.
  Rng rng(3);
  TransformerLM model(small_model("none", "learned", AttentionPath::flash), rng);
  std::set<std::string> names;
  for (const NamedParameter& p : model.parameters())
    if (p.name.ends_with("temperature")) {
      names.insert(p.name);
      CHECK(p.tensor.shape() == Shape{4});
      CHECK(p.tensor.to_vector() == std::vector<double>(4, 0.0));
      CHECK_FALSE(is_position_parameter(p.name));
    }
  CHECK(names == std::set<std::string>{"blocks.0.attn.temperature", "blocks.1.attn.temperature"});
}

TEST_CASE("attention temperature: learned starts as none, bit for bit",
          "[attention][temperature]") {
  for (const std::string scheme : {"none", "rope", "t5"}) {
    INFO(scheme);
    Rng a(11), b(11), data(12);
    TransformerLM plain(small_model(scheme, "none", AttentionPath::flash), a);
    TransformerLM learned(small_model(scheme, "learned", AttentionPath::flash), b);
    const Tensor tokens = testing::random_ids(2, 9, 32, data);
    NoGradGuard no_grad;
    CHECK(plain.forward(tokens).to_vector() == learned.forward(tokens).to_vector());
  }
}

TEST_CASE("gradcheck: attention with temperature, q, k, v and the learned scale",
          "[attention][temperature][gradcheck]") {
  Rng rng(21);
  const ModelDims dims{8, 2, 1, true, 4};
  // ALiBi: a bias the temperature leaves alone; RoPE: a rotation it commutes with. Three
  // queries after four earlier keys (start 4), train_len 3: factors on both sides of 1.
  for (const std::string scheme : {"alibi", "rope"}) {
    for (const std::string kind : {"log_length", "learned"}) {
      INFO(scheme << " " << kind);
      const auto s = make_position_scheme(test_position_configs(scheme)[0], dims, rng);
      const AttentionTemperatureConfig t = temperature_of(kind, 3);
      std::vector<Tensor> x{testing::leaf({1, 2, 3, 4}, rng), testing::leaf({1, 2, 7, 4}, rng),
                            testing::leaf({1, 2, 7, 4}, rng)};
      if (kind == "learned") x.push_back(testing::leaf({2}, rng, 0.5));
      for (AttentionPath path : {AttentionPath::flash, AttentionPath::composed}) {
        INFO(name_of(path));
        testing::require_gradcheck(
            [&](const std::vector<Tensor>& in) {
              const Tensor q = apply_attention_temperature(t, s->rotate(in[0], 4), 4,
                                                           in.size() > 3 ? in[3] : Tensor());
              return scaled_attention(q, s->rotate(in[1], 0), in[2], s->terms(0, 3, 7), true, path);
            },
            x);
      }
    }
  }
}

TEST_CASE("attention temperature in a model: flash = fused = composed, logits and gradients",
          "[attention][temperature]") {
  for (const std::string scheme : {"none", "rope", "alibi", "t5", "shaw", "xl", "fire"}) {
    for (const std::string kind : {"log_length", "learned"}) {
      INFO(scheme << " " << kind);
      Rng data(31);
      const Tensor tokens = testing::random_ids(2, 11, 32, data);
      std::vector<Tensor> logits, grads;
      for (AttentionPath path :
           {AttentionPath::flash, AttentionPath::fused, AttentionPath::composed}) {
        Rng rng(30);
        TransformerLM model(small_model(scheme, kind, path), rng);
        spread_learned_scales(model);
        const Tensor out = model.forward(tokens);  // (2, 11, 32)
        backward(sum(mul(out, out)));
        logits.push_back(out.detach());
        for (const NamedParameter& p : model.parameters())
          if (p.name == "blocks.0.attn.q.weight" || p.name.ends_with(".attn.temperature"))
            grads.push_back(p.tensor.grad());
      }
      const std::size_t per_path = grads.size() / 3;
      for (std::size_t path = 1; path < 3; ++path) {
        CHECK(largest_difference(logits[path], logits[0]) <= 2e-5);
        for (std::size_t g = 0; g < per_path; ++g)
          CHECK(largest_difference(grads[path * per_path + g], grads[g]) <= 2e-4);
      }
    }
  }
}

TEST_CASE("attention temperature: KV-cache decoding and segment memory equal full recompute",
          "[attention][temperature][decode]") {
  for (const std::string scheme : {"none", "rope", "alibi", "xl"}) {
    for (const std::string kind : {"log_length", "learned"}) {
      INFO(scheme << " " << kind);
      Rng rng(41);
      TransformerLM model(small_model(scheme, kind, AttentionPath::flash), rng);
      spread_learned_scales(model);
      model.set_training(false);
      NoGradGuard no_grad;
      const std::int64_t len = 12;
      const Tensor tokens = testing::random_ids(2, len, 32, rng);
      const Tensor full = model.forward(tokens);  // (2, L, V)
      // KV cache and segment memory: query position n counts from the sequence start.
      testing::require_decoding_equals_full(model, tokens, full);
      // The temperature matters: the same weights without it give other logits.
      Rng same(41);
      ModelConfig plain_config = small_model(scheme, "none", AttentionPath::flash);
      TransformerLM plain(plain_config, same);
      CHECK(largest_difference(plain.forward(tokens), full) > 1e-4);
      // Segment-recurrent training counts positions from the oldest memory entry: refused.
      std::vector<Tensor> memory;
      if (kind == "log_length")
        REQUIRE_THROWS_WITH(forward_segment(model, tokens, memory, 6),
                            Contains("model.attention_temperature.kind=log_length"));
    }
  }
}

TEST_CASE("attention temperature matches the PyTorch reference: outputs and all gradients",
          "[attention][temperature][reference]") {
  const std::vector<std::string> names = testing::attention_fixtures("temperature");
  REQUIRE(names.size() >= 10);
  for (const std::string& name : names) {
    const testing::Fixture f = testing::load_fixture(name, "temperature");
    const std::int64_t q_len = f.config["Lq"], k_len = f.config["Lk"];
    const std::int64_t start = k_len - q_len;
    const AttentionTemperatureConfig t =
        temperature_of(f.config["temperature"], f.config.value("train_len", std::int64_t{0}));
    AttentionChunk band;
    band.window = f.config.value("window", std::int64_t{0});
    for (DType dtype : {DType::f64, DType::f32})
      for (AttentionPath path :
           {AttentionPath::flash, AttentionPath::fused, AttentionPath::composed}) {
        INFO(name << " " << name_of(path) << " " << name_of(dtype));
        testing::ReferenceScheme r = testing::reference_scheme(f, dtype);
        if (t.kind == "learned") r.leaves["temperature"] = f.leaf("temperature", dtype);
        const Tensor q =
            apply_attention_temperature(t, r.scheme->rotate(r.leaves["q"], start), start,
                                        t.kind == "learned" ? r.leaves["temperature"] : Tensor());
        const Tensor out = scaled_attention(q, r.scheme->rotate(r.leaves["k"], 0), r.leaves["v"],
                                            r.scheme->terms(0, q_len, k_len), true, path, band);
        testing::require_matches_fixture(f, r, out, dtype, dtype == DType::f64 ? 1e-9 : 1e-4);
      }
  }
}

TEST_CASE("attention temperature config: train_len defaults to data.seq_len and is kept",
          "[config][temperature]") {
  const RunConfig c =
      load_config({}, {"data.seq_len=48", "model.attention_temperature.kind=log_length"});
  CHECK(c.model.attention_temperature.train_len == 48);
  // Saved with the checkpoint: evaluation at another length keeps the training length.
  const RunConfig back = config_from_yaml(to_yaml(c), "saved");
  CHECK(back.model.attention_temperature == c.model.attention_temperature);
  CHECK(load_config({}, {"data.seq_len=48", "model.attention_temperature.kind=log_length",
                         "model.attention_temperature.train_len=20"})
            .model.attention_temperature.train_len == 20);
  CHECK(load_config({}, {}).model.attention_temperature == AttentionTemperatureConfig{});
  REQUIRE_THROWS_WITH(
      load_config({}, {"model.attention_temperature.kind=hot"}),
      Contains("model.attention_temperature.kind: expected one of none, log_length, "
               "learned, got 'hot'"));
  REQUIRE_THROWS_WITH(load_config({}, {"model.attention_temperature.kind=log_length",
                                       "model.attention_temperature.train_len=1"}),
                      Contains("model.attention_temperature.train_len must be >= 2"));
  REQUIRE_THROWS_WITH(
      load_config({}, {"model.attention_temperature.kind=log_length", "model.causal=false"}),
      Contains("model.attention_temperature.kind=log_length needs model.causal"));
}

TEST_CASE("cli: attention temperature errors are one line, exit 2, naming the key",
          "[cli][temperature]") {
  testing::TempDir dir("temperature_cli");
  const std::string config = dir.write("run.yaml", testing::tiny_run_yaml()).string();
  testing::require_one_line_error(
      testing::relpos_in(dir.path(), {"train", config, "model.attention_temperature.kind=warm"}),
      {"model.attention_temperature.kind", "'warm'"});
  testing::require_one_line_error(
      testing::relpos_in(
          dir.path(),
          {"train", config, "model.attention_temperature.kind=log_length", "train.mem_len=8"}),
      {"train.mem_len=8", "model.attention_temperature.kind=log_length"});
}
