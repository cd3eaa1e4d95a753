"""Host time per call of every verified solution of real layers, through miofind.torch's ``Entry`` (the
call a PyTorch model makes per convolution): where a model's host time goes, per solver.

For each config (data type, layout, batch), each chosen layer of ``--model`` and each direction, the
FindDBs' verified solutions are prepared and called with torch tensors (a new output per call, as
miofind.torch allocates one); host µs per call is the median over drained bursts (``bench_overhead.
host_us``), all solutions of a problem interleaved burst by burst, beside ``torch.nn.functional.conv2d``
(cuDNN, benchmark mode) for F. miofind.torch's own per-call overhead is the full no-grad
``miofind.torch.conv2d`` call minus the Entry call of the solution it chose, on the F problems.

    python bench/bench_host_costs.py --out DIR [--model resnet50] [--configs FP32:NCHW:1,FP16:NHWC:32]
        [--layers 6] [--calls 2000] [--deadline 240]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_overhead import host_us  # noqa: E402

_DT = {"FP32": "float32", "FP16": "float16", "BF16": "bfloat16"}


def _pick(layers: list, n: int) -> list:
    """``n`` layers spread evenly over the model's list (all when n is 0 or more than there are)."""
    if n <= 0 or n >= len(layers):
        return layers
    step = (len(layers) - 1) / (n - 1) if n > 1 else 0
    return [layers[round(i * step)] for i in range(n)]


def problem_rows(cfg: str, la, direction: str, calls: int) -> list[dict]:
    """One problem's rows: every verified solution's host µs per Entry call (and the torch anchor for F)."""
    import torch

    import miofind
    from miofind.torch import _ops, _policy

    dt, layout, batch = cfg.split(":")
    dtype = getattr(torch, _DT[dt])
    cl = layout.startswith("NH") or layout.startswith("ND")
    fmt = torch.channels_last if cl else torch.contiguous_format
    xs = (int(batch), la.c, *la.in_size)
    ws = (la.k, la.c // la.groups, *la.filter_size)
    stride, pads, dil = tuple(la.strides), tuple(la.pads), (1,) * len(la.in_size)
    ys = tuple(_ops.out_size(xs, ws, stride, pads, dil))
    p = _policy.problem_for(direction, xs, ws, stride, pads, dil, la.groups, dtype, cl, False)
    res = miofind.find_solutions(p)
    sols = [s for s in res if not getattr(s, "cut", False) and s.verified]
    dev = torch.device("cuda", 0)
    mk = lambda shape: torch.randn(shape, dtype=dtype, device=dev).contiguous(memory_format=fmt)  # noqa: E731
    x, w, y = mk(xs), mk(ws), mk(ys)
    a, b, out_shape = {"F": (x, w, ys), "B": (y, w, xs), "W": (y, x, ws)}[direction]
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        futs = {s.solver_id: ex.submit(s.prepare) for s in sols}
    entries, rows = {}, []
    for s in sols:
        row = {"config": cfg, "problem": p.key(), "direction": direction, "solver_id": s.solver_id,
               "gpu_us": s.time_ms * 1e3}
        try:
            e = _policy.Entry(futs[s.solver_id].result(), s.solver_id, "db", 0)
            stream = torch.cuda.current_stream().cuda_stream
            e(a, b, torch.empty(out_shape, dtype=dtype, device=dev, memory_format=fmt), stream)
            torch.cuda.synchronize()
            entries[s.solver_id] = (e, stream)
        except Exception as err:  # noqa: BLE001 - a solution that cannot run here is reported, not timed
            row["error"] = f"{err.__class__.__name__}: {err}"[:300]
        rows.append(row)
    fns = {sid: (lambda e=e, st=st: e(a, b, torch.empty(out_shape, dtype=dtype, device=dev, memory_format=fmt), st))
           for sid, (e, st) in entries.items()}
    if direction == "F":
        torch.backends.cudnn.benchmark = True
        conv = {2: torch.nn.functional.conv2d, 3: torch.nn.functional.conv3d}[len(la.in_size)]
        fns["torch"] = lambda: conv(x, w, None, stride, pads, dil, la.groups)
        import miofind.torch as mt
        fwd = {2: mt.conv2d, 3: mt.conv3d}[len(la.in_size)]

        def full():
            with torch.no_grad():
                fwd(x, w, None, stride, pads, dil, la.groups)
        full()
        fns["miofind.torch"] = full
    got = host_us(fns, calls, torch.cuda.synchronize, burst=50, warmup=50) if fns else {}
    for r in rows:
        if r["solver_id"] in got:
            r["host_us"] = got[r["solver_id"]]
    if direction == "F":
        chosen = next((en.solver_id for k, en in _policy._table.items() if k[0] == "F" and en.pr.problem.key() == p.key()),
                      None)
        rows.append({"config": cfg, "problem": p.key(), "direction": "F", "solver_id": "torch", "host_us": got["torch"]})
        rows.append({"config": cfg, "problem": p.key(), "direction": "F", "solver_id": "miofind.torch",
                     "host_us": got["miofind.torch"], "chosen": chosen,
                     "overhead_us": got["miofind.torch"] - got[chosen] if chosen in got else None})
    return rows


def summarise(rows: list[dict]) -> dict:
    """Median host µs per solver id over the problems measured, and the median per-call overhead."""
    per: dict[str, list[float]] = {}
    for r in rows:
        if "host_us" in r and r["solver_id"] not in ("torch", "miofind.torch"):
            per.setdefault(r["solver_id"], []).append(r["host_us"])
    over = [r["overhead_us"] for r in rows if r.get("overhead_us") is not None]
    anchor = [r["host_us"] for r in rows if r["solver_id"] == "torch"]
    return {"host_us": {k: round(statistics.median(v), 2) for k, v in sorted(per.items())},
            "samples": {k: len(v) for k, v in sorted(per.items())},
            "call_overhead_us": round(statistics.median(over), 2) if over else 0.0,
            "torch_conv_us": round(statistics.median(anchor), 2) if anchor else None}


def markdown(summary: dict, rows: list[dict], meta: dict) -> str:
    out = [f"# Host time per call of each solver through miofind.torch ({meta['device']})", "",
           f"`{meta['command']}`", "",
           "Median host µs per `Entry` call (a new output each call) over the problems measured; "
           f"miofind.torch's own per-call overhead {summary['call_overhead_us']} µs; "
           f"`torch.nn.functional.conv2d` {summary['torch_conv_us']} µs (F problems).", "",
           "| solver | host µs | problems |", "| --- | ---: | ---: |"]
    for k, v in summary["host_us"].items():
        out.append(f"| {k} | {v:.2f} | {summary['samples'][k]} |")
    out += ["", "| config | problem | solver | GPU µs (DB) | host µs |", "| --- | --- | --- | ---: | ---: |"]
    for r in rows:
        gpu = f"{r['gpu_us']:.1f}" if "gpu_us" in r else ""
        host = f"{r['host_us']:.2f}" if "host_us" in r else r.get("error", "")
        out.append(f"| {r['config']} | {r['problem']} | {r['solver_id']} | {gpu} | {host} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--configs", default="FP32:NCHW:1,FP16:NHWC:32")
    ap.add_argument("--layers", type=int, default=6, help="layers per config, spread over the model (0: all)")
    ap.add_argument("--directions", default="F,B,W")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--deadline", type=float, default=240.0, help="seconds; problems after it are skipped")
    args = ap.parse_args(argv)
    import torch

    from miofind.models import model_layers

    # FP32 without TF32, as bench_models times it (and as the problems above are keyed): miofind.torch's own
    # path then looks up the same problems
    torch.backends.cudnn.allow_tf32 = False
    t0 = time.monotonic()
    os.makedirs(args.out, exist_ok=True)
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "command": "python bench/bench_host_costs.py " + " ".join(sys.argv[1:] if argv is None else argv)}
    rows, skipped = [], 0
    layers = _pick(model_layers(args.model), args.layers)
    for cfg in args.configs.split(","):
        for la in layers:
            for d in args.directions.split(","):
                if time.monotonic() - t0 > args.deadline:
                    skipped += 1
                    continue
                got = problem_rows(cfg, la, d, args.calls)
                rows.extend(got)
                print(json.dumps(got), flush=True)
    summary = summarise(rows)
    meta["skipped_problems"] = skipped
    with open(os.path.join(args.out, "host_costs.json"), "w") as f:
        json.dump({"meta": meta, "summary": summary, "rows": rows}, f, indent=1)
    with open(os.path.join(args.out, "host_costs.md"), "w") as f:
        f.write(markdown(summary, rows, meta))
    print(markdown(summary, [], meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
