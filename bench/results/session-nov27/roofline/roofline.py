"""Roofline of ResNet-50's N=32 FP16 layers against the GPU times of session-cw's call 1 sweeps (cuDNN's best plan and our
best config, each a CUDA-graph replay's GPU time): max(FLOPs / 667 TFLOP/s, bytes of x, w and y / 3.0 TB/s), issue 19's
figures. The bytes are the whole tensors', so a 1x1 stride-2 layer (which reads a quarter of x) and a layer whose tensors
stay in the 50 MB L2 between replays can beat "the roofline" (ratios above 1). python3
bench/results/session-nov27/roofline/roofline.py"""
import math
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "session-cw" / "call1" / "r"
N = 32


def parse(name):
    m = re.match(r"r50_(\d+)to(\d+)_(\d+)_(\d)x\d(?:s(\d))?", name)
    c, k, h, f = (int(m.group(i)) for i in (1, 2, 3, 4))
    return c, k, h, f, int(m.group(5) or 1)


g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
for d in "FBW":
    rows = []
    for b in (ROOT / f"sweep_{d}_new.log").read_text().split("\n\n"):
        m = re.match(r"(\S+): cuDNN isolated ([\d.]+) us, gpu ([\d.]+)", b.strip())
        if not m:
            continue
        c, k, h, f, s = parse(m.group(1))
        ho = (h + 2 * (f // 2) - f) // s + 1
        flops = 2 * N * k * ho * ho * c * f * f
        nbytes = 2 * (N * c * h * h + N * k * ho * ho + k * c * f * f)
        roof = max(flops / 667e12, nbytes / 3.0e12) * 1e6
        cudnn = float(m.group(3))
        ours = cudnn * min(float(x) for x in re.findall(r"iso\s+([\d.]+) gpu", b))
        rows.append((m.group(1), roof, "memory" if nbytes / 3.0e12 > flops / 667e12 else "compute", cudnn, ours,
                     nbytes / cudnn / 1e6))
    print(f"{d}: {len(rows)} layers; geomean roofline / cuDNN {g([r[1] / r[3] for r in rows]):.3f}, "
          f"roofline / ours {g([r[1] / r[4] for r in rows]):.3f} (the fraction of the roofline each reaches)")
    for name, roof, bound, cudnn, ours, bw in rows:
        print(f"  {name:26s} roofline {roof:6.1f} us ({bound:7s})  cuDNN {cudnn:6.1f} us = {roof / cudnn:4.2f} of it, "
              f"{bw:4.2f} TB/s   ours {ours:6.1f} us = {roof / ours:4.2f}")
