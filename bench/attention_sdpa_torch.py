"""PyTorch's scaled_dot_product_attention, forward + backward, fp32 and bf16 autocast,
on the shapes of `bench_attention --bf16` (8, 4, L, 64), causal, without positions
and with an ALiBi-like (H, L, L) float mask; one thread, process CPU time, minimum of
5 after a warm-up. Usage: python attention_sdpa_torch.py  (PyTorch 2.x)."""
import time, torch, torch.nn.functional as F
torch.set_num_threads(1)
print(torch.__version__)
def cpu(): return time.process_time()
for L in (128, 512, 1024):
    row = [L]
    for mode in ("fp32", "bf16"):
        for bias in (False, True):
            q, k, v = (torch.randn(8, 4, L, 64, requires_grad=True) for _ in range(3))
            g = torch.randn(8, 4, L, 64)
            mask = None
            if bias:  # an ALiBi-like (H, L, L) bias with the causal mask folded in
                i = torch.arange(L)
                rel = (i[None, :] - i[:, None]).float()
                m = torch.tensor([2 ** -(h + 1) for h in range(4)])[:, None, None]
                mask = (m * -rel.abs()).masked_fill(rel > 0, float("-inf"))
            ts = []
            for r in range(6):
                t0 = cpu()
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=(mode == "bf16")):
                    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=not bias)
                out.backward(g.to(out.dtype))
                ts.append(cpu() - t0)
                for t in (q, k, v): t.grad = None
            row.append(f"{mode}{'+bias' if bias else ''} {min(ts[1:])*1e3:.1f}")
    print(row, flush=True)
