#!/usr/bin/env python3
"""The PyTorch peer of bench_cuda_attention: one attention layer forward +
backward in eager mode on the GPU, B=4, H=8, head_dim 64 (d_model 512), causal,
f32, with each position scheme's bias computed as relpos defines it:

  none    softmax(q k^T / sqrt(D))
  t5      + table[bucket(j - i)] per head: an (L, L) bucket matrix (built once) looked
          up in a learned (32, H) table inside the graph; max_distance 128
  alibi   - slope_h * (i - j), the (H, L, L) bias built once (it has no parameters)
  rope    rotate-half on q and k, base 10000, cos/sin tables built once
  shaw    k = 16: q B^T (L x 2k+1) gathered by clip(j - i, -k, k) + k; values by
          binning the weights into 2k+1 bins (scatter_add) times A: no (L, L, D) tensor
  xl      ((q + u) k^T + rel_shift((q + v) (R W_r)^T)) / sqrt(D), R sinusoids of
          distances L-1 .. 0, rel_shift by pad-and-reshape

Prints one JSON line per (scheme, L) on stdout (same fields as the C++ program) and
a markdown table on stderr. --device cpu runs a small smoke test anywhere.
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn as nn

BATCH, HEADS, D_MODEL = 4, 8, 512
HEAD_DIM = D_MODEL // HEADS
SHAW_CLIP, T5_BUCKETS, T5_MAX_DISTANCE, ROPE_BASE = 16, 32, 128, 10000.0
SCHEMES = ("none", "t5", "alibi", "rope", "shaw", "xl")


def causal_t5_buckets(length):
    """(L, L) i64: T5's unidirectional buckets of j - i (future and self -> 0)."""
    pos = torch.arange(length)
    n = (pos[:, None] - pos[None, :]).clamp(min=0)  # i - j on the causal part
    max_exact = T5_BUCKETS // 2
    large = max_exact + (
        torch.log(n.float().clamp(min=1) / max_exact)
        / math.log(T5_MAX_DISTANCE / max_exact)
        * (T5_BUCKETS - max_exact)
    ).long()
    return torch.where(n < max_exact, n, large.clamp(max=T5_BUCKETS - 1))


def alibi_bias(length):
    """(H, L, L): -slope_h * (i - j), with the paper's slopes for H a power of two."""
    start = 2.0 ** (-8.0 / HEADS)
    slopes = torch.tensor([start ** (h + 1) for h in range(HEADS)])
    pos = torch.arange(length, dtype=torch.float32)
    return -slopes[:, None, None] * (pos[:, None] - pos[None, :]).clamp(min=0)


def rope_tables(length):
    inv = 1.0 / ROPE_BASE ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.float32) / HEAD_DIM)
    angles = torch.arange(length, dtype=torch.float32)[:, None] * inv[None, :]  # (L, D/2)
    angles = torch.cat([angles, angles], dim=-1)  # (L, D)
    return angles.cos(), angles.sin()


def rotate(x, cos, sin):
    half = x.size(-1) // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def xl_sinusoids(length):
    """(L, d_model): sinusoids of distances L-1 .. 0, sin half then cos half."""
    distances = torch.arange(length - 1, -1, -1, dtype=torch.float32)
    inv = 1.0 / 10000.0 ** (torch.arange(0, D_MODEL, 2, dtype=torch.float32) / D_MODEL)
    angles = distances[:, None] * inv[None, :]
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


def rel_shift(x):
    """(B, H, L, L): row i moved left by L-1-i, by the pad-and-reshape trick."""
    b, h, q, k = x.shape
    padded = torch.nn.functional.pad(x, (1, 0))  # (B, H, L, L+1)
    return padded.view(b, h, k + 1, q)[:, :, 1:].view(b, h, q, k)


class Attention(nn.Module):
    def __init__(self, scheme, length, device):
        super().__init__()
        self.scheme = scheme
        self.q, self.k, self.v, self.o = (
            nn.Linear(D_MODEL, D_MODEL, bias=False) for _ in range(4)
        )
        self.register_buffer("mask", torch.ones(length, length, dtype=torch.bool).triu(1))
        if scheme == "t5":
            self.table = nn.Parameter(torch.randn(T5_BUCKETS, HEADS) * 0.02)
            self.register_buffer("buckets", causal_t5_buckets(length))
        elif scheme == "alibi":
            self.register_buffer("alibi", alibi_bias(length))
        elif scheme == "rope":
            cos, sin = rope_tables(length)
            self.register_buffer("cos", cos)
            self.register_buffer("sin", sin)
        elif scheme == "shaw":
            width = 2 * SHAW_CLIP + 1
            self.keys = nn.Parameter(torch.randn(width, HEAD_DIM) * 0.02)
            self.values = nn.Parameter(torch.randn(width, HEAD_DIM) * 0.02)
            pos = torch.arange(length)
            index = (pos[None, :] - pos[:, None]).clamp(-SHAW_CLIP, SHAW_CLIP) + SHAW_CLIP
            self.register_buffer("index", index)  # (L, L)
        elif scheme == "xl":
            self.w_r = nn.Linear(D_MODEL, D_MODEL, bias=False)
            self.u = nn.Parameter(torch.zeros(HEADS, HEAD_DIM))
            self.v_bias = nn.Parameter(torch.zeros(HEADS, HEAD_DIM))
            self.register_buffer("r", xl_sinusoids(length))
        self.to(device)

    def heads(self, x):  # (B, L, d) -> (B, H, L, D)
        return x.view(x.size(0), x.size(1), HEADS, HEAD_DIM).transpose(1, 2)

    def forward(self, x):
        b, length, _ = x.shape
        q, k, v = self.heads(self.q(x)), self.heads(self.k(x)), self.heads(self.v(x))
        scale = 1.0 / math.sqrt(HEAD_DIM)
        if self.scheme == "rope":
            q, k = rotate(q, self.cos, self.sin), rotate(k, self.cos, self.sin)
        if self.scheme == "xl":
            r = self.w_r(self.r).view(length, HEADS, HEAD_DIM).transpose(0, 1)  # (H, L, D)
            content = (q + self.u[:, None, :]) @ k.transpose(-1, -2)
            position = rel_shift((q + self.v_bias[:, None, :]) @ r.transpose(-1, -2))
            logits = (content + position) * scale
        else:
            logits = (q @ k.transpose(-1, -2)) * scale  # (B, H, L, L)
        if self.scheme == "t5":
            logits = logits + self.table[self.buckets].permute(2, 0, 1)  # + (H, L, L)
        elif self.scheme == "alibi":
            logits = logits + self.alibi
        elif self.scheme == "shaw":
            index = self.index.expand(b, HEADS, length, length)
            relative = torch.gather(q @ self.keys.t(), -1, index)  # (B, H, L, L)
            logits = logits + relative * scale
        weights = torch.softmax(logits.masked_fill(self.mask, float("-inf")), dim=-1)
        out = weights @ v  # (B, H, L, D)
        if self.scheme == "shaw":
            bins = torch.zeros(b, HEADS, length, 2 * SHAW_CLIP + 1, device=x.device)
            out = out + bins.scatter_add_(-1, index, weights) @ self.values
        return self.o(out.transpose(1, 2).reshape(b, length, D_MODEL))


def synchronize(device):
    if device == "cuda":
        torch.cuda.synchronize()


def measure(scheme, length, reps, device):
    torch.manual_seed(7)
    layer = Attention(scheme, length, device)
    x = torch.randn(BATCH, length, D_MODEL, device=device, requires_grad=True)
    grad = torch.randn(BATCH, length, D_MODEL, device=device)

    def step():
        synchronize(device)
        start = time.perf_counter()
        layer(x).backward(grad)
        synchronize(device)
        seconds = time.perf_counter() - start
        layer.zero_grad(set_to_none=True)
        x.grad = None
        return seconds

    step()  # warm-up
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated() if device == "cuda" else 0
    seconds = [step() for _ in range(reps)]
    peak = torch.cuda.max_memory_allocated() - base if device == "cuda" else 0
    return {"framework": "torch", "scheme": scheme, "len": length,
            "ms": statistics.median(seconds) * 1e3, "peak_mib": peak / 2**20}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("lengths", type=int, nargs="*", default=[512, 2048, 8192])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--tf32", action="store_true", help="allow TF32 matmuls")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("cuda_attention_torch.py: torch.cuda.is_available() is False (use --device cpu "
                 "for a smoke test)")
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    print(f"PyTorch {torch.__version__} eager, one attention layer fwd+bwd, B={BATCH} H={HEADS} "
          f"head_dim={HEAD_DIM}, causal, f32{' (TF32)' if args.tf32 else ''}, median of "
          f"{args.reps}\n\n| scheme | L | ms | peak MiB |\n|---|---:|---:|---:|", file=sys.stderr)
    for length in args.lengths:
        for scheme in SCHEMES:
            try:
                row = measure(scheme, length, args.reps, args.device)
                print(f"| {scheme} | {length} | {row['ms']:.2f} | {row['peak_mib']:.0f} |",
                      file=sys.stderr)
            except RuntimeError as error:  # out of memory at L = 8192
                row = {"framework": "torch", "scheme": scheme, "len": length,
                       "error": str(error).split("\n")[0]}
                print(f"| {scheme} | {length} | failed: {row['error']} | |", file=sys.stderr)
            print(json.dumps(row), flush=True)
            if args.device == "cuda":
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
