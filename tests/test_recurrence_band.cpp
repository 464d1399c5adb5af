// Segment recurrence with a memory of one segment (train.mem_len = L, issue 13): segment t
// attends to segment t-1 and, causally, to itself. That is one long window of 3 segments
// under the segment-band mask: causal attention restricted to the chunk band of size L
// with one earlier chunk (AttentionChunk{L, 1}). Outputs are equal for every relative
// scheme on every attention path, and so are the gradients of every table, against the
// long window with the earlier segments' hidden states detached.
#include <catch2/catch.hpp>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/matmul.h"
#include "autograd/tape.h"
#include "recurrence_helpers.h"
#include "test_helpers.h"

using namespace relpos;
using testing::kSegment;
using testing::kSegments;
using testing::segment;

namespace {

constexpr AttentionPath kPaths[] = {AttentionPath::flash, AttentionPath::fused,
                                    AttentionPath::composed};

// The two-layer fp64 model whose band, once its chunk size is set to L, is the segment
// band. The constructor refuses a chunk size with causal attention (for users, chunks are
// a streaming-encoder setting), so the size is set after construction: every path then
// applies both limits (flash per row, fused and composed as the chunk mask and the causal
// limit), which the equality below shows.
ModelConfig band_config(const std::string& scheme, AttentionPath path) {
  ModelConfig c = testing::fp64_config(scheme);
  c.attention_path = path;
  c.attention_chunk.left_chunks = 1;
  return c;
}

// The 3 segments of tokens (B, 3L) through forward_segment with memory mem_len:
// logits (B, 3L, V).
Tensor recurrent(const TransformerLM& model, const Tensor& tokens, std::int64_t mem_len) {
  std::vector<Tensor> memory, pieces;
  for (std::int64_t t = 0; t < kSegments; ++t)
    pieces.push_back(forward_segment(model, segment(tokens, t), memory, mem_len));
  return concat(pieces, 1);
}

// The long window for the gradients: a TransformerLM (same layer classes, same parameter
// names) whose every layer's attention input is detached before position `frozen`. The
// model cannot detach part of a layer's input, so Block::forward's wiring (pre-norm, no
// dropout) is repeated here; the test checks that the logits equal the model's.
class BandBlock : public Module {
 public:
  BandBlock(const ModelConfig& c, std::int64_t layer, const PositionScheme& scheme,
            const AttentionChunk& band, Rng& rng) {
    norm1_ = &register_module("norm1", std::make_unique<Norm>(c.norm, c.d_model));
    attn_ =
        &register_module("attn", std::make_unique<MultiHeadAttention>(
                                     model_dims(c), layer, scheme, c.attention_path, rng, &band));
    norm2_ = &register_module("norm2", std::make_unique<Norm>(c.norm, c.d_model));
    fc1_ = &register_module("mlp.fc1", std::make_unique<Linear>(c.d_model, c.d_ff, true, rng));
    fc2_ = &register_module("mlp.fc2", std::make_unique<Linear>(c.d_ff, c.d_model, true, rng));
  }

  // x (B, 3L, d) -> (B, 3L, d).
  Tensor forward(const Tensor& x, std::int64_t frozen) const {
    Tensor h = norm1_->forward(x);  // (B, 3L, d): the attention input, XL's hidden state
    if (frozen > 0)                 // [stop_grad(h[:frozen]); h[frozen:]]
      h = concat({slice(h, 1, 0, frozen).detach(), slice(h, 1, frozen, h.size(1))}, 1);
    const Tensor y = add(x, attn_->forward(h, 0));
    return add(y, fc2_->forward(fc1_->forward(norm2_->forward(y), Activation::gelu_tanh)));
  }

 private:
  Norm* norm1_;
  MultiHeadAttention* attn_;
  Norm* norm2_;
  Linear* fc1_;
  Linear* fc2_;
};

class BandWindowLM : public Module {
 public:
  BandWindowLM(const ModelConfig& c, Rng& rng) {
    embed_ = &register_module("embed", std::make_unique<Embedding>(c.vocab, c.d_model, rng));
    position_ = &register_module("position", make_position_scheme(c.position, model_dims(c), rng));
    for (std::int64_t l = 0; l < c.n_layers; ++l)
      blocks_.push_back(
          &register_module("blocks." + std::to_string(l),
                           std::make_unique<BandBlock>(c, l, *position_, band_, rng)));
    final_norm_ = &register_module("final_norm", std::make_unique<Norm>(c.norm, c.d_model));
  }

  // tokens (B, 3L) -> logits (B, 3L, V), tied head.
  Tensor forward(const Tensor& tokens, std::int64_t frozen) const {
    Tensor x = position_->embed(embed_->forward(tokens), 0);  // (B, 3L, d)
    for (const BandBlock* b : blocks_) x = b->forward(x, frozen);
    return matmul(final_norm_->forward(x), transpose(embed_->table(), 0, 1));
  }

 private:
  AttentionChunk band_{kSegment, 1, 0};  // the segment band
  Embedding* embed_;
  PositionScheme* position_;
  std::vector<BandBlock*> blocks_;
  Norm* final_norm_;
};

}  // namespace

TEST_CASE(
    "recurrence band: segments with a memory of one segment equal the long window "
    "under the segment-band mask",
    "[recurrence]") {
  // Exact for any number of layers: in both computations, layer n's queries of segment t
  // see exactly the layer-n inputs of segments t-1 and t, and those are equal by induction
  // over the segments (segment 0 has no memory and sees itself only).
  for (const AttentionPath path : kPaths)
    for (const std::string& scheme : testing::relative_schemes()) {
      INFO("scheme " << scheme << ", path " << name_of(path));
      auto model = testing::fp64_model(band_config(scheme, path));
      Rng rng(74);
      const Tensor tokens = testing::random_tokens(2, kSegment * kSegments, rng);  // (2, 3L)
      NoGradGuard no_grad;
      model->set_attention_chunk_size(kSegment);
      const Tensor band = model->forward(tokens);  // (2, 3L, V)
      model->set_attention_chunk_size(0);
      testing::require_close(recurrent(*model, tokens, kSegment).to_vector(), band.to_vector(),
                             1e-10);
      // The comparison can fail: a memory of 2L lets segment 2 see segment 0 too.
      REQUIRE(testing::largest_difference(recurrent(*model, tokens, 2 * kSegment), band) > 1e-6);
    }
}

TEST_CASE(
    "recurrence band gradients: every table's equal the long window's with earlier "
    "segments detached",
    "[recurrence][slow]") {
  for (const AttentionPath path : kPaths)
    for (const std::string& scheme : testing::relative_schemes()) {
      INFO("scheme " << scheme << ", path " << name_of(path));
      const ModelConfig config = band_config(scheme, path);
      auto model = testing::fp64_model(config);
      Rng rng(75);
      BandWindowLM window(config, rng);
      std::vector<Tensor> values;
      for (const NamedParameter& p : model->parameters()) values.push_back(p.tensor.detach());
      testing::set_parameters(window, values, DType::f64);
      const Tensor tokens = testing::random_tokens(2, kSegment * kSegments + 1, rng);
      const Tensor inputs = slice(tokens, 1, 0, kSegment * kSegments).contiguous();  // (2, 3L)
      const Tensor targets = slice(tokens, 1, 1, kSegment * kSegments + 1).contiguous();
      {  // The window repeats the model's wiring: the same logits under the band.
        NoGradGuard no_grad;
        model->set_attention_chunk_size(kSegment);
        testing::require_close(window.forward(inputs, 0).to_vector(),
                               model->forward(inputs).to_vector(), 1e-12);
        model->set_attention_chunk_size(0);
      }
      // Per segment t, as the trainer steps: the recurrent path's backward (its memory,
      // each layer's last L attention inputs, detached) against the long window's with
      // every layer's hidden states before segment t detached and the loss on segment t's
      // rows. Exact for any number of layers: those rows depend on the parameters through
      // segment t's rows of every layer and on the constant inputs of segment t-1 (the
      // band hides earlier ones, the causal limit segment t+1), as the recurrent pass does.
      const std::vector<NamedParameter> ours = window.parameters(), theirs = model->parameters();
      REQUIRE(ours.size() == theirs.size());
      std::vector<Tensor> memory;
      for (std::int64_t t = 0; t < kSegments; ++t) {
        backward(cross_entropy(forward_segment(*model, segment(inputs, t), memory, kSegment),
                               segment(targets, t)));
        const Tensor logits = window.forward(inputs, t * kSegment);  // (2, 3L, V)
        // (2, L, V): a slice view, on the tape (segment() copies without gradient)
        backward(
            cross_entropy(slice(logits, 1, t * kSegment, (t + 1) * kSegment), segment(targets, t)));
        for (std::size_t i = 0; i < ours.size(); ++i) {
          INFO("segment " << t << ", table " << theirs[i].name);
          REQUIRE(ours[i].name == theirs[i].name);
          REQUIRE(theirs[i].tensor.grad().defined());
          REQUIRE(ours[i].tensor.grad().defined());
          testing::require_close(ours[i].tensor.grad().to_vector(),
                                 theirs[i].tensor.grad().to_vector(), 1e-10);
          ours[i].tensor.zero_grad();
          theirs[i].tensor.zero_grad();
        }
      }
    }
}
