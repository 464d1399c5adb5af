#!/usr/bin/env python3
"""Generate JSON fixtures for the attention position schemes.

Usage (from the repository root, with the interpreter that has PyTorch):
    /usr/bin/python3 tools/reference/positions_reference.py [--out DIR]

The math lives in pos_schemes.py (float64, gather-based, autograd for the
gradients). This driver builds the cases, runs self-checks (pinned T5 buckets,
ALiBi slopes, XL rel-shift consistency, RoPE relativity, gradcheck per scheme)
and writes one JSON file per case. Output is deterministic: fixed seeds per
case, one CPU thread, float64, shortest-round-trip float formatting.
"""

import argparse
import ctypes
import ctypes.util
import json
import math
import os
import sys
import zlib

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pos_schemes as ps  # noqa: E402

DT = ps.DTYPE
PARAM_SCALE = 0.5


# ---------------------------------------------------------------------------
# Scheme registry: parameter shapes and forward functions
# ---------------------------------------------------------------------------

def param_shapes(scheme, cfg):
    """Ordered list of (name, shape) of the learnable parameters of a case."""
    H, D = cfg["H"], cfg["D"]
    if scheme in ("none", "alibi", "rope"):
        return []
    if scheme == "t5":
        return [("t5_table", [cfg["num_buckets"], H])]
    if scheme == "shaw":
        n = 2 * cfg["max_rel"] + 1
        shape = [H, n, D] if cfg["per_head"] else [n, D]
        out = []
        if cfg["use_keys"]:
            out.append(("shaw_keys", shape))
        if cfg["use_values"]:
            out.append(("shaw_values", list(shape)))
        return out
    if scheme == "xl":
        return [("xl_w_r", [H * D, cfg["d_model"]]), ("xl_u", [H, D]), ("xl_v", [H, D])]
    if scheme == "kerple":
        return [("layers.0.log_r1", [H]), ("layers.0.log_r2", [H])]
    if scheme == "fire":
        n = cfg["fire_hidden"]
        return [("layers.0." + p, s) for p, s in (("w1", [n]), ("b1", [n]), ("w2", [H, n]),
                ("log_c", [1]), ("log_threshold_scale", [1]))]
    raise ValueError("unknown scheme %r" % scheme)


def forward(scheme, cfg, q, k, v, params):
    causal = cfg["causal"]
    window = cfg.get("window", 0)  # a causal sliding window (model.attention_window)
    if scheme == "none":
        return ps.attn_none(q, k, v, causal, window)
    if scheme == "t5":
        return ps.attn_t5(q, k, v, params["t5_table"], causal, cfg["num_buckets"],
                          cfg["max_distance"], cfg["bidirectional"], cfg["scale"], window)
    if scheme == "shaw":
        return ps.attn_shaw(q, k, v, causal, cfg["max_rel"], cfg["per_head"],
                            params.get("shaw_keys"), params.get("shaw_values"), window)
    if scheme == "xl":
        return ps.attn_xl(q, k, v, params["xl_w_r"], params["xl_u"], params["xl_v"],
                          causal, cfg["d_model"], cfg["clamp_len"], window)
    if scheme == "alibi":
        return ps.attn_alibi(q, k, v, causal, window)
    if scheme == "rope":
        return ps.attn_rope(q, k, v, causal, cfg["base"], rope_scaling(cfg), window)
    if scheme == "kerple":
        return ps.attn_kerple(q, k, v, params["layers.0.log_r1"], params["layers.0.log_r2"],
                              causal, window)
    if scheme == "fire":
        p = [params["layers.0." + n] for n in ("w1", "b1", "w2", "log_c", "log_threshold_scale")]
        return ps.attn_fire(q, k, v, *p, cfg["fire_threshold"], causal)
    raise ValueError("unknown scheme %r" % scheme)


def rope_scaling(cfg):
    """The context extension of a rope case (None when it has none)."""
    if cfg.get("scaling", "none") == "none":
        return None
    return {"kind": cfg["scaling"], "factor": cfg["factor"], "original_len": cfg["original_len"]}


def aux_tensors(scheme, cfg, q, k):
    """Non-differentiable helper tensors stored alongside a case (for debugging)."""
    Lq, Lk = cfg["Lq"], cfg["Lk"]
    if scheme == "t5":
        return {"t5_buckets": ps.t5_bucket_matrix(Lq, Lk, cfg["bidirectional"],
                                                  cfg["num_buckets"], cfg["max_distance"])}
    if scheme == "shaw":
        return {"shaw_idx": ps.shaw_index_matrix(Lq, Lk, cfg["max_rel"])}
    if scheme == "xl":
        return {"xl_dist": ps.xl_distance_matrix(Lq, Lk, cfg["clamp_len"])}
    if scheme == "alibi":
        return {"alibi_slopes": torch.tensor(ps.alibi_slopes(cfg["H"]), dtype=DT)}
    if scheme == "rope":
        scaling = rope_scaling(cfg)
        return {"q_rot": ps.rope_rotate(q, ps.query_positions(Lq, Lk).tolist(), cfg["base"],
                                        scaling, Lk),
                "k_rot": ps.rope_rotate(k, ps.key_positions(Lk).tolist(), cfg["base"],
                                        scaling, Lk)}
    return {}


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

def _case(scheme, name, Lq, Lk, D, causal, B=2, H=3, **extra):
    cfg = {"B": B, "H": H, "Lq": Lq, "Lk": Lk, "D": D, "causal": causal}
    cfg.update(extra)
    return scheme, name, cfg


def _t5(name, Lq, Lk, D, causal, bidirectional, nb=8, md=12, scale=True, **extra):
    return _case("t5", name, Lq, Lk, D, causal, num_buckets=nb, max_distance=md,
                 bidirectional=bidirectional, scale=scale, **extra)


def _shaw(name, Lq, Lk, D, causal, max_rel=3, per_head=False, keys=True, values=True,
          **extra):
    return _case("shaw", name, Lq, Lk, D, causal, max_rel=max_rel, per_head=per_head,
                 use_keys=keys, use_values=values, **extra)


def _xl(name, Lq, Lk, D, d_model=None, clamp_len=0, H=3, **extra):
    return _case("xl", name, Lq, Lk, D, True, H=H,
                 d_model=H * D if d_model is None else d_model, clamp_len=clamp_len, **extra)


def _rope_scaled(name, Lq, Lk, D, causal, kind, factor, original_len, base=10000.0):
    return _case("rope", name, Lq, Lk, D, causal, base=base, scaling=kind, factor=factor,
                 original_len=original_len)


CASES = [
    _case("none", "none_causal", 16, 16, 8, True),
    _case("none", "none_bidir", 16, 16, 8, False),
    _case("none", "none_causal_mem", 5, 13, 8, True),
    _case("none", "none_bidir_mem", 5, 13, 8, False),

    _t5("t5_causal_unidir", 20, 20, 4, True, False),
    _t5("t5_bidir", 20, 20, 4, False, True),
    _t5("t5_causal_mem_unidir", 5, 16, 4, True, False),
    _t5("t5_causal_bidir_buckets", 16, 16, 4, True, True),
    _t5("t5_bidir_mem", 5, 16, 4, False, True),
    _t5("t5_bidir_nb32_md128", 24, 24, 4, False, True, nb=32, md=128),
    _t5("t5_causal_noscale", 16, 16, 4, True, False, scale=False),

    _shaw("shaw_causal", 12, 12, 4, True),
    _shaw("shaw_bidir", 12, 12, 4, False),
    _shaw("shaw_causal_mem", 5, 13, 4, True),
    _shaw("shaw_bidir_k1", 10, 10, 4, False, max_rel=1),
    _shaw("shaw_causal_per_head", 12, 12, 4, True, per_head=True),
    _shaw("shaw_bidir_per_head_mem", 5, 13, 4, False, per_head=True),
    _shaw("shaw_bidir_keys_only", 12, 12, 4, False, values=False),
    _shaw("shaw_causal_values_only", 12, 12, 4, True, keys=False),

    _xl("xl_causal", 10, 10, 4),
    _xl("xl_causal_mem", 5, 13, 4),
    _xl("xl_causal_mem_clamp", 6, 14, 4, clamp_len=5),
    _xl("xl_causal_dmodel10", 9, 9, 4, d_model=10),
    _xl("xl_causal_mem_dmodel6_d8", 4, 11, 8, d_model=6, clamp_len=7, H=2),

    _case("alibi", "alibi_causal", 16, 16, 4, True),
    _case("alibi", "alibi_bidir", 16, 16, 4, False),
    _case("alibi", "alibi_causal_mem", 5, 13, 4, True),
    _case("alibi", "alibi_causal_h4", 12, 12, 4, True, H=4),
    _case("alibi", "alibi_bidir_h6", 10, 10, 4, False, H=6),

    _case("rope", "rope_causal", 12, 12, 8, True, base=10000.0),
    _case("rope", "rope_bidir", 12, 12, 8, False, base=10000.0),
    _case("rope", "rope_causal_mem", 5, 13, 8, True, base=10000.0),
    _case("rope", "rope_bidir_d4", 16, 16, 4, False, base=10000.0),
    _rope_scaled("rope_linear_causal", 12, 12, 8, True, "linear", 3.0, 4),
    _rope_scaled("rope_ntk_causal_mem", 5, 13, 8, True, "ntk", 3.0, 4),
    _rope_scaled("rope_dynamic_ntk_causal", 12, 12, 8, True, "dynamic_ntk", 2.0, 4),
    _rope_scaled("rope_dynamic_ntk_causal_mem", 5, 13, 8, True, "dynamic_ntk", 2.0, 4),
    _rope_scaled("rope_dynamic_ntk_short", 6, 6, 8, True, "dynamic_ntk", 2.0, 8),
    _rope_scaled("rope_yarn_causal", 12, 12, 8, True, "yarn", 3.0, 40, base=100.0),
    _rope_scaled("rope_yarn_bidir_d16", 10, 10, 16, False, "yarn", 4.0, 64),

    _case("kerple", "kerple_causal", 14, 14, 4, True),
    _case("kerple", "kerple_bidir", 12, 12, 4, False),
    _case("kerple", "kerple_causal_mem", 5, 13, 4, True, H=4),

    # Causal sliding windows (model.attention_window): query i sees keys qpos(i) - W < j.
    _case("none", "none_causal_window4", 16, 16, 8, True, window=4),
    _case("none", "none_causal_mem_window1", 5, 13, 8, True, window=1),
    _t5("t5_causal_mem_window3", 5, 16, 4, True, False, window=3),
    _shaw("shaw_causal_window2", 12, 12, 4, True, window=2),
    _xl("xl_causal_mem_window5", 5, 13, 4, window=5),
    _case("alibi", "alibi_causal_window6", 16, 16, 4, True, window=6),
    _case("rope", "rope_causal_mem_window4", 5, 13, 8, True, base=10000.0, window=4),
    _case("kerple", "kerple_causal_window3", 14, 14, 4, True, window=3),
    # Thresholds inside the queries' positions: rows on both sides of max(i, L).
    _case("fire", "fire_causal", 14, 14, 4, True, fire_hidden=6, fire_c=0.1, fire_threshold=5.0),
    _case("fire", "fire_causal_mem", 5, 13, 4, True, H=4, fire_hidden=4, fire_c=0.1,
          fire_threshold=10.0),
]



def seed_for(name):
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


def build_case(scheme, name, cfg):
    B, H, Lq, Lk, D = cfg["B"], cfg["H"], cfg["Lq"], cfg["Lk"], cfg["D"]
    g = torch.Generator().manual_seed(seed_for(name))
    q = torch.randn(B, H, Lq, D, generator=g, dtype=DT)
    k = torch.randn(B, H, Lk, D, generator=g, dtype=DT)
    v = torch.randn(B, H, Lk, D, generator=g, dtype=DT)
    params = {}
    for pname, shape in param_shapes(scheme, cfg):
        params[pname] = torch.randn(*shape, generator=g, dtype=DT) * PARAM_SCALE
    grad_out = torch.randn(B, H, Lq, D, generator=g, dtype=DT)

    leaves = {"q": q, "k": k, "v": v}
    leaves.update(params)
    for t in leaves.values():
        t.requires_grad_(True)
    out = forward(scheme, cfg, q, k, v, params)
    assert out.shape == (B, H, Lq, D)
    assert torch.isfinite(out).all()
    (out * grad_out).sum().backward()

    tensors = {}
    for lname, t in leaves.items():
        tensors[lname] = t.detach()
        assert t.grad is not None, (name, lname)
        tensors["grad_" + lname] = t.grad.detach()
    tensors["grad_out"] = grad_out
    tensors["out"] = out.detach()
    aux = aux_tensors(scheme, cfg, q.detach(), k.detach())
    for aname, t in aux.items():
        assert aname not in tensors
        tensors[aname] = t.detach()
    return {
        "scheme": scheme,
        "case": name,
        "config": cfg,
        "params": [p for p, _ in param_shapes(scheme, cfg)],
        "aux": sorted(aux.keys()),
        "tensors": {n: tensor_entry(t) for n, t in tensors.items()},
    }


# ---------------------------------------------------------------------------
# Table fixtures
# ---------------------------------------------------------------------------

T5_BUCKET_CONFIGS = [(32, 128, True), (32, 128, False), (16, 128, True),
                     (8, 12, True), (8, 12, False), (64, 256, True)]
REL_MIN, REL_MAX = -300, 300


def t5_bucket_name(nb, md, bidir):
    return "buckets_%d_%d_%s" % (nb, md, "bidir" if bidir else "unidir")


def build_t5_buckets():
    tensors = {}
    for nb, md, bidir in T5_BUCKET_CONFIGS:
        vals = [ps.t5_bucket(r, bidir, nb, md) for r in range(REL_MIN, REL_MAX + 1)]
        tensors[t5_bucket_name(nb, md, bidir)] = torch.tensor(vals, dtype=torch.long)
    return {"scheme": "t5", "case": "t5_buckets",
            "config": {"rel_min": REL_MIN, "rel_max": REL_MAX,
                       "note": "index = rel - rel_min; rel = key - query"},
            "tensors": {n: tensor_entry(t) for n, t in tensors.items()}}


def build_alibi_slopes():
    tensors = {"slopes_%d" % H: torch.tensor(ps.alibi_slopes(H), dtype=DT) for H in range(1, 17)}
    return {"scheme": "alibi", "case": "alibi_slopes", "config": {"H_min": 1, "H_max": 16},
            "tensors": {n: tensor_entry(t) for n, t in tensors.items()}}


def build_sinusoidal_table():
    tensors = {"table_50_16": ps.sinusoidal_table(50, 16), "table_7_6": ps.sinusoidal_table(7, 6)}
    return {"scheme": "sinusoidal", "case": "sinusoidal_table", "config": {"base": 10000.0},
            "tensors": {n: tensor_entry(t) for n, t in tensors.items()}}


def build_xl_rel_shift():
    Lq, Lk = 5, 8
    g = torch.Generator().manual_seed(seed_for("xl_rel_shift"))
    x = torch.randn(2, 3, Lq, Lk, generator=g, dtype=DT)
    shifted = ps.xl_rel_shift(x, Lq, Lk)
    return {"scheme": "xl", "case": "xl_rel_shift", "config": {"Lq": Lq, "Lk": Lk},
            "tensors": {"x": tensor_entry(x), "shifted": tensor_entry(shifted)}}


# ---------------------------------------------------------------------------
# Serialisation
# ---------------------------------------------------------------------------

def tensor_entry(t):
    t = t.detach().contiguous()
    if t.dtype in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        data = [int(x) for x in t.reshape(-1).tolist()]
    else:
        assert t.dtype == DT, t.dtype
        data = [float(x) for x in t.reshape(-1).tolist()]
        assert all(math.isfinite(x) for x in data)
    return {"shape": list(t.shape), "data": data}


def write_json(obj, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=None, separators=(",", ":"), sort_keys=True)
        f.write("\n")


# ---------------------------------------------------------------------------
# Self-checks
# ---------------------------------------------------------------------------

def check_t5_pinned():
    expect = {0: 0, -1: 1, 1: 17, -16: 10, 16: 26, -32: 12, 32: 28, -64: 14, 64: 30,
              -91: 15, 91: 31, -90: 14}
    for r, b in expect.items():
        got = ps.t5_bucket(r, True, 32, 128)
        assert got == b, "T5 bucket(rel=%d) = %d, expected %d" % (r, got, b)
    all_b = [ps.t5_bucket(r, True, 32, 128) for r in range(REL_MIN, REL_MAX + 1)]
    assert 16 not in all_b, "bucket 16 must be unused for (32,128,bidir)"
    for n in range(91, 301):
        assert ps.t5_bucket(-n, True, 32, 128) == 15 and ps.t5_bucket(n, True, 32, 128) == 31
    assert ps.t5_bucket(-90, True, 32, 128) == 14 and ps.t5_bucket(90, True, 32, 128) == 30
    for bad in [(2, 10, True), (1, 10, False), (8, 2, True), (8, 4, False)]:
        try:
            ps.t5_bucket(5, bad[2], bad[0], bad[1])
        except ValueError:
            continue
        raise AssertionError("expected ValueError for %r" % (bad,))


def _hf_style_buckets(rel, bidirectional, num_buckets, max_distance):
    """Vectorised float32 formula over a whole tensor (torch.where style, with the
    log evaluated everywhere and the small branch selected afterwards)."""
    ret = torch.zeros_like(rel)
    nb = num_buckets
    if bidirectional:
        nb //= 2
        ret = ret + (rel > 0).to(torch.long) * nb
        n = rel.abs()
    else:
        n = -torch.min(rel, torch.zeros_like(rel))
    max_exact = nb // 2
    small = n < max_exact
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                         * (nb - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, nb - 1))
    return ret + torch.where(small, n, large)


def _libm_buckets(rels, bidirectional, num_buckets, max_distance):
    """Same float32 op sequence evaluated with the C library's logf via ctypes."""
    import numpy as np
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.logf.restype = ctypes.c_float
    libm.logf.argtypes = [ctypes.c_float]
    out = []
    for rel in rels:
        if bidirectional:
            nb = num_buckets // 2
            ret = nb if rel > 0 else 0
            n = abs(rel)
        else:
            nb, ret, n = num_buckets, 0, max(-rel, 0)
        me = nb // 2
        if n < me:
            out.append(ret + n)
            continue
        a = np.float32(n) / np.float32(me)
        b = np.float32(libm.logf(float(a)))
        c = b / np.float32(math.log(max_distance / me))
        d = c * np.float32(nb - me)
        out.append(ret + min(nb - 1, me + int(d)))
    return out


def check_t5_implementations(notes):
    rels = list(range(REL_MIN, REL_MAX + 1))
    rel_t = torch.tensor(rels, dtype=torch.long)
    for nb, md, bidir in T5_BUCKET_CONFIGS:
        ours = [ps.t5_bucket(r, bidir, nb, md) for r in rels]
        vec = _hf_style_buckets(rel_t, bidir, nb, md).tolist()
        if vec != ours:
            diff = [r for r, a, b in zip(rels, ours, vec) if a != b]
            notes.append("T5 %s: vectorised torch.log path differs at rel %s"
                         % (t5_bucket_name(nb, md, bidir), diff))
        try:
            lib = _libm_buckets(rels, bidir, nb, md)
        except (OSError, ImportError, AttributeError) as e:  # pragma: no cover
            notes.append("libm check skipped: %s" % e)
            continue
        assert lib == ours, "T5 %s: libm logf path differs" % t5_bucket_name(nb, md, bidir)
        f64 = []
        for r in rels:
            if bidir:
                h = nb // 2
                ret, n = (h if r > 0 else 0), abs(r)
            else:
                h, ret, n = nb, 0, max(-r, 0)
            me = h // 2
            f64.append(ret + (n if n < me else
                              min(h - 1, me + int(math.log(n / me) / math.log(md / me) * (h - me)))))
        if f64 != ours:
            diff = [r for r, a, b in zip(rels, ours, f64) if a != b]
            notes.append("T5 %s: a float64 evaluation would differ at rel %s"
                         % (t5_bucket_name(nb, md, bidir), diff))


def check_alibi():
    assert ps.alibi_slopes(8) == [2.0 ** -(h + 1) for h in range(8)]
    assert ps.alibi_slopes(1) == [2.0 ** -8]
    assert ps.alibi_slopes(3) == [2.0 ** -4, 2.0 ** -8, 2.0 ** -2]
    assert ps.alibi_slopes(6) == [2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8, 2.0 ** -1, 2.0 ** -3]
    s12 = ps.alibi_slopes(12)
    assert s12[:8] == ps.alibi_slopes(8) and s12[8:] == ps.alibi_slopes(16)[0::2][:4]


def check_xl_rel_shift():
    """The gathered BD term equals the rel-shift of the raw (Lq, Lk) BD matrix whose
    column c holds distance Lk-1-c; our rel_shift also agrees with the classic
    pad-a-zero-column-and-reshape trick on the causal part."""
    g = torch.Generator().manual_seed(7)
    B, H, D, d_model = 2, 3, 4, 10
    for Lq, Lk, clamp_len in [(6, 6, 0), (4, 9, 0), (5, 11, 4)]:
        qv = torch.randn(B, H, Lq, D, generator=g, dtype=DT)
        w_r = torch.randn(H * D, d_model, generator=g, dtype=DT)
        dists = [Lk - 1 - c for c in range(Lk)]
        if clamp_len > 0:
            dists = [min(t, clamp_len) for t in dists]
        r_raw = (ps.xl_sinusoid_rows(dists, d_model) @ w_r.t()).reshape(Lk, H, D)
        raw = torch.einsum("bhid,chd->bhic", qv, r_raw)
        shifted = ps.xl_rel_shift(raw, Lq, Lk)
        dist = ps.xl_distance_matrix(Lq, Lk, clamp_len)
        r = (ps.xl_sinusoid_rows([int(t) for t in dist.reshape(-1)], d_model) @ w_r.t()
             ).reshape(Lq, Lk, H, D)
        direct = torch.einsum("bhid,ijhd->bhij", qv, r)
        causal = ps.rel_matrix(Lq, Lk) <= 0
        assert torch.allclose(shifted[..., causal], direct[..., causal], rtol=0, atol=1e-12)
        # Classic trick: pad a zero column on the left, view as (Lk+1, Lq), drop first row.
        padded = torch.cat([torch.zeros(B, H, Lq, 1, dtype=DT), raw], dim=-1)
        classic = padded.reshape(B, H, Lk + 1, Lq)[:, :, 1:].reshape(B, H, Lq, Lk)
        assert torch.equal(classic[..., causal], shifted[..., causal])


def check_rope_relative():
    """RoPE scores depend only on the position difference."""
    g = torch.Generator().manual_seed(11)
    D = 8
    q = torch.randn(D, generator=g, dtype=DT)
    k = torch.randn(D, generator=g, dtype=DT)
    for delta in [-5, 0, 3]:
        vals = []
        for p in [0, 7, 19]:
            qr = ps.rope_rotate(q[None], [p + delta])[0]
            kr = ps.rope_rotate(k[None], [p])[0]
            vals.append(float(qr @ kr))
        assert max(vals) - min(vals) < 1e-12, vals
    # position 0 leaves vectors unchanged
    assert torch.equal(ps.rope_rotate(q[None], [0])[0], q)


def check_rope_scaling():
    """Position Interpolation turns position p*s into the unscaled position p; NTK keeps the
    fastest pair and divides the slowest by s; dynamic NTK is unscaled up to original_len;
    YaRN keeps the fastest pair, divides the slowest by s and scales cos, sin by 0.1 ln s + 1."""
    D, base, s = 16, 10000.0, 4.0
    theta = ps.inv_freq_list(D, base)
    lin, mag = ps.rope_scaled_frequencies(D, base, {"kind": "linear", "factor": s,
                                                    "original_len": 64})
    assert mag == 1.0 and all(abs(a * 4 * s - b * 4) < 1e-15 for a, b in zip(lin, theta))
    ntk, _ = ps.rope_scaled_frequencies(D, base, {"kind": "ntk", "factor": s, "original_len": 64})
    assert ntk[0] == theta[0] and abs(ntk[-1] - theta[-1] / s) < 1e-15 * theta[-1]
    dyn = {"kind": "dynamic_ntk", "factor": s, "original_len": 64}
    assert ps.rope_scaled_frequencies(D, base, dyn, 64)[0] == theta
    assert ps.rope_scaled_frequencies(D, base, dyn, 65)[0][-1] < theta[-1]
    yarn, mag = ps.rope_scaled_frequencies(D, base, {"kind": "yarn", "factor": s,
                                                     "original_len": 64})
    assert yarn[0] == theta[0] and abs(yarn[-1] - theta[-1] / s) < 1e-18
    assert abs(mag - (0.1 * math.log(s) + 1)) < 1e-15


def check_sinusoid():
    t = ps.sinusoidal_table(50, 16)
    p = torch.arange(50, dtype=DT)[:, None]
    i = torch.arange(0, 16, 2, dtype=DT)[None, :]
    ang = p / torch.pow(torch.tensor(10000.0, dtype=DT), i / 16)
    assert torch.allclose(t[:, 0::2], torch.sin(ang), rtol=0, atol=1e-13)
    assert torch.allclose(t[:, 1::2], torch.cos(ang), rtol=0, atol=1e-13)


GRADCHECK_CASES = [
    _case("none", "gc_none", 3, 5, 4, True, B=1, H=2),
    _t5("gc_t5", 4, 7, 4, True, True, nb=8, md=5),
    _shaw("gc_shaw", 3, 6, 4, False, max_rel=1, per_head=True),
    _xl("gc_xl", 3, 6, 4, d_model=6, clamp_len=3, H=2),
    _case("alibi", "gc_alibi", 3, 5, 4, False, B=1, H=3),
    _case("rope", "gc_rope", 3, 5, 4, True, B=1, H=2, base=10000.0),
    _rope_scaled("gc_rope_yarn", 3, 5, 8, True, "yarn", 3.0, 40, base=100.0),
    _rope_scaled("gc_rope_dynamic_ntk", 3, 5, 4, False, "dynamic_ntk", 2.0, 2),
    _case("kerple", "gc_kerple", 3, 5, 4, False, B=1, H=2),
    _case("fire", "gc_fire", 3, 6, 4, True, B=1, H=2, fire_hidden=3, fire_c=0.1,
          fire_threshold=4.0),
]


def check_gradients():
    for scheme, name, cfg in GRADCHECK_CASES:
        g = torch.Generator().manual_seed(seed_for(name))
        B, H, Lq, Lk, D = cfg["B"], cfg["H"], cfg["Lq"], cfg["Lk"], cfg["D"]
        shapes = [("q", [B, H, Lq, D]), ("k", [B, H, Lk, D]), ("v", [B, H, Lk, D])]
        shapes += param_shapes(scheme, cfg)
        names = [n for n, _ in shapes]
        inputs = tuple(torch.randn(*s, generator=g, dtype=DT).requires_grad_(True)
                       for _, s in shapes)

        def fn(*xs):
            d = dict(zip(names, xs))
            params = {n: d[n] for n in names[3:]}
            return forward(scheme, cfg, d["q"], d["k"], d["v"], params)

        assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-7, rtol=1e-5), name


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join("tests", "fixtures", "positions"),
                    help="output directory (default: tests/fixtures/positions)")
    ap.add_argument("--skip-checks", action="store_true", help="skip the self-checks")
    args = ap.parse_args(argv)

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    notes = []
    check_t5_pinned()
    if not args.skip_checks:
        check_t5_implementations(notes)
        check_alibi()
        check_xl_rel_shift()
        check_rope_relative()
        check_rope_scaling()
        check_sinusoid()
        check_gradients()
    for n in notes:
        print("note:", n)

    os.makedirs(args.out, exist_ok=True)
    names = set()
    outputs = [("t5_buckets", build_t5_buckets()),
               ("alibi_slopes", build_alibi_slopes()),
               ("sinusoidal_table", build_sinusoidal_table()),
               ("xl_rel_shift", build_xl_rel_shift())]
    for scheme, name, cfg in CASES:
        outputs.append((name, build_case(scheme, name, cfg)))
    for name, obj in outputs:
        assert name not in names, name
        names.add(name)
        path = os.path.join(args.out, name + ".json")
        write_json(obj, path)
        print("wrote %s (%d bytes)" % (path, os.path.getsize(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
