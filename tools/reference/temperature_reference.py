#!/usr/bin/env python3
"""Generate JSON fixtures for the attention temperature (model.attention_temperature).

Usage (from the repository root, with the interpreter that has PyTorch):
    /usr/bin/python3 tools/reference/temperature_reference.py [--out DIR]

The temperature multiplies each query by a factor before the scheme's attention:
log_length by ln(n) / ln(train_len) for the query at 1-based position n (the queries
are the last Lq of the Lk positions), learned by exp(t_h) per head, t a parameter
named "temperature". The scheme's attention is positions_reference.forward (the
independent gather-based math of pos_schemes.py), so additive biases that do not read
q (T5, ALiBi, KERPLE, FIRE, XL's u and v) are not scaled. Float64, fixed seeds, one
thread; the files have the format of the position fixtures plus the config keys
"temperature" and "train_len".
"""

import argparse
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pos_schemes as ps  # noqa: E402
import positions_reference as pr  # noqa: E402

DT = ps.DTYPE


def factors(cfg, t):
    """The (1, H or 1, Lq, 1) factors of the queries of a case; t: learned's parameter."""
    if cfg["temperature"] == "log_length":
        n = (ps.query_positions(cfg["Lq"], cfg["Lk"]) + 1).to(DT)  # 1-based positions
        return (torch.log(n) / math.log(cfg["train_len"]))[None, None, :, None]
    assert cfg["temperature"] == "learned"
    return torch.exp(t)[None, :, None, None]


def param_shapes(scheme, cfg):
    shapes = pr.param_shapes(scheme, cfg)
    if cfg["temperature"] == "learned":
        shapes.append(("temperature", [cfg["H"]]))
    return shapes


def forward(scheme, cfg, q, k, v, params):
    return pr.forward(scheme, cfg, q * factors(cfg, params.get("temperature")), k, v, params)


def _case(scheme, name, Lq, Lk, D, temperature, train_len=0, H=3, **extra):
    cfg = {"B": 2, "H": H, "Lq": Lq, "Lk": Lk, "D": D, "causal": True, "temperature": temperature}
    if temperature == "log_length":
        cfg["train_len"] = train_len
    cfg.update(extra)
    return scheme, name, cfg


# Query positions on both sides of train_len, and queries after cached keys (Lq < Lk).
CASES = [
    _case("none", "none_log_length", 12, 12, 8, "log_length", 5),
    _case("none", "none_log_length_mem", 5, 13, 8, "log_length", 6),
    _case("none", "none_learned", 10, 10, 8, "learned"),
    _case("alibi", "alibi_log_length", 10, 10, 4, "log_length", 4),
    _case("rope", "rope_log_length_mem", 5, 13, 8, "log_length", 6, base=10000.0),
    _case("rope", "rope_learned", 10, 10, 8, "learned", base=10000.0),
    _case("t5", "t5_learned", 10, 10, 4, "learned", num_buckets=8, max_distance=12,
          bidirectional=False, scale=True),
    _case("shaw", "shaw_log_length", 10, 10, 4, "log_length", 4, max_rel=3, per_head=False,
          use_keys=True, use_values=True),
    _case("xl", "xl_learned_mem", 5, 13, 4, "learned", d_model=12, clamp_len=0),
    _case("kerple", "kerple_log_length", 12, 12, 4, "log_length", 5),
    _case("fire", "fire_learned", 10, 10, 4, "learned", H=2, fire_hidden=4, fire_c=0.1,
          fire_threshold=5.0),
    _case("none", "none_log_length_window3", 12, 12, 8, "log_length", 5, window=3),
]


def build_case(scheme, name, cfg):
    B, H, Lq, Lk, D = cfg["B"], cfg["H"], cfg["Lq"], cfg["Lk"], cfg["D"]
    g = torch.Generator().manual_seed(pr.seed_for("temperature_" + name))
    leaves = {"q": torch.randn(B, H, Lq, D, generator=g, dtype=DT),
              "k": torch.randn(B, H, Lk, D, generator=g, dtype=DT),
              "v": torch.randn(B, H, Lk, D, generator=g, dtype=DT)}
    shapes = param_shapes(scheme, cfg)
    for pname, shape in shapes:
        leaves[pname] = torch.randn(*shape, generator=g, dtype=DT) * pr.PARAM_SCALE
    grad_out = torch.randn(B, H, Lq, D, generator=g, dtype=DT)
    for t in leaves.values():
        t.requires_grad_(True)
    params = {n: leaves[n] for n, _ in shapes}
    out = forward(scheme, cfg, leaves["q"], leaves["k"], leaves["v"], params)
    assert out.shape == (B, H, Lq, D) and torch.isfinite(out).all()
    (out * grad_out).sum().backward()
    tensors = {"out": out.detach(), "grad_out": grad_out}
    for lname, t in leaves.items():
        tensors[lname] = t.detach()
        tensors["grad_" + lname] = t.grad.detach()
    return {"scheme": scheme, "case": name, "config": cfg, "params": [p for p, _ in shapes],
            "aux": [], "tensors": {n: pr.tensor_entry(t) for n, t in tensors.items()}}


def check_properties():
    """log_length is 1 at n = train_len and 0 at n = 1; learned with t = 0 is the plain
    scheme; the gradient of every input and of t passes torch.autograd.gradcheck."""
    cfg = {"Lq": 6, "Lk": 6, "temperature": "log_length", "train_len": 4}
    f = factors(cfg, None).reshape(-1)
    assert f[0] == 0 and abs(f[3] - 1) < 1e-15 and f[5] > 1
    g = torch.Generator().manual_seed(5)
    for scheme, name, cfg in [_case("alibi", "gc_alibi", 3, 5, 4, "learned", H=2),
                              _case("rope", "gc_rope", 3, 5, 4, "log_length", 3, H=2,
                                    base=10000.0)]:
        shapes = [("q", [1, 2, 3, 4]), ("k", [1, 2, 5, 4]), ("v", [1, 2, 5, 4])]
        shapes += param_shapes(scheme, cfg)
        names = [n for n, _ in shapes]
        inputs = tuple(torch.randn(*s, generator=g, dtype=DT).requires_grad_(True)
                       for _, s in shapes)

        def fn(*xs, scheme=scheme, cfg=cfg):
            d = dict(zip(names, xs))
            return forward(scheme, cfg, d["q"], d["k"], d["v"], {n: d[n] for n in names[3:]})

        assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-7, rtol=1e-5), name
        if cfg["temperature"] == "learned":
            zero = dict(zip(names, inputs))
            plain = pr.forward(scheme, cfg, zero["q"], zero["k"], zero["v"], {})
            scaled = forward(scheme, cfg, zero["q"], zero["k"], zero["v"],
                             {"temperature": torch.zeros(2, dtype=DT)})
            assert torch.equal(plain, scaled)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join("tests", "fixtures", "temperature"),
                    help="output directory (default: tests/fixtures/temperature)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    check_properties()
    os.makedirs(args.out, exist_ok=True)
    for scheme, name, cfg in CASES:
        path = os.path.join(args.out, name + ".json")
        pr.write_json(build_case(scheme, name, cfg), path)
        print("wrote %s (%d bytes)" % (path, os.path.getsize(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
