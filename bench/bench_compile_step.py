"""A training step (or an inference forward) under ``torch.compile``, cuDNN benchmark mode against miofind.torch: what a
user who compiles the model to get the host out of the step sees.

Each side: the model from the same seeded weights (``bench_models.build``), set up as ``bench_models`` sets it up
(channels_last for AMP; ``miofind.torch.convert`` on miofind's side, whose convolutions ``torch.compile`` traces as
miofind's registered custom ops), ``torch.compile(model, mode=--mode)``; SGD with momentum. Before timing, miofind's
side takes one eager step and waits until its choices, specialised builds and C++ extension are settled
(``bench_models.settle``), so the compiled graph calls what a long run reaches. Then per side: the compile (the first
compiled step, its seconds reported), warm-up steps, and the median of ``--iters`` steps per round (CUDA events), the
sides in alternating rounds, the median of rounds; speedup = cuDNN ms / miofind ms; also the median of each round's
ratio. With ``--compile-first`` miofind's side takes no eager step: its choices are made in the compiled graph's
first run, as for a user who compiles at once (under CUDA-graph trees, by GPU time alone). Reported too: the losses
of the first compiled steps on fresh batches on each side (the same batches from the same weights, after the same
steps: they should agree to within AMP's nondeterminism), Dynamo's graph breaks on miofind's side
(``torch._dynamo.explain`` of the forward: none are expected at miofind's ops) and its host-aware picks.

    python bench/bench_compile_step.py --out DIR [--models resnet50] [--configs train32-amp,infer1-amp]
        [--mode reduce-overhead] [--compile-first] [--ab-autograd]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_models as bm  # noqa: E402  (build, parse, inputs, prepare, settle, event_median_ms)


def graph_breaks(model, x, amp: bool, train: bool) -> dict:
    """``torch._dynamo.explain`` of the model's forward, in the step's autocast and grad modes: graphs, breaks and
    their reasons (first 10)."""
    torch = bm._torch()
    with torch.autocast("cuda", dtype=torch.float16, enabled=amp), torch.set_grad_enabled(train):
        ex = torch._dynamo.explain(model)(x)
    return {"graphs": ex.graph_count, "breaks": ex.graph_break_count,
            "reasons": [str(b.reason)[:200] for b in ex.break_reasons[:10]]}


def run(name: str, config: str, args) -> dict:
    torch = bm._torch()
    train, batch, amp = bm.parse(config)
    xs, ys = bm.inputs(name, batch, amp, 4)
    row = {"model": name, "config": config, "mode": args.mode}
    sides = {}
    for backend in ("cudnn", "miofind"):
        model = bm.prepare(bm.build(name), train, amp, backend, name)
        torch.backends.cudnn.benchmark = backend == "cudnn"
        if backend == "cudnn" or not args.compile_first:
            bm.stepper(model, train, amp)(xs[0], ys[0])     # one eager step (its own SGD): miofind's choices
        if backend == "miofind" and not args.compile_first:
            row["settle_s"] = bm.settle(900)
            row["graph_breaks"] = graph_breaks(model, xs[0], amp, train)
            torch._dynamo.reset()
        # the compiled module's parameters are the model's: SGD with momentum over them, as bench_models' step
        step = bm.stepper(torch.compile(model, mode=args.mode), train, amp)
        t0 = time.perf_counter()
        out = step(xs[1], ys[1])
        torch.cuda.synchronize()
        row[f"{backend}_compile_s"] = time.perf_counter() - t0
        vals = [float(out) if train else None]
        for i in (2, 3):
            out = step(xs[i], ys[i])
            vals.append(float(out) if train else None)
        if train:
            row[f"{backend}_losses"] = vals
        sides[backend] = step
    runs = dict(sides)
    ext = None
    if args.ab_autograd:
        from miofind.torch import _fast
        ext = _fast._ops_module
        if ext is None:
            row["ab_autograd"] = "the custom ops' C++ kernels are not registered: no A/B"
        else:
            runs["miofind_pyag"] = sides["miofind"]
    times = {b: [] for b in runs}
    for r in range(args.rounds):
        for backend, step in runs.items():
            torch.backends.cudnn.benchmark = backend == "cudnn"
            if ext is not None:
                ext.ops_autograd_set_on(backend != "miofind_pyag")
            for i in range(3):
                step(xs[i % 4], ys[i % 4])
            times[backend].append(bm.event_median_ms(lambda i: step(xs[i % 4], ys[i % 4]), args.iters))
    if ext is not None:
        ext.ops_autograd_set_on(True)
    for backend in runs:
        row[f"{backend}_ms"] = statistics.median(times[backend])
        row[f"{backend}_rounds_ms"] = times[backend]
    row["speedup"] = row["cudnn_ms"] / row["miofind_ms"]
    row["speedup_paired"] = statistics.median(a / b for a, b in zip(times["cudnn"], times["miofind"]))
    if "miofind_pyag" in runs:
        row["speedup_pyag"] = row["cudnn_ms"] / row["miofind_pyag_ms"]
        row["autograd_gain_paired"] = statistics.median(a / b for a, b in zip(times["miofind_pyag"],
                                                                              times["miofind"]))
    import miofind.torch as mt
    row["miofind_stats"] = mt.stats()
    row["compile_first"] = args.compile_first
    del sides
    if args.compile_first:      # explain runs the forward: only after the compiled steps made miofind's choices
        torch._dynamo.reset()
        row["graph_breaks"] = graph_breaks(model, xs[0], amp, train)
    torch._dynamo.reset()
    torch.cuda.empty_cache()
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="resnet50")
    ap.add_argument("--configs", default="train32-amp,infer1-amp",
                    help="comma-separated configs (trainN-/inferN- fp32|amp); the default covers a training step and "
                         "no_grad inference under autocast")
    ap.add_argument("--mode", default="reduce-overhead", help="torch.compile's mode (default, reduce-overhead, ...)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--compile-first", action="store_true",
                    help="miofind's side compiles with no eager step first, so its choices are made in the compiled "
                         "graph's first run (under CUDA-graph trees with reduce-overhead), as for a user who compiles "
                         "at once; no settling wait (run a default pass first to fill the kernel cache)")
    ap.add_argument("--ab-autograd", action="store_true",
                    help="also time miofind's compiled step with the custom ops' C++ autograd kernels off (every op "
                         "call through custom_op's Python autograd kernel, as before them) in each round: the same "
                         "graph, a third side (miofind_pyag) in the alternation")
    args = ap.parse_args(argv)
    torch = bm._torch()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version(), "argv": sys.argv, "rounds": args.rounds, "iters": args.iters}
    for name in args.models.split(","):
        for config in args.configs.split(","):
            t0 = time.perf_counter()
            try:
                row = run(name, config, args)
            except Exception as e:      # noqa: BLE001  reported in the table, the other rows go on
                row = {"model": name, "config": config, "mode": args.mode, "error": f"{type(e).__name__}: {e}"[:2000]}
            row["wall_s"] = time.perf_counter() - t0
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "miofind_stats"}), flush=True)
            (out / "bench_compile_step.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"# A step under torch.compile, cuDNN benchmark mode against miofind.torch ({meta['device']})", "",
             f"`{' '.join(sys.argv)}`; torch {meta['torch']}, cuDNN {meta['cudnn']}; median of {args.iters} steps per "
             f"round, median of {args.rounds} alternating rounds; speedup = cuDNN ms / miofind ms (paired: the median "
             "of the rounds' ratios).", "",
             "| model | config | mode | cuDNN ms | miofind ms | speedup | paired | compile s cuDNN / miofind "
             "| graph breaks (miofind) | host-aware picks | losses cuDNN / miofind |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: | --- |"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['config']} | {r['mode']} | {r['error'][:300]} | | | | | | | |")
            continue
        losses = " / ".join(", ".join(f"{v:.4f}" for v in r[f"{b}_losses"]) for b in ("cudnn", "miofind")) \
            if "cudnn_losses" in r else ""
        gb = r["graph_breaks"]
        first = " (compiled first)" if r.get("compile_first") else ""
        lines.append(f"| {r['model']} | {r['config']} | {r['mode']} | {r['cudnn_ms']:.2f} | {r['miofind_ms']:.2f} | "
                     f"{r['speedup']:.3f} | {r['speedup_paired']:.3f} | {r['cudnn_compile_s']:.1f} / "
                     f"{r['miofind_compile_s']:.1f} | {gb['breaks']} in {gb['graphs']} graphs | "
                     f"{r['miofind_stats'].get('host_aware', '')}{first} "
                     f"| {losses} |")
        if "miofind_pyag_ms" in r:
            lines.append(f"| {r['model']} | {r['config']} | {r['mode']}, Python autograd kernels | "
                         f"{r['cudnn_ms']:.2f} | {r['miofind_pyag_ms']:.2f} | {r['speedup_pyag']:.3f} | | | | | "
                         f"C++ over Python autograd, paired: {r['autograd_gain_paired']:.3f}x |")
    (out / "bench_compile_step.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
