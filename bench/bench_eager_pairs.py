"""Eager steps of cuDNN benchmark mode and miofind.torch interleaved step by step: a host-bound comparison that a
noisy host's drifts do not decide.

A batch-1 inference step (or a small model's training step) is bound by the host on both sides, and an H100 host's
speed drifts by tens of percent over seconds (``bench/results/session-floor/``: the same configuration's eager step
3.1 to 9.8 ms between processes). ``bench_graph_step`` alternates rounds of 20 steps, which such a drift can still
split. Here the sides alternate every step (two sides in ABBA order; more in every order in turn), for ``--pairs``
rounds after a warm-up, each step timed from its start to a synchronisation (the wall time a framework's loop sees). Reported per configuration: each side's
median step, the speed ratio of the medians (the first side's ms / the side's), the median of the per-pair ratios,
and the share of pairs the side won. ``--sides`` may add ``miofind-noarm``: miofind.torch with the modules' armed
calls off (``_fast.arm_modules``), its own model, toggled per step in the same process.

    python bench/bench_eager_pairs.py --out DIR [--models resnet50,mobilenet_v2,inception_v3]
        [--configs infer1-fp32,infer1-amp] [--pairs 300] [--sides cudnn,miofind,miofind-noarm]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_graph_step as gs  # noqa: E402
import bench_models as bm  # noqa: E402


def run(name: str, config: str, pairs: int, sides: list[str]) -> dict:
    torch = bm._torch()
    train, batch, amp = bm.parse(config)
    xs, ys = bm.inputs(name, batch, amp, 4)
    from miofind.torch import _fast
    steps = {}
    for side in sides:
        model = bm.build(name)
        if not train:
            gs.calibrate(name, model)
        backend = "cudnn" if side == "cudnn" else "miofind"
        model = bm.prepare(model, train, amp, backend, name)
        torch.backends.cudnn.benchmark = backend == "cudnn"
        step = bm.stepper(model, train, amp)
        step(xs[0], ys[0])
        if backend == "miofind":
            bm.settle(900)
        steps[side] = step
    for i in range(10):
        for side, step in steps.items():
            _fast.arm_modules = side != "miofind-noarm"
            torch.backends.cudnn.benchmark = side == "cudnn"
            step(xs[i % 4], ys[i % 4])
    torch.cuda.synchronize()

    def timed(side: str, i: int) -> float:
        torch.backends.cudnn.benchmark = side == "cudnn"
        _fast.arm_modules = side != "miofind-noarm"
        t0 = time.perf_counter()
        steps[side](xs[i % 4], ys[i % 4])
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1e3

    # every order of the sides in turn (two sides: ABBA), so that each side follows each other side equally often
    # (a step after another side's runs colder code: with three sides in ABBA order the middle one alone followed
    # cuDNN's steps, session-floor call 3)
    orders = list(itertools.permutations(sides))
    ms = {s: [] for s in sides}
    for i in range(pairs):
        for side in orders[i % len(orders)]:
            ms[side].append(timed(side, i))
    _fast.arm_modules = True
    import miofind.torch as mt
    row = {"model": name, "config": config, "pairs": pairs, "sides": sides, "miofind_stats": mt.stats()}
    base = sides[0]
    for side in sides:
        row[f"{side}_ms"] = statistics.median(ms[side])
        row[f"{side}_q"] = statistics.quantiles(ms[side], n=10)[::8]
        if side != base:
            ratios = [c / m for c, m in zip(ms[base], ms[side])]
            row[f"{side}_speedup"] = row[f"{base}_ms"] / row[f"{side}_ms"]
            row[f"{side}_median_pair_ratio"] = statistics.median(ratios)
            row[f"{side}_won"] = sum(r > 1 for r in ratios) / len(ratios)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="resnet50,mobilenet_v2,inception_v3")
    ap.add_argument("--configs", default="infer1-fp32,infer1-amp")
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--sides", default="cudnn,miofind",
                    help="cudnn, miofind, miofind-noarm (modules' armed calls off); speed against the first")
    args = ap.parse_args(argv)
    sides = args.sides.split(",")
    torch = bm._torch()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        for config in args.configs.split(","):
            try:
                row = run(name, config, args.pairs, sides)
            except Exception as e:      # noqa: BLE001  reported, the other rows go on
                row = {"model": name, "config": config, "error": f"{type(e).__name__}: {e}"}
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "miofind_stats"}), flush=True)
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
            "argv": sys.argv}
    (out / "bench_eager_pairs.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"# Eager steps, {' / '.join(sides)} alternating step by step ({meta['device']})", "",
             f"`{' '.join(sys.argv)}`; torch {meta['torch']}, cuDNN {meta['cudnn']}; each step timed to a "
             f"synchronisation, every order of the sides in turn; speed = {sides[0]} ms / side ms; median pair ratio: of the per-pair "
             f"ratios; won: the share of pairs the side was faster than {sides[0]}.", "",
             "| model | config | pairs | " + " | ".join(f"{s} ms (p10-p90)" for s in sides) + " | " +
             " | ".join(f"{s}: speed, median pair ratio, won" for s in sides[1:]) + " |",
             "| --- | --- | ---: | " + " | ".join("---:" for _ in sides) + " | " + " | ".join("---" for _ in sides[1:]) + " |"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['config']} | {r['error']} |")
            continue
        cells = [f"{r[f'{s}_ms']:.2f} ({r[f'{s}_q'][0]:.2f}-{r[f'{s}_q'][1]:.2f})" for s in sides]
        cells += [f"{r[f'{s}_speedup']:.3f}, {r[f'{s}_median_pair_ratio']:.3f}, {100 * r[f'{s}_won']:.0f}%"
                  for s in sides[1:]]
        lines.append(f"| {r['model']} | {r['config']} | {r['pairs']} | " + " | ".join(cells) + " |")
    (out / "bench_eager_pairs.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
