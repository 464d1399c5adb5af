#!/usr/bin/python3
"""The PyTorch peer of bench_train: the same byte-level decoder LM, written the
way common public PyTorch code writes it (explicit attention matrices), trained
on random windows of the bundled corpus. Prints one JSON line with the same
fields as bench_train (bench/README.md).

Modes (--mode):
  eager    fp32, eager (runs on PyTorch 1.13 and 2.x);
  bf16     the same under torch.autocast("cpu", dtype=torch.bfloat16) for the
           forward and the loss; parameters, gradients and AdamW stay fp32;
  compile  fp32, the model wrapped in torch.compile (PyTorch 2.x; its default
           inductor backend). Compilation happens in the warm-up steps: their
           time beyond that of steady-state steps is reported as compile_s;
  compile-bf16  the compiled model under bf16 autocast (forward and loss), as
           bf16 is; compile_s as for compile.

Model: vocab 256, d_model 256, 4 layers, 4 heads, d_ff 1024, pre-LN layernorm,
tanh GELU, tied embeddings, no dropout. AdamW(lr 1e-3, betas (0.9, 0.99),
eps 1e-8, weight decay 0.1 on matrices outside the position scheme), global
gradient-norm clip 1.0, constant learning rate.

Position schemes, as their usual implementations do them:
  sinusoidal, learned  absolute table added to the token embeddings;
  rope    rotate-half on q and k with cached cos/sin tables;
  alibi   an (H, L, L) bias matrix built once per forward;
  kerple  KERPLE-log: a per-layer (H, L, L) bias -r1 log(1 + r2 |i - j|) with
          r1 = exp(log_r1), r2 = exp(log_r2) learned per head;
  t5      bucketed distances of an (L, L) relative-position matrix, looked up in
          an nn.Embedding(num_buckets, heads) shared by all layers, added to scores;
  shaw    per-layer relative key and value tables gathered into (L, L, D) tensors
          and contracted by one batched matmul per query position (as Shaw et
          al.'s tensor2tensor code does);
  xl      sinusoidal R, a per-layer W_r projection, global u and v, and the
          pad-and-reshape relative shift.
"""
import argparse
import contextlib
import json
import math
import os
import resource
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, D_MODEL, N_LAYERS, N_HEADS, D_FF = 256, 256, 4, 4, 1024
HEAD_DIM = D_MODEL // N_HEADS
TOKENS_PER_STEP = 8192
EMBED_STD = 0.02
SINUSOID_SCALE = EMBED_STD * math.sqrt(2.0)  # as relpos: sinusoids at the embeddings' scale
SHAW_CLIP, T5_BUCKETS, T5_MAX_DISTANCE, ROPE_BASE = 16, 32, 128, 10000.0
SCHEMES = ("none", "sinusoidal", "learned", "t5", "shaw", "xl", "alibi", "rope", "kerple")
MODES = ("eager", "bf16", "compile", "compile-bf16")


def inverse_frequencies(dim, base=10000.0):
    return 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)  # (dim/2,)


def causal_additive_mask(length):
    """(L, L): 0 on and below the diagonal, -inf above."""
    mask = torch.ones(length, length, dtype=torch.bool).triu(1)
    return torch.zeros(length, length).masked_fill(mask, float("-inf"))


# ---- position schemes: each is the model's `position` submodule ----


class NoPosition(nn.Module):
    def embed(self, x):
        return x

    def prepare(self, length):
        """Per-forward tensors shared by all layers."""
        return {}


class SinusoidalPosition(NoPosition):
    def __init__(self, max_len):
        super().__init__()
        angles = torch.arange(max_len, dtype=torch.float32)[:, None] * inverse_frequencies(D_MODEL)
        table = torch.stack([angles.sin(), angles.cos()], dim=-1).view(max_len, D_MODEL)
        self.register_buffer("table", table * SINUSOID_SCALE, persistent=False)  # (L, d)

    def embed(self, x):
        return x + self.table[: x.size(1)]


class LearnedPosition(NoPosition):
    def __init__(self, max_len):
        super().__init__()
        self.table = nn.Embedding(max_len, D_MODEL)
        nn.init.normal_(self.table.weight, std=EMBED_STD)

    def embed(self, x):
        return x + self.table(torch.arange(x.size(1), device=x.device))


class RotaryPosition(NoPosition):
    def __init__(self, max_len):
        super().__init__()
        angles = torch.arange(max_len, dtype=torch.float32)[:, None] * inverse_frequencies(
            HEAD_DIM, ROPE_BASE
        )
        angles = torch.cat([angles, angles], dim=-1)  # (L, D)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def rotate(self, x):
        """x (B, H, L, D) -> x cos + rotate_half(x) sin."""
        length, half = x.size(2), HEAD_DIM // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * self.cos[:length] + rotated * self.sin[:length]


def alibi_slopes(heads):
    def powers(n):
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]

    lower = 2 ** int(math.floor(math.log2(heads)))
    return powers(lower) + powers(2 * lower)[0::2][: heads - lower]


class AlibiPosition(NoPosition):
    def __init__(self):
        super().__init__()
        self.register_buffer("slopes", torch.tensor(alibi_slopes(N_HEADS)), persistent=False)

    def prepare(self, length):
        pos = torch.arange(length)
        distance = (pos[:, None] - pos[None, :]).clamp(min=0).float()  # (L, L): i - j
        bias = -self.slopes[:, None, None] * distance  # (H, L, L)
        return {"bias": (bias + causal_additive_mask(length)).unsqueeze(0)}  # (1, H, L, L)


class KerplePosition(NoPosition):
    def __init__(self):
        super().__init__()

        def logs():
            return nn.ParameterList(
                [nn.Parameter(torch.randn(N_HEADS) * EMBED_STD) for _ in range(N_LAYERS)]
            )

        self.log_r1, self.log_r2 = logs(), logs()

    def prepare(self, length):
        pos = torch.arange(length)
        distance = (pos[:, None] - pos[None, :]).clamp(min=0).float()  # (L, L): i - j
        return {"distance": distance, "mask": causal_additive_mask(length)}

    def bias(self, layer, shared):
        """The layer's (1, H, L, L) bias with the causal mask folded in."""
        r1 = self.log_r1[layer].exp()[:, None, None]  # (H, 1, 1)
        r2 = self.log_r2[layer].exp()[:, None, None]
        bias = -r1 * torch.log1p(r2 * shared["distance"])  # (H, L, L)
        return (bias + shared["mask"]).unsqueeze(0)


class T5Position(NoPosition):
    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(T5_BUCKETS, N_HEADS)
        nn.init.normal_(self.table.weight, std=EMBED_STD)

    @staticmethod
    def buckets(relative):
        """Unidirectional T5 buckets: exact below max_exact, logarithmic up to max_distance."""
        distance = (-relative).clamp(min=0)
        max_exact = T5_BUCKETS // 2
        scaled = torch.log(distance.float().clamp(min=1) / max_exact) / math.log(
            T5_MAX_DISTANCE / max_exact
        )
        large = (max_exact + (scaled * (T5_BUCKETS - max_exact)).long()).clamp(max=T5_BUCKETS - 1)
        return torch.where(distance < max_exact, distance, large)

    def prepare(self, length):
        pos = torch.arange(length)
        relative = pos[None, :] - pos[:, None]  # (L, L): j - i
        bias = self.table(self.buckets(relative)).permute(2, 0, 1)  # (H, L, L)
        return {"bias": (bias + causal_additive_mask(length)).unsqueeze(0)}  # (1, H, L, L)


class ShawPosition(NoPosition):
    def __init__(self):
        super().__init__()
        width = 2 * SHAW_CLIP + 1

        def tables():
            return nn.ParameterList(
                [nn.Parameter(torch.randn(width, HEAD_DIM) * EMBED_STD) for _ in range(N_LAYERS)]
            )

        self.keys, self.values = tables(), tables()

    def prepare(self, length):
        pos = torch.arange(length)
        relative = pos[None, :] - pos[:, None]  # (L, L): j - i
        return {"index": relative.clamp(-SHAW_CLIP, SHAW_CLIP) + SHAW_CLIP}


class XlPosition(NoPosition):
    def __init__(self):
        super().__init__()
        self.w_r = nn.ModuleList(
            [nn.Linear(D_MODEL, D_MODEL, bias=False) for _ in range(N_LAYERS)]
        )
        self.u = nn.Parameter(torch.zeros(N_HEADS, HEAD_DIM))
        self.v = nn.Parameter(torch.zeros(N_HEADS, HEAD_DIM))

    def prepare(self, length):
        distances = torch.arange(length - 1, -1, -1, dtype=torch.float32)  # L-1 .. 0
        angles = distances[:, None] * inverse_frequencies(D_MODEL)
        return {"r": torch.cat([angles.sin(), angles.cos()], dim=-1)}  # (L, d)


def make_position(scheme, max_len):
    return {
        "none": NoPosition,
        "sinusoidal": lambda: SinusoidalPosition(max_len),
        "learned": lambda: LearnedPosition(max_len),
        "rope": lambda: RotaryPosition(max_len),
        "alibi": AlibiPosition,
        "kerple": KerplePosition,
        "t5": T5Position,
        "shaw": ShawPosition,
        "xl": XlPosition,
    }[scheme]()


def rel_shift(x):
    """(B, H, Lq, Lk) with column c at distance Lk-1-c -> column j at distance i - j
    (valid on and below the diagonal), by padding one zero column and re-viewing."""
    b, h, q_len, k_len = x.shape
    padded = torch.cat([x.new_zeros(b, h, q_len, 1), x], dim=-1)  # (B, H, Lq, Lk+1)
    return padded.view(b, h, k_len + 1, q_len)[:, :, 1:].reshape(b, h, q_len, k_len)


def relative_inner(x, rel):
    """Shaw et al.'s relative term as their reference code computes it: one batched
    matmul per query position i. x (B, H, L, M), rel (L, M, N) -> (B, H, L, N) with
    out[b, h, i] = x[b, h, i] @ rel[i]."""
    b, h, length, m = x.shape
    per_query = x.permute(2, 0, 1, 3).reshape(length, b * h, m)  # (L, B*H, M)
    out = torch.bmm(per_query, rel)  # (L, B*H, N)
    return out.view(length, b, h, -1).permute(1, 2, 0, 3)


# ---- the model ----


class CausalSelfAttention(nn.Module):
    def __init__(self, scheme, layer):
        super().__init__()
        self.scheme, self.layer = scheme, layer
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL, bias=False)
        self.out = nn.Linear(D_MODEL, D_MODEL, bias=False)

    def forward(self, x, position, shared, mask):
        b, length, _ = x.shape
        q, k, v = self.qkv(x).split(D_MODEL, dim=2)
        q, k, v = (t.view(b, length, N_HEADS, HEAD_DIM).transpose(1, 2) for t in (q, k, v))
        scale = 1.0 / math.sqrt(HEAD_DIM)  # q, k, v: (B, H, L, D)
        if self.scheme == "rope":
            q, k = position.rotate(q), position.rotate(k)
        if self.scheme == "xl":
            content = (q + position.u[:, None]) @ k.transpose(-2, -1)  # (B, H, L, L)
            r = position.w_r[self.layer](shared["r"]).view(length, N_HEADS, HEAD_DIM)
            positional = rel_shift(torch.einsum("bhid,jhd->bhij", q + position.v[:, None], r))
            scores = (content + positional) * scale
        elif self.scheme == "shaw":
            rel_k = position.keys[self.layer][shared["index"]]  # (L, L, D)
            scores = (q @ k.transpose(-2, -1) + relative_inner(q, rel_k.transpose(1, 2))) * scale
        else:
            scores = (q @ k.transpose(-2, -1)) * scale  # (B, H, L, L)
        if "bias" in shared:
            scores = scores + shared["bias"]  # the causal mask is folded into the bias
        elif self.scheme == "kerple":
            scores = scores + position.bias(self.layer, shared)
        else:
            scores = scores.masked_fill(mask[:length, :length], float("-inf"))
        probs = F.softmax(scores, dim=-1)
        y = probs @ v  # (B, H, L, D)
        if self.scheme == "shaw":
            rel_v = position.values[self.layer][shared["index"]]  # (L, L, D)
            y = y + relative_inner(probs, rel_v)
        return self.out(y.transpose(1, 2).reshape(b, length, D_MODEL))


class Block(nn.Module):
    def __init__(self, scheme, layer):
        super().__init__()
        self.norm1 = nn.LayerNorm(D_MODEL)
        self.attn = CausalSelfAttention(scheme, layer)
        self.norm2 = nn.LayerNorm(D_MODEL)
        self.fc1 = nn.Linear(D_MODEL, D_FF)
        self.fc2 = nn.Linear(D_FF, D_MODEL)

    def forward(self, x, position, shared, mask):
        x = x + self.attn(self.norm1(x), position, shared, mask)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x)), approximate="tanh"))


class TransformerLM(nn.Module):
    def __init__(self, scheme, max_len):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        nn.init.normal_(self.embed.weight, std=EMBED_STD)
        self.position = make_position(scheme, max_len)
        self.blocks = nn.ModuleList([Block(scheme, layer) for layer in range(N_LAYERS)])
        self.final_norm = nn.LayerNorm(D_MODEL)
        mask = torch.ones(max_len, max_len, dtype=torch.bool).triu(1)
        self.register_buffer("mask", mask, persistent=False)  # True above the diagonal

    def forward(self, tokens):
        """tokens (B, L) -> logits (B, L, vocab); the LM head is the embedding table."""
        x = self.position.embed(self.embed(tokens))
        shared = self.position.prepare(tokens.size(1))
        for block in self.blocks:
            x = block(x, self.position, shared, self.mask)
        return self.final_norm(x) @ self.embed.weight.t()


def model_parameter_count(model):
    """Parameters outside the position scheme (the token table counted once)."""
    return sum(p.numel() for n, p in model.named_parameters() if not n.startswith("position."))


def position_flops_per_token(scheme, length, batch):
    """The position scheme's own products, forward and backward (bench/README.md): XL's
    (q + v)·(W_r R)ᵀ over the causal distances and its W_r R projection once a step; Shaw's
    q·Bᵀ and bins·A. As bench_train counts them."""
    if scheme == "xl":
        return N_LAYERS * (3.0 * length * D_MODEL + 4.0 * D_MODEL * D_MODEL / batch)
    if scheme == "shaw":
        return N_LAYERS * 2 * 6.0 * (2 * SHAW_CLIP + 1) * D_MODEL
    return 0.0


def flops_per_token(model, scheme, length, batch):
    """6 N + 6 n_layers L d_model + the position scheme's products (bench/README.md)."""
    return (6.0 * model_parameter_count(model) + 6.0 * N_LAYERS * length * D_MODEL
            + position_flops_per_token(scheme, length, batch))


def load_corpus():
    data_dir = os.environ.get("RELPOS_DATA_DIR") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data"
    )
    with open(os.path.join(data_dir, "corpus", "kjv.txt"), "rb") as f:
        data = f.read()
    train_bytes = len(data) - int(len(data) * 0.05)  # relpos's training split
    return torch.frombuffer(bytearray(data[:train_bytes]), dtype=torch.uint8)


def random_windows(corpus, length, batch, generator):
    starts = torch.randint(0, corpus.numel() - length, (batch,), generator=generator)
    windows = corpus[starts[:, None] + torch.arange(length + 1)].long()  # (B, L+1)
    return windows[:, :-1], windows[:, 1:]


def make_optimizer(model):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (decay if p.dim() >= 2 and not name.startswith("position.") else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.99), eps=1e-8)


def make_step(scheme, length, batch, mode):
    """The model (seeded as every run) and a function that runs one training step on a fresh
    random batch and returns its loss: zero_grad, forward and loss (under autocast in the
    bf16 modes; compiled in the compile modes), backward, clipping, AdamW. bench/step_shares.py
    profiles the same step."""
    torch.manual_seed(0)
    corpus = load_corpus()
    generator = torch.Generator().manual_seed(0)
    model = TransformerLM(scheme, length)
    model.train()
    optimizer = make_optimizer(model)
    forward = torch.compile(model) if mode.startswith("compile") else model

    def precision():
        if mode in ("bf16", "compile-bf16"):
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        inputs, targets = random_windows(corpus, length, batch, generator)
        with precision():
            logits = forward(inputs)
            loss = F.cross_entropy(logits.view(-1, VOCAB), targets.reshape(-1))
        value = loss.item()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return value

    return model, train_step


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scheme", choices=SCHEMES, default="none")
    parser.add_argument("--len", type=int, default=512, help="window length L")
    parser.add_argument("--batch", type=int, default=0, help="sequences per step; default 8192 / L")
    parser.add_argument("--steps", type=int, default=10, help="timed steps (median reported)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--mode", choices=MODES, default="eager")
    args = parser.parse_args()
    if args.len < 2 or args.steps < 1 or args.warmup < 0 or args.threads < 1 or args.batch < 0:
        parser.error("need --len >= 2, --steps >= 1, --warmup >= 0, --threads >= 1, --batch >= 0")
    compiled = args.mode.startswith("compile")
    if compiled and not hasattr(torch, "compile"):
        parser.error(f"--mode {args.mode}: needs PyTorch 2.x (torch.compile), "
                     f"this is {torch.__version__}")
    if compiled and args.warmup < 1:
        parser.error(f"--mode {args.mode}: needs --warmup >= 1 (the first step compiles)")
    batch = args.batch or max(1, TOKENS_PER_STEP // args.len)

    torch.set_num_threads(args.threads)
    model, train_step = make_step(args.scheme, args.len, batch, args.mode)
    step_seconds, warmup_seconds, losses = [], [], []
    for step in range(args.warmup + args.steps):
        start = time.perf_counter()
        losses.append(train_step())
        (step_seconds if step >= args.warmup else warmup_seconds).append(
            time.perf_counter() - start
        )

    median_step = statistics.median(step_seconds)
    tokens_per_s = batch * args.len / median_step
    flops = flops_per_token(model, args.scheme, args.len, batch)
    print(json.dumps({
        "framework": "torch",
        "torch_version": torch.__version__,
        "mode": args.mode,
        "scheme": args.scheme,
        "len": args.len,
        "batch": batch,
        "threads": torch.get_num_threads(),
        "steps": args.steps,
        "warmup": args.warmup,
        "parameters": sum(p.numel() for p in model.parameters()),
        "model_parameters": model_parameter_count(model),
        "flops_per_token": flops,
        "median_step_s": median_step,
        "tokens_per_s": tokens_per_s,
        "model_gflops": flops * tokens_per_s / 1e9,
        "warmup_s": sum(warmup_seconds),
        "compile_s": sum(warmup_seconds) - len(warmup_seconds) * median_step
        if compiled else 0.0,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "first_loss": losses[0],
        "final_loss": losses[-1],
    }))


if __name__ == "__main__":
    main()
