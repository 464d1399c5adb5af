// GPU vs CPU: softmax / log-softmax (+backward), cross-entropy (+backward) with
// ignored rows, layer and RMS norm (+backward, grad_gamma / grad_beta over
// several row chunks), and run-to-run bit equality of their reductions.
#include <catch2/catch.hpp>

#include "cuda_test_helpers.h"

using namespace relpos;
using namespace relpos::cuda_testing;

namespace {

struct Rows {
  std::int64_t rows, n;
};

const Rows kRowShapes[] = {{5, 1}, {9, 7}, {4, 33}, {3, 300}, {2, 2049}, {300, 64}};
// Without n = 1, where RMS norm's input gradient is all cancellation.
const Rows kNormBackwardShapes[] = {{9, 7}, {4, 33}, {3, 300}, {2, 2049}, {300, 64}};

}  // namespace

TEST_CASE("softmax and log-softmax, forward and backward", "[cuda]") {
  Rng rng(31);
  for (const bool log : {false, true}) {
    for (const Rows& s : kRowShapes) {
      INFO((log ? "log_softmax" : "softmax") << " rows " << s.rows << " n " << s.n);
      Pair x = randn_pair({s.rows, s.n}, rng, 3.0);
      Pair y = poisoned_pair({s.rows, s.n});
      cpu().softmax(x.host, y.host, s.rows, s.n, log);
      gpu().softmax(x.device, y.device, s.rows, s.n, log);
      // Probabilities can be tiny: compare them relatively, down to 1e-6.
      require_match(y, log ? 1.0 : 1e-6);

      Pair y_ref = pair_of(y.host);
      Pair grad_y = randn_pair({s.rows, s.n}, rng);
      Pair grad_x = poisoned_pair({s.rows, s.n});
      cpu().softmax_backward(y_ref.host, grad_y.host, grad_x.host, s.rows, s.n, log);
      gpu().softmax_backward(y_ref.device, grad_y.device, grad_x.device, s.rows, s.n, log);
      require_match(grad_x, log ? 1.0 : 1e-2);
    }
  }
}

TEST_CASE("cross_entropy with ignored rows, forward and backward", "[cuda]") {
  Rng rng(32);
  const std::int64_t ignore = -100;
  for (const std::int64_t classes : {1, 10, 257, 1000}) {
    INFO("classes " << classes);
    const std::int64_t rows = 37;
    Pair logits = randn_pair({rows, classes}, rng, 2.0);
    std::vector<double> t(rows);
    for (std::int64_t r = 0; r < rows; ++r)
      t[r] = r % 5 == 3 ? static_cast<double>(ignore)
                        : static_cast<double>(rng.below(static_cast<std::uint64_t>(classes)));
    Pair targets = pair_of(Tensor::from_data(t, {rows}, DType::i64));
    Pair loss = poisoned_pair({rows}), lse = poisoned_pair({rows});
    cpu().cross_entropy(logits.host, targets.host, ignore, loss.host, lse.host);
    gpu().cross_entropy(logits.device, targets.device, ignore, loss.device, lse.device);
    require_match(loss);
    require_match(lse);

    Pair lse_ref = pair_of(lse.host);
    Pair grad_loss = randn_pair({rows}, rng);
    Pair grad_logits = poisoned_pair({rows, classes});
    cpu().cross_entropy_backward(logits.host, targets.host, ignore, lse_ref.host, grad_loss.host,
                                 grad_logits.host);
    gpu().cross_entropy_backward(logits.device, targets.device, ignore, lse_ref.device,
                                 grad_loss.device, grad_logits.device);
    require_match(grad_logits, 1e-2);
  }
}

namespace {

struct NormCase {
  bool rms, gamma, beta;
};

const NormCase kNormCases[] = {
    {false, true, true}, {false, false, false}, {false, true, false}, {true, true, false},
    {true, false, false}, {true, true, true}};

}  // namespace

TEST_CASE("layer and RMS norm forward", "[cuda]") {
  Rng rng(33);
  for (const NormCase& c : kNormCases) {
    for (const Rows& s : kRowShapes) {
      INFO((c.rms ? "rms" : "layer") << " gamma " << c.gamma << " beta " << c.beta << " rows "
                                     << s.rows << " n " << s.n);
      Pair x = randn_pair({s.rows, s.n}, rng, 2.0);
      Pair gamma = c.gamma ? randn_pair({s.n}, rng) : Pair{};
      Pair beta = c.beta ? randn_pair({s.n}, rng) : Pair{};
      Pair y = poisoned_pair({s.rows, s.n});
      Pair mean = poisoned_pair({s.rows}), rstd = poisoned_pair({s.rows});
      cpu().norm(x.host, gamma.host, beta.host, 1e-5, c.rms, s.rows, s.n, y.host, mean.host,
                 rstd.host);
      gpu().norm(x.device, gamma.device, beta.device, 1e-5, c.rms, s.rows, s.n, y.device,
                 mean.device, rstd.device);
      require_match(y);
      require_match(mean);
      require_match(rstd);
    }
  }
}

TEST_CASE("layer and RMS norm backward, parameter gradients over many rows", "[cuda]") {
  Rng rng(34);
  for (const NormCase& c : kNormCases) {
    for (const Rows& s : kNormBackwardShapes) {
      INFO((c.rms ? "rms" : "layer") << " gamma " << c.gamma << " beta " << c.beta << " rows "
                                     << s.rows << " n " << s.n);
      Pair x = randn_pair({s.rows, s.n}, rng, 2.0);
      Pair gamma = c.gamma ? randn_pair({s.n}, rng) : Pair{};
      // The forward statistics, computed once on the CPU and shared.
      Tensor y = Tensor::empty({s.rows, s.n});
      Tensor mean_h = Tensor::empty({s.rows}), rstd_h = Tensor::empty({s.rows});
      cpu().norm(x.host, gamma.host, Tensor(), 1e-5, c.rms, s.rows, s.n, y, mean_h, rstd_h);
      Pair mean = pair_of(mean_h), rstd = pair_of(rstd_h);
      Pair grad_y = randn_pair({s.rows, s.n}, rng);
      Pair grad_x = poisoned_pair({s.rows, s.n});
      Pair grad_gamma = c.gamma ? poisoned_pair({s.n}) : Pair{};
      Pair grad_beta = c.beta ? poisoned_pair({s.n}) : Pair{};
      cpu().norm_backward(x.host, gamma.host, mean.host, rstd.host, grad_y.host, c.rms, s.rows,
                          s.n, grad_x.host, grad_gamma.host, grad_beta.host);
      gpu().norm_backward(x.device, gamma.device, mean.device, rstd.device, grad_y.device, c.rms,
                          s.rows, s.n, grad_x.device, grad_gamma.device, grad_beta.device);
      require_match(grad_x);
      // Parameter gradients sum over rows: the error scales with the row count.
      if (c.gamma) require_match(grad_gamma, static_cast<double>(s.rows));
      if (c.beta) require_match(grad_beta, static_cast<double>(s.rows));
    }
  }
}

TEST_CASE("softmax, cross_entropy and norm_backward give the same bits on every run", "[cuda]") {
  Rng rng(35);
  const std::int64_t rows = 513, n = 301;
  Pair x = randn_pair({rows, n}, rng);
  Pair gamma = randn_pair({n}, rng);
  Pair grad_y = randn_pair({rows, n}, rng);
  auto device_empty = [](const Shape& shape) {
    return Tensor::empty(shape, DType::f32, Device::cuda);
  };
  Tensor y = device_empty({rows, n}), mean = device_empty({rows}), rstd = device_empty({rows});
  gpu().norm(x.device, gamma.device, Tensor(), 1e-5, false, rows, n, y, mean, rstd);
  Tensor targets = Tensor::zeros({rows}, DType::i64, Device::cuda);
  auto run = [&] {
    Tensor probs = device_empty({rows, n}), grad_x = device_empty({rows, n});
    Tensor grad_gamma = device_empty({n}), loss = device_empty({rows}), lse = device_empty({rows});
    gpu().softmax(x.device, probs, rows, n, false);
    gpu().norm_backward(x.device, gamma.device, mean, rstd, grad_y.device, false, rows, n, grad_x,
                        grad_gamma, Tensor());
    gpu().cross_entropy(x.device, targets, -100, loss, lse);
    return std::vector<Tensor>{probs, grad_x, grad_gamma, loss, lse};
  };
  const std::vector<Tensor> first = run(), second = run();
  for (std::size_t i = 0; i < first.size(); ++i) {
    INFO("output " << i);
    require_identical(second[i], first[i]);
  }
}
