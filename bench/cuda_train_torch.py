#!/usr/bin/env python3
"""The PyTorch peer of bench_cuda_train: training throughput of the same
byte-level decoder LM in eager mode on the GPU. vocab 256, d_model 512, 6 layers,
8 heads, d_ff 2048, pre-LN layernorm, tanh GELU, tied embeddings, no dropout, the
attention layer of cuda_attention_torch.py (T5 bias by default), AdamW (lr 3e-4,
weight decay 0.1, PyTorch's default implementation), clip_grad_norm_ 1.0, and the
loss read back every step as relpos's trainer does. Batch 16 x 512 random bytes.

Prints one JSON line with the fields of bench_cuda_train. --device cpu runs a
small smoke test anywhere.
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from cuda_attention_torch import D_MODEL, SCHEMES, Attention, synchronize

VOCAB, N_LAYERS, D_FF = 256, 6, 2048


class Block(nn.Module):
    def __init__(self, scheme, length, device):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
        self.attention = Attention(scheme, length, device)
        self.fc1, self.fc2 = nn.Linear(D_MODEL, D_FF), nn.Linear(D_FF, D_MODEL)

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x)), approximate="tanh"))


class LanguageModel(nn.Module):
    def __init__(self, scheme, length, device):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        nn.init.normal_(self.embed.weight, std=0.02)
        self.blocks = nn.ModuleList(Block(scheme, length, device) for _ in range(N_LAYERS))
        self.final_norm = nn.LayerNorm(D_MODEL)
        self.to(device)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.final_norm(x) @ self.embed.weight.t()  # tied head: (B, L, V)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scheme", choices=SCHEMES, default="t5")
    parser.add_argument("--len", type=int, default=512)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=20, help="timed steps (median reported)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    parser.add_argument("--tf32", action="store_true", help="allow TF32 matmuls")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("cuda_train_torch.py: torch.cuda.is_available() is False (use --device cpu "
                 "for a smoke test)")
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.manual_seed(0)
    model = LanguageModel(args.scheme, args.len, args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    seconds, losses = [], []
    for step in range(args.warmup + args.steps):
        start = time.perf_counter()
        data = torch.randint(0, VOCAB, (args.batch, args.len + 1), device=args.device)
        optimizer.zero_grad(set_to_none=True)
        logits = model(data[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), data[:, 1:].reshape(-1))
        losses.append(loss.item())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        synchronize(args.device)
        if step >= args.warmup:
            seconds.append(time.perf_counter() - start)
    median_step = statistics.median(seconds)
    print(json.dumps({
        "framework": "torch", "scheme": args.scheme, "len": args.len, "batch": args.batch,
        "tf32": args.tf32, "parameters": sum(p.numel() for p in model.parameters()),
        "steps": args.steps, "median_step_s": median_step,
        "tokens_per_s": args.batch * args.len / median_step,
        "first_loss": losses[0], "final_loss": losses[-1], "torch": torch.__version__}))


if __name__ == "__main__":
    main()
