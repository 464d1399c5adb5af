// Optimizers (SGD, Adam, AdamW) against PyTorch trajectories, schedules,
// gradient clipping and bit-exact state save/restore.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "autograd/error.h"
#include "autograd/tape.h"
#include "autograd/threads.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
#include "test_helpers.h"

using namespace relpos;
using nlohmann::json;

namespace {

const json& fixture() {
  static const json data = [] {
    const std::string path =
        std::string(RELPOS_SOURCE_DIR) + "/tests/fixtures/optim/optim_reference.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    return json::parse(in);
  }();
  return data;
}

// The fixture's problem: parameters with loss sum(0.5 coef (p - target)^2 + 0.025 p^4).
struct Problem {
  std::vector<NamedParameter> params;
  std::vector<std::vector<double>> coef, target;
};

Problem make_problem(DType dtype) {
  Problem problem;
  for (const json& p : fixture()["params"]) {
    Tensor t =
        Tensor::from_data(p["init"].get<std::vector<double>>(), p["shape"].get<Shape>(), dtype);
    t.set_requires_grad(true);
    problem.params.push_back({p["name"].get<std::string>(), t, p["decay"].get<bool>()});
    problem.coef.push_back(p["coef"].get<std::vector<double>>());
    problem.target.push_back(p["target"].get<std::vector<double>>());
  }
  return problem;
}

// Sets grad = coef * (p - target) + 0.1 p^3 (in double, then rounded to the
// parameter's dtype), except for the parameters the fixture leaves without a
// gradient at this step.
void set_grads(const Problem& problem, int step) {
  const json& no_grad = fixture()["no_grad_steps"];
  for (std::size_t k = 0; k < problem.params.size(); ++k) {
    const NamedParameter& p = problem.params[k];
    p.tensor.zero_grad();
    if (no_grad.contains(p.name) &&
        no_grad[p.name].get<std::vector<int>>() == std::vector<int>{step})
      continue;
    std::vector<double> g = p.tensor.to_vector();
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double x = g[i];
      g[i] = problem.coef[k][i] * (x - problem.target[k][i]) + 0.1 * x * x * x;
    }
    p.tensor.set_grad(Tensor::from_data(g, p.tensor.shape(), p.tensor.dtype()));
  }
}

std::unique_ptr<Optimizer> make_optimizer(const json& c, std::vector<NamedParameter> params) {
  const json& o = c["options"];
  const std::string kind = c["optimizer"];
  if (kind == "sgd")
    return std::make_unique<Sgd>(std::move(params), SgdOptions{.momentum = o["momentum"],
                                                               .nesterov = o["nesterov"],
                                                               .weight_decay = o["weight_decay"]});
  const AdamOptions options{
      .beta1 = o["beta1"], .beta2 = o["beta2"], .eps = o["eps"], .weight_decay = o["weight_decay"]};
  if (kind == "adam") return std::make_unique<Adam>(std::move(params), options);
  return std::make_unique<AdamW>(std::move(params), options);
}

void require_relative(const std::vector<double>& actual, const std::vector<double>& expected,
                      double rel, double abs) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i << ": " << actual[i] << " vs " << expected[i]);
    REQUIRE(std::abs(actual[i] - expected[i]) <= rel * std::abs(expected[i]) + abs);
  }
}

std::vector<double> values(const Tensor& t) { return t.to_vector(); }

std::vector<std::vector<double>> snapshot(const std::vector<NamedParameter>& params) {
  std::vector<std::vector<double>> out;
  for (const NamedParameter& p : params) out.push_back(values(p.tensor));
  return out;
}

std::vector<NamedParameter> clone_params(const std::vector<NamedParameter>& params) {
  std::vector<NamedParameter> out;
  for (const NamedParameter& p : params) {
    Tensor t = p.tensor.clone();
    t.set_requires_grad(true);
    out.push_back({p.name, t, p.decay});
  }
  return out;
}

// A one-parameter problem: f64 values 0.1 * (i % 13 - 6) with gradient `grad`.
NamedParameter simple_param(const std::string& name, std::int64_t n, double grad,
                            bool decay = true) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.1 * (static_cast<double>(i % 13) - 6.0);
  Tensor t = Tensor::from_data(v, {n}, DType::f64);
  t.set_requires_grad(true);
  t.set_grad(Tensor::full({n}, grad, DType::f64));
  return {name, t, decay};
}

}  // namespace

TEST_CASE("optimizer trajectories match PyTorch", "[optim]") {
  for (const auto& [case_name, c] : fixture()["cases"].items()) {
    const bool f64 = c["dtype"] == "f64";
    // f64: the task's bound; f32: a few ulps of drift over 5 steps.
    const double rel = f64 ? 1e-6 : 2e-5, abs = f64 ? 1e-12 : 1e-6;
    INFO("case " << case_name);
    Problem problem = make_problem(f64 ? DType::f64 : DType::f32);
    std::unique_ptr<Optimizer> opt = make_optimizer(c, problem.params);
    const auto lrs = c["lrs"].get<std::vector<double>>();
    for (std::size_t step = 0; step < lrs.size(); ++step) {
      set_grads(problem, static_cast<int>(step));
      opt->step(lrs[step]);
      for (const NamedParameter& p : problem.params) {
        INFO("step " << step << ", parameter " << p.name);
        require_relative(values(p.tensor), c["trajectory"][step][p.name], rel, abs);
      }
    }
    const std::map<std::string, Tensor> state = opt->state();
    REQUIRE(state.size() == c["final_state"].size() + 1);
    REQUIRE(state.at("step").item() == static_cast<double>(lrs.size()));
    for (const auto& [key, expected] : c["final_state"].items()) {
      INFO("state " << key);
      REQUIRE(state.count(key) == 1);
      require_relative(values(state.at(key)), expected.get<std::vector<double>>(), rel, abs);
    }
  }
}

TEST_CASE("AdamW applies decoupled weight decay only to decay=true parameters", "[optim]") {
  const AdamOptions with_decay{.weight_decay = 0.1};
  const AdamOptions without_decay{.weight_decay = 0.0};
  AdamW decayed({simple_param("w", 40, 0.5, true)}, with_decay);
  AdamW exempt({simple_param("w", 40, 0.5, false)}, with_decay);
  AdamW plain({simple_param("w", 40, 0.5, true)}, without_decay);
  const std::vector<double> before = values(decayed.parameters()[0].tensor);
  const double lr = 0.01;
  decayed.step(lr);
  exempt.step(lr);
  plain.step(lr);
  // decay = false is exactly weight_decay = 0.
  REQUIRE(values(exempt.parameters()[0].tensor) == values(plain.parameters()[0].tensor));
  // decay = true shrinks p by (1 - lr * wd) before the (identical) Adam step.
  const std::vector<double> d = values(decayed.parameters()[0].tensor);
  const std::vector<double> p = values(plain.parameters()[0].tensor);
  for (std::size_t i = 0; i < d.size(); ++i)
    REQUIRE(d[i] - p[i] == Approx(-lr * 0.1 * before[i]).margin(1e-15));
}

TEST_CASE("Adam on a large parameter matches the formula, for 1 and 2 threads", "[optim]") {
  // Above the parallel threshold. After one step the bias-corrected moments are
  // g and g^2, so p -= lr * g / (|g| + eps): here g = -0.25, p += lr / (1 + eps / 0.25).
  const std::int64_t n = 100003;
  const double lr = 0.01, eps = 1e-8;
  std::vector<std::vector<double>> results;
  const int threads = num_threads();
  for (int t : {1, 2}) {
    set_num_threads(t);
    Adam adam({simple_param("w", n, -0.25)}, AdamOptions{.eps = eps});
    adam.step(lr);
    results.push_back(values(adam.parameters()[0].tensor));
  }
  set_num_threads(threads);
  REQUIRE(results[0] == results[1]);
  const std::vector<double> init = values(simple_param("w", n, 0).tensor);
  for (std::int64_t i = 0; i < n; i += 997)
    REQUIRE(results[0][i] == Approx(init[i] + lr / (1.0 + eps / 0.25)).epsilon(1e-14));
}

TEST_CASE("state() and load_state() continue bit for bit", "[optim]") {
  for (const std::string case_name : {"sgd_nesterov_f32", "adam_f32", "adamw_f32", "adam_f64"}) {
    INFO("case " << case_name);
    const json& c = fixture()["cases"][case_name];
    const auto lrs = c["lrs"].get<std::vector<double>>();

    Problem straight = make_problem(c["dtype"] == "f64" ? DType::f64 : DType::f32);
    std::unique_ptr<Optimizer> first = make_optimizer(c, straight.params);
    for (int step = 0; step < 3; ++step) {
      set_grads(straight, step);
      first->step(lrs[step]);
    }
    const std::map<std::string, Tensor> saved = first->state();
    Problem resumed = straight;
    resumed.params = clone_params(straight.params);
    std::unique_ptr<Optimizer> second = make_optimizer(c, resumed.params);
    Problem cold = straight;  // a fresh optimizer without the state: must differ
    cold.params = clone_params(straight.params);
    std::unique_ptr<Optimizer> third = make_optimizer(c, cold.params);
    second->load_state(saved);
    REQUIRE(second->step_count() == 3);

    for (int step = 3; step < 5; ++step) {
      for (const Problem* p : {&straight, &resumed, &cold}) set_grads(*p, step);
      first->step(lrs[step]);
      second->step(lrs[step]);
      third->step(lrs[step]);
    }
    REQUIRE(snapshot(resumed.params) == snapshot(straight.params));
    REQUIRE(snapshot(cold.params) != snapshot(straight.params));
    const auto a = first->state(), b = second->state();
    REQUIRE(a.size() == b.size());
    for (const auto& [key, tensor] : a) {
      INFO("state " << key);
      REQUIRE(tensor.dtype() == b.at(key).dtype());
      REQUIRE(values(tensor) == values(b.at(key)));
    }
    // The saved snapshot did not move with the optimizer.
    REQUIRE(saved.at("step").item() == 3.0);
  }
}

TEST_CASE("state keys name the parameter and the buffer", "[optim]") {
  Problem problem = make_problem(DType::f32);
  Sgd sgd(problem.params, SgdOptions{.momentum = 0.9});
  std::vector<std::string> keys;
  for (const auto& entry : sgd.state()) keys.push_back(entry.first);
  REQUIRE(keys == std::vector<std::string>{"bias/momentum_buffer", "step", "table/momentum_buffer",
                                           "weight/momentum_buffer"});
  REQUIRE(sgd.state().at("weight/momentum_buffer").shape() == Shape{3, 4});
  REQUIRE(sgd.state().at("step").dtype() == DType::i64);
  REQUIRE(sgd.state().at("step").shape() == Shape{});
  Adam adam(problem.params, AdamOptions{});
  REQUIRE(adam.state().size() == 10);
  REQUIRE(adam.state().at("table/exp_avg_sq").dtype() == DType::f32);
  REQUIRE(adam.state().at("table/step").dtype() == DType::i64);
}

TEST_CASE("load_state rejects missing, misshapen and unknown keys", "[optim]") {
  Problem problem = make_problem(DType::f64);
  Adam adam(problem.params, AdamOptions{});
  set_grads(problem, 1);
  adam.step(0.01);
  const std::map<std::string, Tensor> good = adam.state();

  auto missing = good;
  missing.erase("weight/exp_avg");
  REQUIRE_THROWS_WITH(adam.load_state(missing), Catch::Contains("'weight/exp_avg'") &&
                                                    Catch::Contains("missing") &&
                                                    Catch::Contains("[3, 4]"));
  auto misshapen = good;
  misshapen["bias/exp_avg_sq"] = Tensor::zeros({2, 2}, DType::f64);
  REQUIRE_THROWS_WITH(adam.load_state(misshapen), Catch::Contains("'bias/exp_avg_sq'") &&
                                                      Catch::Contains("shape [2, 2]") &&
                                                      Catch::Contains("expected shape [4]"));
  auto wrong_dtype = good;
  wrong_dtype["table/exp_avg"] = Tensor::zeros({2, 3}, DType::f32);
  REQUIRE_THROWS_WITH(adam.load_state(wrong_dtype), Catch::Contains("'table/exp_avg'") &&
                                                        Catch::Contains("dtype f32") &&
                                                        Catch::Contains("expected dtype f64"));
  auto extra = good;
  extra["head.weight/exp_avg"] = Tensor::zeros({1}, DType::f64);
  REQUIRE_THROWS_WITH(adam.load_state(extra),
                      Catch::Contains("unexpected state 'head.weight/exp_avg'"));

  // A failed load changes nothing.
  auto poisoned = misshapen;
  poisoned["weight/exp_avg"] = Tensor::full({3, 4}, 42.0, DType::f64);
  REQUIRE_THROWS_AS(adam.load_state(poisoned), UsageError);
  REQUIRE(values(adam.state().at("weight/exp_avg")) == values(good.at("weight/exp_avg")));
}

TEST_CASE("optimizer settings and inputs are validated", "[optim]") {
  Problem problem = make_problem(DType::f64);
  REQUIRE_THROWS_WITH(Sgd(problem.params, SgdOptions{.nesterov = true}),
                      Catch::Contains("nesterov needs momentum > 0"));
  REQUIRE_THROWS_WITH(Sgd(problem.params, SgdOptions{.momentum = -0.1}),
                      Catch::Contains("momentum -0.1"));
  REQUIRE_THROWS_WITH(Adam(problem.params, AdamOptions{.beta2 = 1.0}),
                      Catch::Contains("beta2 = 1 must be in [0, 1)"));
  REQUIRE_THROWS_WITH(AdamW(problem.params, AdamOptions{.weight_decay = -1}),
                      Catch::Contains("weight_decay -1"));

  auto duplicated = problem.params;
  duplicated.push_back(duplicated[0]);
  REQUIRE_THROWS_WITH(Sgd(duplicated, SgdOptions{}), Catch::Contains("'weight' is listed twice"));
  Tensor base = Tensor::zeros({4, 4}, DType::f64);
  Tensor strided = Tensor::view_of(base, {4, 2}, {4, 2}, 0);
  REQUIRE_THROWS_WITH((Sgd({{"slice", strided}}, SgdOptions{})),
                      Catch::Contains("'slice' is f64[4, 2] cpu; expected a contiguous"));
  REQUIRE_THROWS_WITH((Sgd({{"a/b", base}}, SgdOptions{})), Catch::Contains("'a/b' contains '/'"));

  Sgd sgd(problem.params, SgdOptions{});
  REQUIRE_THROWS_WITH(sgd.step(-1.0), Catch::Contains("learning rate -1"));
  set_grads(problem, 1);
  const std::vector<double> weight_before = values(problem.params[0].tensor);
  problem.params[2].tensor.set_grad(Tensor::zeros({3, 2}, DType::f64));
  REQUIRE_THROWS_WITH(
      sgd.step(0.1),
      Catch::Contains("gradient of 'table' is f64[3, 2] cpu, expected f64[2, 3] cpu"));
  // The check happens before any update.
  REQUIRE(values(problem.params[0].tensor) == weight_before);
  REQUIRE(sgd.step_count() == 0);
}

TEST_CASE("step works under grad mode, skips parameters without grad, bumps versions", "[optim]") {
  NamedParameter with_grad = simple_param("a", 5, 1.0);
  NamedParameter without_grad = simple_param("b", 5, 1.0);
  without_grad.tensor.zero_grad();
  const std::vector<double> b_before = values(without_grad.tensor);
  const auto version = with_grad.tensor.version();
  Sgd sgd({with_grad, without_grad}, SgdOptions{.momentum = 0.5});
  REQUIRE(grad_enabled());
  sgd.step(0.5);
  REQUIRE(with_grad.tensor.version() > version);
  REQUIRE(values(without_grad.tensor) == b_before);
  REQUIRE(values(sgd.state().at("b/momentum_buffer")) == std::vector<double>(5, 0.0));
  REQUIRE(values(sgd.state().at("a/momentum_buffer")) == std::vector<double>(5, 1.0));
  sgd.zero_grad();
  REQUIRE_FALSE(with_grad.tensor.grad().defined());
}

TEST_CASE("learning-rate schedules at specific steps", "[optim][schedule]") {
  const LrSchedule cosine = make_schedule(
      "warmup_cosine", {.lr = 1e-3, .min_lr = 1e-4, .warmup_steps = 10, .total_steps = 110});
  CHECK(cosine(0) == Approx(1e-4).epsilon(1e-12));
  CHECK(cosine(4) == Approx(5e-4).epsilon(1e-12));
  CHECK(cosine(9) == Approx(1e-3).epsilon(1e-12));
  CHECK(cosine(10) == Approx(1e-3).epsilon(1e-12));
  CHECK(cosine(43) == Approx(1e-4 + 9e-4 * 0.75).epsilon(1e-12));  // progress 1/3
  CHECK(cosine(76) == Approx(1e-4 + 9e-4 * 0.25).epsilon(1e-12));  // progress 2/3
  CHECK(cosine(109) == Approx(1e-4).epsilon(1e-12));
  CHECK(cosine(500) == Approx(1e-4).epsilon(1e-12));

  const LrSchedule linear = make_schedule("warmup_linear", {.lr = 0.5, .total_steps = 11});
  CHECK(linear(0) == 0.5);
  CHECK(linear(3) == Approx(0.35).epsilon(1e-12));
  CHECK(linear(5) == Approx(0.25).epsilon(1e-12));
  CHECK(linear(10) == 0.0);

  const LrSchedule constant =
      make_schedule("constant", {.lr = 0.3, .warmup_steps = 4, .total_steps = 100});
  CHECK(constant(0) == Approx(0.075).epsilon(1e-12));
  CHECK(constant(3) == 0.3);
  CHECK(constant(50) == 0.3);

  // A single decay step lands on min_lr.
  const LrSchedule short_decay = make_schedule(
      "warmup_cosine", {.lr = 1.0, .min_lr = 0.1, .warmup_steps = 3, .total_steps = 4});
  CHECK(short_decay(2) == 1.0);
  CHECK(short_decay(3) == Approx(0.1).epsilon(1e-15));
}

TEST_CASE("schedule errors name the option", "[optim][schedule]") {
  const ScheduleOptions valid{.lr = 1.0, .total_steps = 10};
  REQUIRE_THROWS_WITH(make_schedule("cosine", valid),
                      Catch::Contains("unknown lr schedule 'cosine'") &&
                          Catch::Contains("constant, warmup_cosine, warmup_linear"));
  ScheduleOptions zero_lr = valid;
  zero_lr.lr = 0.0;
  REQUIRE_THROWS_WITH(make_schedule("constant", zero_lr),
                      Catch::Contains("lr 0 must be finite and > 0"));
  ScheduleOptions high_min = valid;
  high_min.min_lr = 2.0;
  REQUIRE_THROWS_WITH(make_schedule("warmup_linear", high_min),
                      Catch::Contains("min_lr 2 must be in [0, lr = 1]"));
  ScheduleOptions negative_warmup = valid;
  negative_warmup.warmup_steps = -1;
  REQUIRE_THROWS_WITH(make_schedule("warmup_cosine", negative_warmup),
                      Catch::Contains("warmup_steps -1 must be >= 0"));
  ScheduleOptions long_warmup = valid;
  long_warmup.warmup_steps = 11;
  REQUIRE_THROWS_WITH(make_schedule("warmup_cosine", long_warmup),
                      Catch::Contains("warmup_steps 11 must be <= total_steps 10"));
  REQUIRE_THROWS_WITH(make_schedule("constant", valid)(-1),
                      Catch::Contains("step -1 must be >= 0"));
}

TEST_CASE("clip_grad_norm matches torch.nn.utils.clip_grad_norm_", "[optim][clip]") {
  const json& clip = fixture()["clip"];
  Problem problem = make_problem(DType::f64);
  for (const NamedParameter& p : problem.params)
    p.tensor.set_grad(Tensor::from_data(clip["grads_before"][p.name].get<std::vector<double>>(),
                                        p.tensor.shape(), DType::f64));
  const double norm = clip_grad_norm(problem.params, clip["max_norm"]);
  REQUIRE(norm == Approx(clip["norm"].get<double>()).epsilon(1e-14));
  REQUIRE(norm > clip["max_norm"].get<double>());
  for (const NamedParameter& p : problem.params) {
    INFO("parameter " << p.name);
    require_relative(values(p.tensor.grad()), clip["grads_after"][p.name], 1e-14, 0);
  }
}

TEST_CASE("clip_grad_norm below the limit, skipped and non-finite gradients", "[optim][clip]") {
  NamedParameter a = simple_param("a", 4, 3.0);  // |g|^2 = 36
  NamedParameter b = simple_param("b", 1, 8.0);  // |g|^2 = 64, total norm 10
  NamedParameter none = simple_param("none", 3, 1.0);
  none.tensor.zero_grad();
  REQUIRE(clip_grad_norm({a, none, b}, 10.5) == 10.0);
  REQUIRE(values(a.tensor.grad()) == std::vector<double>(4, 3.0));  // untouched, bit for bit
  REQUIRE(clip_grad_norm({a, none, b}, 5.0) == 10.0);
  REQUIRE(values(a.tensor.grad())[0] == Approx(3.0 * 5.0 / (10.0 + 1e-6)).epsilon(1e-15));
  REQUIRE(values(b.tensor.grad())[0] == Approx(8.0 * 5.0 / (10.0 + 1e-6)).epsilon(1e-15));

  NamedParameter bad = simple_param("bad", 3, 1.0);
  bad.tensor.set_grad(
      Tensor::from_data(std::vector<double>{1.0, std::nan(""), 2.0}, {3}, DType::f64));
  const double nan_norm = clip_grad_norm({a, bad}, 1.0);
  REQUIRE(std::isnan(nan_norm));
  REQUIRE(values(bad.tensor.grad())[0] == 1.0);
  bad.tensor.set_grad(Tensor::full({3}, std::numeric_limits<double>::infinity(), DType::f64));
  REQUIRE(std::isinf(clip_grad_norm({bad}, 1.0)));
  REQUIRE(std::isinf(values(bad.tensor.grad())[2]));

  REQUIRE_THROWS_WITH(clip_grad_norm({a}, 0.0),
                      Catch::Contains("max_norm 0 must be finite and > 0"));
}

TEST_CASE("clip_grad_norm on large f32 gradients is thread-count independent", "[optim][clip]") {
  const std::int64_t n = 300007;
  Tensor p = Tensor::zeros({n}, DType::f32);
  std::vector<float> g(static_cast<std::size_t>(n));
  double expected = 0.0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    g[i] = static_cast<float>((i % 7) * 0.5);
    expected += static_cast<double>(g[i]) * g[i];
  }
  const int threads = num_threads();
  std::vector<double> norms;
  for (int t : {1, 2}) {
    set_num_threads(t);
    p.set_grad(Tensor::from_data(g, {n}));
    norms.push_back(clip_grad_norm({{"p", p}}, 1e9));
  }
  set_num_threads(threads);
  REQUIRE(norms[0] == norms[1]);
  REQUIRE(norms[0] == Approx(std::sqrt(expected)).epsilon(1e-14));
}
