"""A/B of miofind.torch's kept weight casts (``functional._cast_param``) on batch-1 AMP inference: the same
converted model, in one process, timed with the kept casts and with a fresh ``t.to(dt)`` per call,
alternating rounds (median of each round's median), next to cuDNN benchmark mode in the same process.

    python bench/bench_cast_cache.py [--model resnet50] [--rounds 5] [--iters 30] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_models import build, inputs, median_ms, prepare, stepper  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--json")
    a = ap.parse_args()
    import torch

    from miofind.torch import functional as MF

    xs, ys = inputs(a.model, 1, True, 4)
    cud = stepper(prepare(build(a.model), False, True, "cudnn"), False, True)
    mio = stepper(prepare(build(a.model), False, True, "miofind"), False, True)
    mio(xs[0], ys[0])
    from miofind import tiered
    tiered.wait(900)
    kept, fresh = MF._cast_param, (lambda t, dt: t if t.dtype == dt else t.to(dt))
    rounds = {"cudnn": [], "miofind_kept_casts": [], "miofind_fresh_casts": []}
    for r in range(a.rounds):
        torch.backends.cudnn.benchmark = True
        rounds["cudnn"].append(median_ms(cud, xs, ys, 5 if r == 0 else 2, a.iters))
        torch.backends.cudnn.benchmark = False
        for name, fn in (("miofind_kept_casts", kept), ("miofind_fresh_casts", fresh)):
            MF._cast_param = fn
            rounds[name].append(median_ms(mio, xs, ys, 5 if r == 0 else 2, a.iters))
        MF._cast_param = kept
    out = {"command": " ".join(sys.argv), "model": a.model, "config": "infer1-amp channels_last",
           "rounds_ms": rounds, "median_ms": {k: statistics.median(v) for k, v in rounds.items()}}
    m = out["median_ms"]
    out["speedup_vs_cudnn"] = {k: m["cudnn"] / m[k] for k in ("miofind_kept_casts", "miofind_fresh_casts")}
    print(json.dumps(out, indent=1))
    if a.json:
        json.dump(out, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
