"""Slow, obvious float64 reference implementations of attention position schemes.

Everything here is written directly from the formulas in docs/position-schemes.md:
relative terms are gathered into full (Lq, Lk, ...) tensors and combined with
einsum. No shifting tricks, no fused kernels. Autograd provides the gradients.

Shapes: q (B, H, Lq, D); k, v (B, H, Lk, D); Lk >= Lq.
Query i sits at absolute position qpos(i) = (Lk - Lq) + i, key j at position j.
rel(i, j) = j - qpos(i)  (negative: key lies in the past).
"""

import math

import torch

DTYPE = torch.float64
NEG_INF = float("-inf")


# ---------------------------------------------------------------------------
# Positions and masking
# ---------------------------------------------------------------------------

def query_positions(Lq, Lk):
    if Lk < Lq:
        raise ValueError("need Lk >= Lq (got Lq=%d, Lk=%d)" % (Lq, Lk))
    return torch.arange(Lk - Lq, Lk, dtype=torch.long)


def key_positions(Lk):
    return torch.arange(Lk, dtype=torch.long)


def rel_matrix(Lq, Lk):
    """(Lq, Lk) integer matrix rel[i, j] = j - qpos(i)."""
    return key_positions(Lk)[None, :] - query_positions(Lq, Lk)[:, None]


def attention_probs(scores, causal, window=0):
    """Softmax over keys; in causal mode keys with j > qpos(i) get -inf, and with a
    sliding window (window > 0) so do keys at distance qpos(i) - j >= window."""
    Lq, Lk = scores.shape[-2], scores.shape[-1]
    if causal:
        future = rel_matrix(Lq, Lk) > 0
        scores = scores.masked_fill(future, NEG_INF)
    if window > 0:
        too_far = -rel_matrix(Lq, Lk) >= window
        scores = scores.masked_fill(too_far, NEG_INF)
    return torch.softmax(scores, dim=-1)


def dot_scores(q, k):
    """(B, H, Lq, Lk) matrix of raw dot products q_i . k_j."""
    return torch.einsum("bhid,bhjd->bhij", q, k)


def weighted_values(p, v):
    return torch.einsum("bhij,bhjd->bhid", p, v)


# ---------------------------------------------------------------------------
# Sinusoid helpers (constants: computed with Python's math, i.e. C libm)
# ---------------------------------------------------------------------------

def inv_freq_list(d, base=10000.0):
    """inv_freq[m] = 1 / base^(2m/d), m = 0 .. d/2 - 1 (d must be even)."""
    if d <= 0 or d % 2 != 0:
        raise ValueError("sinusoid dimension must be a positive even number, got %r" % (d,))
    return [1.0 / (base ** ((2.0 * m) / d)) for m in range(d // 2)]


def sinusoidal_table(L, d, base=10000.0):
    """Absolute (Vaswani) table, interleaved: PE[p, 2m] = sin, PE[p, 2m+1] = cos."""
    inv = inv_freq_list(d, base)
    rows = []
    for p in range(L):
        row = []
        for m in range(d // 2):
            angle = p * inv[m]
            row.append(math.sin(angle))
            row.append(math.cos(angle))
        rows.append(row)
    return torch.tensor(rows, dtype=DTYPE).reshape(L, d)


def xl_sinusoid_rows(ts, d_model, base=10000.0):
    """Transformer-XL relative sinusoids: row for distance t is
    [sin(t*inv_freq[0..]), cos(t*inv_freq[0..])] (all sines first)."""
    inv = inv_freq_list(d_model, base)
    rows = []
    for t in ts:
        angles = [t * f for f in inv]
        rows.append([math.sin(a) for a in angles] + [math.cos(a) for a in angles])
    return torch.tensor(rows, dtype=DTYPE).reshape(len(ts), d_model)


# ---------------------------------------------------------------------------
# 1. none
# ---------------------------------------------------------------------------

def attn_none(q, k, v, causal, window=0):
    D = q.shape[-1]
    s = dot_scores(q, k) / math.sqrt(D)
    return weighted_values(attention_probs(s, causal, window), v)


# ---------------------------------------------------------------------------
# 2. T5 relative bias buckets
# ---------------------------------------------------------------------------

def _f32(x):
    return torch.tensor(x, dtype=torch.float32)


def t5_bucket(rel, bidirectional, num_buckets, max_distance):
    """Bucket for one relative position rel = key - query.

    The log branch is evaluated in float32, one operation at a time:
      a = f32(n) / f32(max_exact); b = log(a);
      c = b / f32(log64(max_distance / max_exact)); d = c * f32(nb - max_exact)
    and truncated toward zero. Each op is a single-element float32 torch op,
    which evaluates with the C library's logf.
    """
    rel = int(rel)
    if bidirectional:
        nb = num_buckets // 2
        ret = nb if rel > 0 else 0
        n = abs(rel)
    else:
        nb = num_buckets
        ret = 0
        n = max(-rel, 0)
    max_exact = nb // 2
    if max_exact == 0:
        raise ValueError("T5 buckets: max_exact == 0 (num_buckets=%d, bidirectional=%s)"
                         % (num_buckets, bidirectional))
    if max_distance <= max_exact:
        raise ValueError("T5 buckets: max_distance=%d must exceed max_exact=%d"
                         % (max_distance, max_exact))
    if n < max_exact:
        return ret + n
    denom = math.log(max_distance / max_exact)  # float64, rounded to f32 below
    a = _f32(float(n)) / _f32(float(max_exact))
    b = torch.log(a)
    c = b / _f32(denom)
    d = c * _f32(float(nb - max_exact))
    large = max_exact + int(d.item())  # d >= 0, so int() truncates toward zero
    return ret + min(nb - 1, large)


def t5_bucket_matrix(Lq, Lk, bidirectional, num_buckets, max_distance):
    rel = rel_matrix(Lq, Lk)
    cache = {}
    out = torch.empty_like(rel)
    for i in range(Lq):
        for j in range(Lk):
            r = int(rel[i, j])
            if r not in cache:
                cache[r] = t5_bucket(r, bidirectional, num_buckets, max_distance)
            out[i, j] = cache[r]
    return out


def attn_t5(q, k, v, t5_table, causal, num_buckets, max_distance, bidirectional, scale,
            window=0):
    D = q.shape[-1]
    Lq, Lk = q.shape[2], k.shape[2]
    buckets = t5_bucket_matrix(Lq, Lk, bidirectional, num_buckets, max_distance)
    bias = t5_table[buckets]              # (Lq, Lk, H)
    bias = bias.permute(2, 0, 1)          # (H, Lq, Lk)
    s = dot_scores(q, k)
    if scale:
        s = s / math.sqrt(D)
    s = s + bias[None]
    return weighted_values(attention_probs(s, causal, window), v)


# ---------------------------------------------------------------------------
# 3. Shaw et al. relative key / value embeddings
# ---------------------------------------------------------------------------

def shaw_index_matrix(Lq, Lk, max_rel):
    if max_rel < 0:
        raise ValueError("max_rel must be >= 0")
    return rel_matrix(Lq, Lk).clamp(-max_rel, max_rel) + max_rel


def attn_shaw(q, k, v, causal, max_rel, per_head, shaw_keys=None, shaw_values=None, window=0):
    D = q.shape[-1]
    Lq, Lk = q.shape[2], k.shape[2]
    idx = shaw_index_matrix(Lq, Lk, max_rel)  # (Lq, Lk)
    s = dot_scores(q, k)
    if shaw_keys is not None:
        if per_head:
            rk = shaw_keys[:, idx]            # (H, Lq, Lk, D)
            s = s + torch.einsum("bhid,hijd->bhij", q, rk)
        else:
            rk = shaw_keys[idx]               # (Lq, Lk, D)
            s = s + torch.einsum("bhid,ijd->bhij", q, rk)
    s = s / math.sqrt(D)
    p = attention_probs(s, causal, window)
    out = weighted_values(p, v)
    if shaw_values is not None:
        if per_head:
            rv = shaw_values[:, idx]          # (H, Lq, Lk, D)
            out = out + torch.einsum("bhij,hijd->bhid", p, rv)
        else:
            rv = shaw_values[idx]             # (Lq, Lk, D)
            out = out + torch.einsum("bhij,ijd->bhid", p, rv)
    return out


# ---------------------------------------------------------------------------
# 4. Transformer-XL
# ---------------------------------------------------------------------------

def xl_distance_matrix(Lq, Lk, clamp_len):
    """dist(i, j) = qpos(i) - j, forced to >= 0 (the negative entries are masked
    anyway), then clamped to clamp_len when clamp_len > 0."""
    dist = (-rel_matrix(Lq, Lk)).clamp(min=0)
    if clamp_len > 0:
        dist = dist.clamp(max=clamp_len)
    return dist


def attn_xl(q, k, v, xl_w_r, xl_u, xl_v, causal, d_model, clamp_len, window=0):
    if not causal:
        raise ValueError("xl scheme is causal only")
    B, H, Lq, D = q.shape
    Lk = k.shape[2]
    dist = xl_distance_matrix(Lq, Lk, clamp_len)             # (Lq, Lk)
    R = xl_sinusoid_rows([int(t) for t in dist.reshape(-1)], d_model)  # (Lq*Lk, d_model)
    r = (R @ xl_w_r.t()).reshape(Lq, Lk, H, D)                # r_h(dist(i, j))
    ac = torch.einsum("bhid,bhjd->bhij", q + xl_u[None, :, None, :], k)
    bd = torch.einsum("bhid,ijhd->bhij", q + xl_v[None, :, None, :], r)
    s = (ac + bd) / math.sqrt(D)
    return weighted_values(attention_probs(s, True, window), v)


def xl_rel_shift(x, Lq, Lk):
    """shifted[..., i, j] = x[..., i, j + Lq - 1 - i] if that index is in [0, Lk), else 0."""
    out = torch.zeros_like(x)
    for i in range(Lq):
        for j in range(Lk):
            c = j + Lq - 1 - i
            if 0 <= c < Lk:
                out[..., i, j] = x[..., i, c]
    return out


# ---------------------------------------------------------------------------
# 5. ALiBi
# ---------------------------------------------------------------------------

def _alibi_pow2_slopes(n):
    return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]


def alibi_slopes(H):
    if H < 1:
        raise ValueError("H must be >= 1")
    if H & (H - 1) == 0:
        return _alibi_pow2_slopes(H)
    n = 1 << (H.bit_length() - 1)  # largest power of two below H
    return _alibi_pow2_slopes(n) + _alibi_pow2_slopes(2 * n)[0::2][: H - n]


def attn_alibi(q, k, v, causal, window=0):
    H, Lq, D = q.shape[1], q.shape[2], q.shape[3]
    Lk = k.shape[2]
    m = torch.tensor(alibi_slopes(H), dtype=DTYPE)
    # -m * |qpos - j|; on the causal (unmasked) part this is -m * (qpos - j).
    dist = rel_matrix(Lq, Lk).abs().to(DTYPE)
    bias = -m[:, None, None] * dist[None]         # (H, Lq, Lk)
    s = dot_scores(q, k) / math.sqrt(D) + bias[None]
    return weighted_values(attention_probs(s, causal, window), v)


def attn_kerple(q, k, v, log_r1, log_r2, causal, window=0):
    """KERPLE-log (Chi et al. 2022): bias -r1 * log(1 + r2 * |qpos - j|) per head, with
    r1 = exp(log_r1) and r2 = exp(log_r2)."""
    D, Lq, Lk = q.shape[3], q.shape[2], k.shape[2]
    dist = rel_matrix(Lq, Lk).abs().to(DTYPE)                       # (Lq, Lk)
    r1, r2 = torch.exp(log_r1), torch.exp(log_r2)                    # (H,)
    bias = -r1[:, None, None] * torch.log1p(r2[:, None, None] * dist[None])  # (H, Lq, Lk)
    s = dot_scores(q, k) / math.sqrt(D) + bias[None]
    return weighted_values(attention_probs(s, causal, window), v)


def attn_fire(q, k, v, w1, b1, w2, log_c, log_threshold_scale, threshold, causal):
    """FIRE (Li et al. 2023): bias f(psi(qpos - j) / psi(max(qpos, L))) per head with
    psi(x) = log(1 + c x), c = exp(log_c), L = threshold * exp(log_threshold_scale) and
    f(x) = w2 relu(w1 x + b1) (1 -> hidden -> H; no output bias, which would cancel in the
    softmax). Causal only."""
    assert causal
    D, Lq, Lk = q.shape[3], q.shape[2], k.shape[2]
    c = torch.exp(log_c)                                             # (1,)
    L = threshold * torch.exp(log_threshold_scale)                   # (1,)
    qpos = query_positions(Lq, Lk).to(DTYPE)[:, None]                # (Lq, 1)
    dist = (-rel_matrix(Lq, Lk)).clamp(min=0).to(DTYPE)              # (Lq, Lk)
    x = torch.log1p(c * dist) / torch.log1p(c * torch.maximum(qpos, L))
    hidden = torch.relu(x[..., None] * w1 + b1)                      # (Lq, Lk, hidden)
    bias = (hidden @ w2.T).permute(2, 0, 1)                          # (H, Lq, Lk)
    s = dot_scores(q, k) / math.sqrt(D) + bias[None]
    return weighted_values(attention_probs(s, causal), v)


# ---------------------------------------------------------------------------
# 6. RoPE (rotate-half)
# ---------------------------------------------------------------------------

def rope_scaled_frequencies(D, base, scaling=None, length=0):
    """(inv_freq list, magnitude on cos and sin) of RoPE under a context extension.

    scaling: None or a dict with kind (none, linear, ntk, dynamic_ntk, yarn), factor s,
    original_len L0 and, for yarn, beta_fast and beta_slow (rotations over L0).
    length: the sequence length n that dynamic_ntk scales from.
    - linear (Position Interpolation): every frequency divided by s.
    - ntk: the base raised to base * s^(D/(D-2)).
    - dynamic_ntk: ntk with s' = s*n/L0 - (s-1) when n > L0, else unscaled.
    - yarn: pair m extrapolated (kept) while it turns more than beta_fast times over
      L0, interpolated (divided by s) once it turns fewer than beta_slow times, in
      between a linear ramp over the pair index from floor(m_fast) to ceil(m_slow),
      where m_r solves L0 / (2 pi / theta_m) = r for m; cos and sin times 0.1 ln s + 1.
    """
    kind = "none" if scaling is None else scaling["kind"]
    s = 1.0 if scaling is None else float(scaling["factor"])
    if kind == "ntk":
        return inv_freq_list(D, base * s ** (D / (D - 2))), 1.0
    if kind == "dynamic_ntk":
        L0 = scaling["original_len"]
        if length > L0:
            s_dyn = s * length / L0 - (s - 1)
            return inv_freq_list(D, base * s_dyn ** (D / (D - 2))), 1.0
        return inv_freq_list(D, base), 1.0
    theta = inv_freq_list(D, base)
    if kind == "linear":
        return [t / s for t in theta], 1.0
    if kind == "yarn":
        L0 = scaling["original_len"]

        def index_turning(r):
            # theta_m = base^(-2m/D); L0 * theta_m / (2 pi) = r  <=>  m = D ln(L0/(2 pi r)) / (2 ln base)
            return D * math.log(L0 / (2 * math.pi * r)) / (2 * math.log(base))

        lo = max(math.floor(index_turning(scaling.get("beta_fast", 32.0))), 0)
        hi = min(math.ceil(index_turning(scaling.get("beta_slow", 1.0))), D - 1)
        if hi == lo:
            hi += 0.001
        out = []
        for m, t in enumerate(theta):
            gamma = min(max((m - lo) / (hi - lo), 0.0), 1.0)  # 0: kept, 1: interpolated
            out.append((1 - gamma) * t + gamma * t / s)
        return out, (0.1 * math.log(s) + 1.0 if s > 1 else 1.0)
    assert kind == "none", kind
    return theta, 1.0


def rope_cos_sin(positions, D, base=10000.0, scaling=None, length=0):
    inv, magnitude = rope_scaled_frequencies(D, base, scaling, length)
    cos_rows, sin_rows = [], []
    for p in positions:
        angles = [int(p) * f for f in inv]
        cos_rows.append([magnitude * math.cos(a) for a in angles])
        sin_rows.append([magnitude * math.sin(a) for a in angles])
    L = len(positions)
    return (torch.tensor(cos_rows, dtype=DTYPE).reshape(L, D // 2),
            torch.tensor(sin_rows, dtype=DTYPE).reshape(L, D // 2))


def rope_rotate(x, positions, base=10000.0, scaling=None, length=0):
    """x: (..., L, D). Pairs (m, m + D/2) rotated by angle positions[l] * inv_freq[m]."""
    D = x.shape[-1]
    half = D // 2
    cos, sin = rope_cos_sin(positions, D, base, scaling, length)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def attn_rope(q, k, v, causal, base=10000.0, scaling=None, window=0):
    """scaling: see rope_scaled_frequencies; the sequence length is Lk."""
    Lq, Lk = q.shape[2], k.shape[2]
    qr = rope_rotate(q, query_positions(Lq, Lk).tolist(), base, scaling, Lk)
    kr = rope_rotate(k, key_positions(Lk).tolist(), base, scaling, Lk)
    return attn_none(qr, kr, v, causal, window)
