"""Eager steps of cuDNN benchmark mode and miofind.torch interleaved step by step: a host-bound comparison that a
noisy host's drifts do not decide.

A batch-1 inference step (or a small model's training step) is bound by the host on both sides, and an H100 host's
speed drifts by tens of percent over seconds (``bench/results/session-floor/``: the same configuration's eager step
3.1 to 9.8 ms between processes). ``bench_graph_step`` alternates rounds of 20 steps, which such a drift can still
split. Here the two sides alternate every step, in ABBA order, for ``--pairs`` pairs after a warm-up, each step timed
from its start to a synchronisation (the wall time a framework's loop sees). Reported per configuration: each side's
median step, the speed ratio of the medians (cuDNN ms / miofind ms), the median of the per-pair ratios, and the
share of pairs miofind won.

    python bench/bench_eager_pairs.py --out DIR [--models resnet50,mobilenet_v2,inception_v3]
        [--configs infer1-fp32,infer1-amp] [--pairs 300]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_graph_step as gs  # noqa: E402
import bench_models as bm  # noqa: E402


def run(name: str, config: str, pairs: int) -> dict:
    torch = bm._torch()
    train, batch, amp = bm.parse(config)
    xs, ys = bm.inputs(name, batch, amp, 4)
    steps = {}
    for backend in ("cudnn", "miofind"):
        model = bm.build(name)
        if not train:
            gs.calibrate(name, model)
        model = bm.prepare(model, train, amp, backend)
        torch.backends.cudnn.benchmark = backend == "cudnn"
        step = bm.stepper(model, train, amp)
        step(xs[0], ys[0])
        if backend == "miofind":
            from miofind import tiered
            from miofind.torch import _fast
            tiered.wait(900)
            _fast.wait(900)
        for i in range(10):
            step(xs[i % 4], ys[i % 4])
        torch.cuda.synchronize()
        steps[backend] = step

    def timed(backend: str, i: int) -> float:
        torch.backends.cudnn.benchmark = backend == "cudnn"
        t0 = time.perf_counter()
        steps[backend](xs[i % 4], ys[i % 4])
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1e3

    ms = {"cudnn": [], "miofind": []}
    for i in range(pairs):
        order = ("cudnn", "miofind") if i % 2 == 0 else ("miofind", "cudnn")     # ABBA
        for b in order:
            ms[b].append(timed(b, i))
    ratios = [c / m for c, m in zip(ms["cudnn"], ms["miofind"])]
    import miofind.torch as mt
    row = {"model": name, "config": config, "pairs": pairs,
           "cudnn_ms": statistics.median(ms["cudnn"]), "miofind_ms": statistics.median(ms["miofind"]),
           "cudnn_q": statistics.quantiles(ms["cudnn"], n=10)[::8], "miofind_q": statistics.quantiles(ms["miofind"], n=10)[::8],
           "median_pair_ratio": statistics.median(ratios), "won": sum(r > 1 for r in ratios) / len(ratios),
           "miofind_stats": mt.stats()}
    row["speedup"] = row["cudnn_ms"] / row["miofind_ms"]
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="resnet50,mobilenet_v2,inception_v3")
    ap.add_argument("--configs", default="infer1-fp32,infer1-amp")
    ap.add_argument("--pairs", type=int, default=300)
    args = ap.parse_args(argv)
    torch = bm._torch()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        for config in args.configs.split(","):
            try:
                row = run(name, config, args.pairs)
            except Exception as e:      # noqa: BLE001  reported, the other rows go on
                row = {"model": name, "config": config, "error": f"{type(e).__name__}: {e}"}
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "miofind_stats"}), flush=True)
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
            "argv": sys.argv}
    (out / "bench_eager_pairs.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"# Eager steps, cuDNN benchmark mode and miofind.torch alternating step by step ({meta['device']})", "",
             f"`{' '.join(sys.argv)}`; torch {meta['torch']}, cuDNN {meta['cudnn']}; each step timed to a "
             "synchronisation, ABBA order; speedup = cuDNN ms / miofind ms.", "",
             "| model | config | pairs | cuDNN ms (p10-p90) | miofind ms (p10-p90) | speedup of medians | median pair ratio "
             "| pairs miofind won |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['config']} | {r['error']} | | | | | |")
            continue
        lines.append(f"| {r['model']} | {r['config']} | {r['pairs']} | {r['cudnn_ms']:.2f} ({r['cudnn_q'][0]:.2f}-"
                     f"{r['cudnn_q'][1]:.2f}) | {r['miofind_ms']:.2f} ({r['miofind_q'][0]:.2f}-{r['miofind_q'][1]:.2f}) | "
                     f"{r['speedup']:.3f} | {r['median_pair_ratio']:.3f} | {100 * r['won']:.0f}% |")
    (out / "bench_eager_pairs.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
