#!/usr/bin/env python3
"""The PyTorch twin of a relpos model: plain PyTorch, no relpos code.

It reads a file written by `relpos export CKPT --format safetensors -o FILE`,
builds the same causal Transformer LM from the config in the file's metadata
(every position scheme and every key that changes the math), loads the weights,
and computes the same loss and the same greedy samples (docs/export.md).

As a library:

    import torch, relpos_torch
    model = relpos_torch.load("model.safetensors")            # float64 by default
    logits = model(torch.tensor([list(b"And God said")]))     # (1, 12, vocab)

As a command:

    relpos_torch.py model.safetensors --text data/corpus/kjv.txt --lengths 128 --batches 8
    relpos_torch.py model.safetensors --prompt "And God said" --tokens 200

Shapes: tokens (B, L); hidden states (B, L, d); attention tensors (B, H, L, D).
"""

import argparse
import json
import math
import struct
import sys

import torch
import torch.nn.functional as F

IGNORE_TARGET = -100  # targets with this value are not scored (relpos's kIgnoreTarget)
EMBEDDING_INIT_STD = 0.02
SINUSOID_SCALE = EMBEDDING_INIT_STD * math.sqrt(2.0)  # the sinusoidal scheme's table scale

SAFETENSORS_DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F64": torch.float64}


class ExportError(Exception):
    """A file this twin cannot read or a model it cannot build, in one line."""


# ---------------------------------------------------------------- file


def read_safetensors(path):
    """-> (tensors {name: tensor in the file's dtype}, metadata {str: str})."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ExportError(f"{path}: {len(data)} bytes, too short for a safetensors file")
    (header_len,) = struct.unpack("<Q", data[:8])
    if 8 + header_len > len(data):
        raise ExportError(f"{path}: header of {header_len} bytes exceeds the file")
    try:
        header = json.loads(data[8 : 8 + header_len].decode("utf-8"))
    except ValueError as e:
        raise ExportError(f"{path}: the header is not JSON ({e})") from e
    metadata = header.pop("__metadata__", {})
    payload = memoryview(data)[8 + header_len :]
    tensors = {}
    for name, info in header.items():
        try:
            dtype = SAFETENSORS_DTYPES.get(info["dtype"])
            if dtype is None:
                raise ExportError(f"{path}: tensor {name} has dtype {info['dtype']}, expected F32 or BF16")
            begin, end = info["data_offsets"]
            if not 0 <= begin <= end <= len(payload):
                raise ExportError(f"{path}: tensor {name} lies outside the file")
            flat = torch.frombuffer(bytearray(payload[begin:end]), dtype=dtype)
            tensors[name] = flat.reshape(info["shape"])
        except (KeyError, TypeError, ValueError, RuntimeError) as e:
            raise ExportError(f"{path}: tensor {name} has a malformed header entry ({e})") from e
    return tensors, metadata


# ---------------------------------------------------------------- position math


def inverse_frequencies(dim, base=10000.0):
    """1 / base^(2m/dim), m = 0 .. dim/2 - 1, in float64."""
    return torch.tensor([1.0 / math.pow(base, (2.0 * m) / dim) for m in range(dim // 2)], dtype=torch.float64)


def sinusoids(positions, dim, interleaved):
    """(P, dim) table: interleaved [sin, cos, sin, cos, ...] or all sines then all cosines."""
    angle = positions.to(torch.float64)[:, None] * inverse_frequencies(dim)[None, :]  # (P, dim/2)
    if interleaved:
        return torch.stack([angle.sin(), angle.cos()], dim=-1).reshape(len(positions), dim)
    return torch.cat([angle.sin(), angle.cos()], dim=-1)


def t5_bucket(rel, num_buckets, max_distance, bidirectional):
    """T5's bucket of relative positions rel = key - query (int64 tensor), float32 log."""
    if bidirectional:
        nb = num_buckets // 2
        ret = (rel > 0).long() * nb
        n = rel.abs()
    else:
        nb = num_buckets
        ret = torch.zeros_like(rel)
        n = (-rel).clamp(min=0)
    max_exact = nb // 2
    large_n = n.clamp(min=max_exact)  # the small branch is taken first: no log(0)
    f32 = torch.float32
    a = large_n.to(f32) / torch.tensor(float(max_exact), dtype=f32)
    c = torch.log(a) / torch.tensor(math.log(max_distance / max_exact), dtype=f32)
    d = c * torch.tensor(float(nb - max_exact), dtype=f32)
    large = (max_exact + d.long()).clamp(max=nb - 1)
    return ret + torch.where(n < max_exact, n, large)


def alibi_slopes(heads):
    def pow2(n):
        return [math.pow(2.0, -8.0 * (h + 1) / n) for h in range(n)]

    if heads & (heads - 1) == 0:
        return pow2(heads)
    n = 1 << (heads.bit_length() - 1)
    return pow2(n) + pow2(2 * n)[0::2][: heads - n]


def rope_frequencies(dim, base, scaling, length):
    """RoPE's (dim/2) inverse frequencies and the factor on cos and sin under
    model.position.rope_scaling, for a sequence of `length` positions (dynamic_ntk only)."""
    kind, s, original = scaling["kind"], scaling["factor"], scaling["original_len"]
    plain = inverse_frequencies(dim, base)
    if kind == "linear":  # Position Interpolation: every angle divided by s
        return plain / s, 1.0
    if kind == "ntk" or (kind == "dynamic_ntk" and length > original):
        scale = s if kind == "ntk" else s * length / original - (s - 1.0)
        return inverse_frequencies(dim, base * scale ** (dim / (dim - 2.0))), 1.0
    if kind == "yarn":
        # The pair index whose frequency turns `r` times over the original length.
        def pair(r):
            return dim * math.log(original / (r * 2.0 * math.pi)) / (2.0 * math.log(base))

        low = max(math.floor(pair(scaling["beta_fast"])), 0.0)
        high = min(math.ceil(pair(scaling["beta_slow"])), dim - 1.0)
        if high == low:
            high += 0.001
        ramp = ((torch.arange(dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0.0, 1.0)
        magnitude = 0.1 * math.log(s) + 1.0 if s > 1.0 else 1.0  # YaRN's sqrt(1/t)
        return plain / s * ramp + plain * (1.0 - ramp), magnitude
    return plain, 1.0


def rotate(x, positions, base, scaling, length):
    """RoPE, rotate-half convention: x (B, H, L, D) at `positions` (L), in a sequence of
    `length` positions."""
    half = x.shape[-1] // 2
    inverse, magnitude = rope_frequencies(x.shape[-1], base, scaling, length)
    angle = positions.to(torch.float64)[:, None] * inverse[None, :]
    cos, sin = (magnitude * angle.cos()).to(x.dtype), (magnitude * angle.sin()).to(x.dtype)  # (L, D/2)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


# ---------------------------------------------------------------- the model


class Norm(torch.nn.Module):
    def __init__(self, kind, dim, eps=1e-5):
        super().__init__()
        self.kind, self.eps = kind, eps
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.bias = torch.nn.Parameter(torch.zeros(dim)) if kind == "layernorm" else None

    def forward(self, x):
        if self.kind == "layernorm":
            return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class PositionScheme(torch.nn.Module):
    """Every scheme's parameters (named as relpos names them) and terms."""

    def __init__(self, cfg, d_model, n_heads, n_layers):
        super().__init__()
        self.cfg, self.scheme = cfg, cfg["scheme"]
        self.heads, self.head_dim = n_heads, d_model // n_heads
        s, h, d = self.scheme, n_heads, d_model // n_heads

        def table(shape):
            return torch.nn.Parameter(torch.zeros(shape))

        if s == "learned":
            self.table = table((cfg["max_len"], d_model))
        elif s == "shaw":
            width = 2 * cfg["max_relative"] + 1
            shape = (h, width, d) if cfg["per_head"] else (width, d)
            self.layers = torch.nn.ModuleList(torch.nn.Module() for _ in range(n_layers))
            for layer in self.layers:
                if cfg["shaw_keys"]:
                    layer.keys = table(shape)
                if cfg["shaw_values"]:
                    layer.values = table(shape)
        elif s == "t5":
            if cfg["per_layer"]:
                self.layers = torch.nn.ModuleList(torch.nn.Module() for _ in range(n_layers))
                for layer in self.layers:
                    layer.table = table((cfg["num_buckets"], h))
            else:
                self.table = table((cfg["num_buckets"], h))
        elif s == "xl":
            self.layers = torch.nn.ModuleList(torch.nn.Module() for _ in range(n_layers))
            for layer in self.layers:
                layer.w_r = table((h * d, d_model))
                if cfg["per_layer_uv"]:
                    layer.u, layer.v = table((h, d)), table((h, d))
            if not cfg["per_layer_uv"]:
                self.u, self.v = table((h, d)), table((h, d))
        elif s == "kerple":
            self.layers = torch.nn.ModuleList(torch.nn.Module() for _ in range(n_layers))
            for layer in self.layers:
                layer.log_r1, layer.log_r2 = table((h,)), table((h,))
        elif s == "fire":
            self.layers = torch.nn.ModuleList(torch.nn.Module() for _ in range(n_layers))
            hidden = cfg["fire_hidden"]
            for layer in self.layers:
                layer.w1, layer.b1, layer.w2 = table((hidden,)), table((hidden,)), table((h, hidden))
                layer.log_c, layer.log_threshold_scale = table((1,)), table((1,))
        elif s not in ("none", "sinusoidal", "alibi", "rope"):
            raise ExportError(f"model.position.scheme '{s}' is unknown to this twin")

    def embed(self, x, start):
        """x (B, L, d) at positions start.. -> plus the absolute term."""
        length = x.shape[1]
        if self.scheme == "sinusoidal":
            positions = torch.arange(start, start + length)
            scale = self.cfg.get("sinusoid_scale", SINUSOID_SCALE)  # absent before the key
            return x + sinusoids(positions, x.shape[-1], True).to(x.dtype) * scale
        if self.scheme == "learned":
            if start + length > self.table.shape[0]:
                raise ExportError(
                    f"learned positions: position {start + length - 1} is beyond "
                    f"model.position.max_len={self.table.shape[0]}"
                )
            return x + self.table[start : start + length]
        return x

    def rotate(self, x, start):
        if self.scheme != "rope":
            return x
        end = start + x.shape[2]
        scaling = self.cfg.get("rope_scaling", {"kind": "none", "factor": 1.0, "original_len": 0})
        return rotate(x, torch.arange(start, end), self.cfg["rope_base"], scaling, end)

    def _layer(self, layer):
        return self.layers[layer] if hasattr(self, "layers") else self

    def scores(self, layer, q, k, rel):
        """Logits (B, H, Lq, Lk) of q (B, H, Lq, D) against k, with rel = key - query (Lq, Lk)."""
        scale = 1.0 / math.sqrt(self.head_dim)
        s, cfg = self.scheme, self.cfg
        if s == "t5":
            table = self._layer(layer).table if cfg["per_layer"] else self.table  # (buckets, H)
            bucket = t5_bucket(rel, cfg["num_buckets"], cfg["max_distance"], cfg["bidirectional_buckets"])
            bias = table[bucket].permute(2, 0, 1)  # (H, Lq, Lk)
            return q @ k.transpose(-1, -2) * (scale if cfg["scale"] else 1.0) + bias
        if s == "alibi":
            slopes = torch.tensor(alibi_slopes(self.heads), dtype=q.dtype)
            return q @ k.transpose(-1, -2) * scale - slopes[:, None, None] * rel.abs().to(q.dtype)
        if s == "kerple":
            p = self._layer(layer)
            r1, r2 = p.log_r1.exp()[:, None, None], p.log_r2.exp()[:, None, None]  # (H, 1, 1)
            return q @ k.transpose(-1, -2) * scale - r1 * torch.log1p(r2 * rel.abs().to(q.dtype))
        if s == "fire":  # f(log(1 + c d) / log(1 + c max(i, L_thr))), an MLP 1 -> hidden -> H
            p = self._layer(layer)
            c = p.log_c.exp()
            threshold = cfg["fire_threshold"] * p.log_threshold_scale.exp()
            dist = (-rel).clamp(min=0).to(q.dtype)  # (Lq, Lk); the masked part is not used
            qpos = (-rel[:, :1]).to(q.dtype)  # (Lq, 1): the query's position (key 0 at 0)
            x = torch.log1p(c * dist) / torch.log1p(c * torch.maximum(qpos, threshold))
            bias = (torch.relu(x[..., None] * p.w1 + p.b1) @ p.w2.transpose(0, 1)).permute(2, 0, 1)
            return q @ k.transpose(-1, -2) * scale + bias
        if s == "shaw" and cfg["shaw_keys"]:
            keys = self._layer(layer).keys  # (2k+1, D) or (H, 2k+1, D)
            idx = rel.clamp(-cfg["max_relative"], cfg["max_relative"]) + cfg["max_relative"]
            if keys.dim() == 2:
                qk_rel = q @ keys.transpose(0, 1)  # (B, H, Lq, 2k+1)
            else:
                qk_rel = torch.einsum("bhid,hrd->bhir", q, keys)
            gathered = qk_rel.gather(-1, idx.expand(q.shape[0], q.shape[1], -1, -1))  # (B, H, Lq, Lk)
            return (q @ k.transpose(-1, -2) + gathered) * scale
        if s == "xl":
            p = self._layer(layer)
            u, v = (p.u, p.v) if cfg["per_layer_uv"] else (self.u, self.v)  # (H, D)
            dist = (-rel).clamp(min=0)  # (Lq, Lk); the masked part is not used
            if cfg["clamp_len"] > 0:
                dist = dist.clamp(max=cfg["clamp_len"])
            k_len = k.shape[2]
            r_sin = sinusoids(torch.arange(k_len), p.w_r.shape[1], False).to(q.dtype)  # (Lk, d_model)
            r = (r_sin @ p.w_r.transpose(0, 1)).reshape(k_len, self.heads, self.head_dim)  # by distance
            content = (q + u[None, :, None, :]) @ k.transpose(-1, -2)
            by_distance = torch.einsum("bhid,thd->bhit", q + v[None, :, None, :], r)  # (B, H, Lq, Lk)
            position = by_distance.gather(-1, dist.expand(q.shape[0], q.shape[1], -1, -1))
            return (content + position) * scale
        return q @ k.transpose(-1, -2) * scale

    def values(self, layer, p, out, rel):
        """Shaw's value term: out + Σ_j p_ij values[idx(i, j)]; p (B, H, Lq, Lk)."""
        if self.scheme != "shaw" or not self.cfg["shaw_values"]:
            return out
        values = self._layer(layer).values
        k = self.cfg["max_relative"]
        idx = (rel.clamp(-k, k) + k).expand_as(p)
        bins = torch.zeros(*p.shape[:-1], 2 * k + 1, dtype=p.dtype).scatter_add(-1, idx, p)  # (B, H, Lq, 2k+1)
        if values.dim() == 2:
            return out + bins @ values
        return out + torch.einsum("bhir,hrd->bhid", bins, values)


class Attention(torch.nn.Module):
    def __init__(self, d_model, n_heads, layer, position, window, temperature):
        super().__init__()
        self.heads, self.layer, self.window = n_heads, layer, window  # window 0: none
        self.position = [position]  # shared with the model, not a submodule here
        for name in ("q", "k", "v", "o"):
            setattr(self, name, torch.nn.Linear(d_model, d_model, bias=False))
        # model.attention_temperature: a factor on the rotated queries.
        self.temperature_config = temperature
        if temperature["kind"] == "learned":  # exp(t_h) per head: attn.temperature
            self.temperature = torch.nn.Parameter(torch.zeros(n_heads))
        elif temperature["kind"] not in ("none", "log_length"):
            raise ExportError(f"model.attention_temperature.kind {temperature['kind']!r} is unknown to this twin")

    def temper(self, q, start):
        """q (B, H, L, D) at positions start.. times its temperature."""
        kind = self.temperature_config["kind"]
        if kind == "log_length":  # ln(n) / ln(L_train), n the 1-based position
            n = torch.arange(start + 1, start + q.shape[2] + 1, dtype=torch.float64)
            factor = torch.log(n) / math.log(self.temperature_config["train_len"])
            return q * factor.to(q.dtype)[:, None]
        if kind == "learned":
            return q * torch.exp(self.temperature)[None, :, None, None]
        return q

    def split(self, x):  # (B, L, d) -> (B, H, L, D)
        b, length, d = x.shape
        return x.reshape(b, length, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x, start):
        position = self.position[0]
        q = self.temper(position.rotate(self.split(self.q(x)), start), start)
        k = position.rotate(self.split(self.k(x)), start)
        v = self.split(self.v(x))
        length = x.shape[1]
        pos = torch.arange(start, start + length)
        rel = pos[None, :] - pos[:, None]  # (Lq, Lk): key minus query
        s = position.scores(self.layer, q, k, rel)
        s = s.masked_fill(rel > 0, float("-inf"))  # causal
        if self.window > 0:  # sliding window: keys at distance >= window hidden
            s = s.masked_fill(-rel >= self.window, float("-inf"))
        p = torch.softmax(s, dim=-1)
        out = position.values(self.layer, p, p @ v, rel)  # (B, H, L, D)
        return self.o(out.transpose(1, 2).reshape(x.shape))


class Block(torch.nn.Module):
    def __init__(self, cfg, layer, position, window):
        super().__init__()
        d = cfg["d_model"]
        self.norm1 = Norm(cfg["norm"], d)
        temperature = cfg.get("attention_temperature", {"kind": "none"})
        self.attn = Attention(d, cfg["n_heads"], layer, position, window, temperature)
        self.norm2 = Norm(cfg["norm"], d)
        self.mlp = torch.nn.Module()
        self.mlp.fc1 = torch.nn.Linear(d, cfg["d_ff"])
        self.mlp.fc2 = torch.nn.Linear(cfg["d_ff"], d)

    def forward(self, x, start):
        x = x + self.attn(self.norm1(x), start)
        return x + self.mlp.fc2(F.gelu(self.mlp.fc1(self.norm2(x)), approximate="tanh"))


class RelposLM(torch.nn.Module):
    """A relpos causal Transformer LM; parameter names are relpos's dotted names."""

    def __init__(self, config):
        super().__init__()
        m = config["model"]
        self.config = config
        if not m["causal"]:
            raise ExportError("model.causal is false: this twin builds causal language models only")
        if m["knn_memory"]["layer"] >= 0:
            # Without --knn-size, relpos evaluates and samples a kNN layer with its local
            # attention only: the same math as here; the retrieval is not reproduced.
            self.knn_layer = m["knn_memory"]["layer"]
        self.embed = torch.nn.Embedding(m["vocab"], m["d_model"])
        n_layers = m["n_layers"]
        if isinstance(m["position"], list):
            # Per-layer schemes: one module per distinct config, shared by the layers that
            # use it (named position.<g> in order of first use).
            groups = []
            for cfg in m["position"]:
                if cfg not in groups:
                    groups.append(cfg)
            self.position = torch.nn.ModuleList(
                PositionScheme(g, m["d_model"], m["n_heads"], n_layers) for g in groups
            )
            schemes = [self.position[groups.index(cfg)] for cfg in m["position"]]
        else:
            self.position = PositionScheme(m["position"], m["d_model"], m["n_heads"], n_layers)
            schemes = [self.position] * n_layers
        windows = m.get("attention_window", [])
        window = [0 if not windows else windows[0] if len(windows) == 1 else windows[l] for l in range(n_layers)]
        self.blocks = torch.nn.ModuleList(Block(m, l, schemes[l], window[l]) for l in range(n_layers))
        self.final_norm = Norm(m["norm"], m["d_model"])
        self.head = None if m["tie_embeddings"] else torch.nn.Linear(m["d_model"], m["vocab"], bias=False)

    def forward(self, tokens, start=0):
        """tokens int64 (B, L) at positions start.. -> logits (B, L, vocab)."""
        x = self.embed(tokens)  # (B, L, d)
        for scheme in self.position if isinstance(self.position, torch.nn.ModuleList) else [self.position]:
            x = scheme.embed(x, start)
        for block in self.blocks:
            x = block(x, start)
        x = self.final_norm(x)
        return self.head(x) if self.head is not None else x @ self.embed.weight.transpose(0, 1)

    @torch.no_grad()
    def loss_sum(self, inputs, targets):
        """(sum of cross-entropy in nats over the scored targets, their count)."""
        logits = self(inputs)
        total = F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=IGNORE_TARGET, reduction="sum"
        )
        return total.item(), int((targets != IGNORE_TARGET).sum())

    @torch.no_grad()
    def greedy(self, prompt, count):
        """The `count` tokens after `prompt` (a list of ints), each the most likely
        (ties: the lowest id), recomputing the whole context every token."""
        context = list(prompt)
        for _ in range(count):
            logits = self(torch.tensor([context]))[0, -1]
            context.append(int(torch.argmax(logits)))  # the first of equal maxima
        return context[len(prompt) :]


def load(path, dtype=torch.float64):
    """The model of a relpos safetensors export, in `dtype`, in eval mode."""
    tensors, metadata = read_safetensors(path)
    if metadata.get("format") != "relpos" or "config" not in metadata:
        raise ExportError(f"{path}: no relpos metadata (format, config); not written by relpos export")
    model = RelposLM(json.loads(metadata["config"]))
    state = {name: t.to(dtype) for name, t in tensors.items() if ".attn.knn." not in name}
    mine = dict(model.named_parameters())
    missing, unexpected = sorted(set(mine) - set(state)), sorted(set(state) - set(mine))
    if missing or unexpected:
        raise ExportError(f"{path}: parameters do not match the config: missing {missing}, unexpected {unexpected}")
    for name, value in state.items():
        if tuple(mine[name].shape) != tuple(value.shape):
            raise ExportError(f"{path}: {name} has shape {list(value.shape)}, the config says {list(mine[name].shape)}")
    model.to(dtype)
    model.load_state_dict(state, strict=False)
    return model.eval()


# ---------------------------------------------------------------- relpos's evaluation windows


def validation_windows(config, text_path, length, batches):
    """The batches `relpos eval --lengths length --batches batches` reads from a text
    corpus: the last floor(size * val_fraction) bytes, split into consecutive windows of
    length + 1 bytes sharing their boundary byte, max(1, batch_size * seq_len / length)
    windows a batch. -> [(inputs, targets)] int64 (rows, length) each."""
    data = config["data"]
    with open(text_path, "rb") as f:
        tokens = torch.tensor(list(f.read()), dtype=torch.int64)
    validation = tokens[len(tokens) - math.floor(len(tokens) * data["val_fraction"]) :]
    rows = max(1, data["batch_size"] * data["seq_len"] // length)
    used = min(max(0, len(validation) - 1) // length, rows * batches)
    out = []
    for first in range(0, used, rows):
        starts = range(first * length, min(first + rows, used) * length, length)
        windows = torch.stack([validation[s : s + length + 1] for s in starts])
        out.append((windows[:, :-1], windows[:, 1:]))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a file written by relpos export --format safetensors")
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    parser.add_argument("--text", help="the corpus file: evaluate on its validation split as relpos eval does")
    parser.add_argument("--lengths", default="", help="evaluation lengths, e.g. 128,256 (default: data.seq_len)")
    parser.add_argument("--batches", type=int, default=0, help="batches per length (default: train.eval_batches)")
    parser.add_argument("--prompt", help="greedy continuation of this text (as relpos sample --temperature 0)")
    parser.add_argument("--tokens", type=int, default=200, help="tokens to generate")
    args = parser.parse_args()
    torch.set_num_threads(1)
    try:
        model = load(args.model, getattr(torch, args.dtype))
        config = model.config
        tokenizer = config["data"].get("tokenizer", {"kind": "bytes"})["kind"]
        if tokenizer != "bytes" and (args.text or args.prompt is not None):
            raise ExportError(
                f"{args.model}: the model reads {tokenizer} tokens; --text and --prompt are byte "
                "level (call the model on token ids from Python)"
            )
        out = {"model": args.model}
        if args.text:
            lengths = [int(x) for x in args.lengths.split(",") if x] or [config["data"]["seq_len"]]
            batches = args.batches or config["train"]["eval_batches"]
            out["results"] = []
            for length in lengths:
                total, scored = 0.0, 0
                for inputs, targets in validation_windows(config, args.text, length, batches):
                    s, n = model.loss_sum(inputs, targets)
                    total, scored = total + s, scored + n
                loss = total / scored
                out["results"].append(
                    {"length": length, "loss": loss, "bits_per_byte": loss / math.log(2), "tokens": scored}
                )
        if args.prompt is not None:
            prompt = list(args.prompt.encode("utf-8"))
            out["sample"] = model.greedy(prompt, args.tokens)
        print(json.dumps(out))
    except (ExportError, OSError) as e:
        print(f"relpos_torch: error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyError as e:
        print(f"relpos_torch: error: {args.model}: the metadata's config has no key {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
