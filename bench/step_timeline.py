"""Where a model step's wall time goes on the GPU's timeline: miofind.torch against cuDNN benchmark mode.

The step time is neither the GPU's busy time nor the host's queue time when the two do not overlap. This
profiles a few steps of one side (``torch.profiler``, CPU and CUDA activities), reads its Chrome trace and
splits each step's wall time (first CPU event to the last GPU activity's end) into:

- ``busy``: the union of the GPU activities (kernels, memcpy, memset);
- ``idle_host``: GPU idle gaps whose next activity was not yet launched when the GPU went idle (its launch
  call, runtime or driver API, started after the previous activity ended): the host was late;
- ``idle_other``: the other gaps (the activity was queued: launch latency, stream dependencies);
- ``lead``: from the step's first CPU event to its first GPU activity.

It also lists the host's API calls that take long (synchronising calls, allocations, launches over 50 µs)
and the busy fraction of each tenth of the step, so that an ordering effect (GPU-light work queued slowly
first, GPU-heavy work late) shows, and the GPU kernels by their time per step.

    python bench/step_timeline.py --out DIR --model mobilenet_v2 --config train32-fp32 [--steps 5]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
API_CATS = ("cuda_runtime", "cuda_driver")
SYNCING = ("Synchronize", "cudaMemcpy", "cuMemcpy", "cudaMalloc", "cudaFree", "cuMemAlloc", "cuMemFree",
           "cudaHostAlloc", "cudaMallocHost")


def analyse(trace: dict, steps: int) -> dict:
    """The split described in the module docstring, from a Chrome trace of ``steps`` steps marked by
    ``record_function("step")`` ranges."""
    ev = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    marks = sorted((e for e in ev if e.get("name") == "step" and e.get("cat") == "user_annotation"),
                   key=lambda e: e["ts"])
    gpu = sorted((e for e in ev if e.get("cat") in GPU_CATS), key=lambda e: e["ts"])
    api = {}
    for e in ev:
        if e.get("cat") in API_CATS:
            c = (e.get("args") or {}).get("correlation")
            if c is not None:
                api[c] = e
    out_steps = []
    long_calls = collections.Counter()
    long_us = collections.Counter()
    unmatched = 0
    for i, m in enumerate(marks[:steps]):
        t0 = m["ts"]
        t_next = marks[i + 1]["ts"] if i + 1 < len(marks) else float("inf")
        g = [e for e in gpu if t0 <= e["ts"] < t_next]
        if not g:
            continue
        end = max(e["ts"] + e["dur"] for e in g)
        busy = idle_host = idle_other = 0.0
        cur_end = g[0]["ts"]
        lead = g[0]["ts"] - t0
        bins = [0.0] * 10
        wall = end - t0
        for e in g:
            s, d = e["ts"], e["dur"]
            if s > cur_end:
                gap = s - cur_end
                a = api.get((e.get("args") or {}).get("correlation"))
                if a is None:
                    unmatched += 1
                    idle_other += gap
                elif a["ts"] >= cur_end - 1.0:
                    idle_host += gap
                else:
                    idle_other += gap
                cur_end = s
            new_end = max(cur_end, s + d)
            # busy time in this activity beyond what is already counted, binned by tenths of the wall
            lo, hi = max(s, cur_end), new_end
            if hi > lo:
                busy += hi - lo
                for b in range(10):
                    bl, bh = t0 + wall * b / 10, t0 + wall * (b + 1) / 10
                    bins[b] += max(0.0, min(hi, bh) - max(lo, bl))
            cur_end = new_end
        # the step's own calls (the mark's range: not the synchronize between steps)
        apis = [e for e in api.values() if t0 <= e["ts"] < min(t_next, t0 + m["dur"])]
        host_end = max((e["ts"] + e["dur"] for e in apis), default=t0)
        for e in apis:
            n = e.get("name", "")
            if any(k in n for k in SYNCING) or e["dur"] > 50:
                long_calls[n] += 1
                long_us[n] += e["dur"]
        out_steps.append({"wall_ms": wall / 1e3, "busy_ms": busy / 1e3, "idle_host_ms": idle_host / 1e3,
                          "idle_other_ms": idle_other / 1e3, "lead_ms": lead / 1e3,
                          "last_launch_ms": (host_end - t0) / 1e3, "gpu_activities": len(g),
                          "launch_calls": len(apis),
                          "busy_by_tenth": [round(b / (wall / 10), 3) for b in bins]})
    n = max(1, len(out_steps))
    med = {k: statistics.median(s[k] for s in out_steps) for k in
           ("wall_ms", "busy_ms", "idle_host_ms", "idle_other_ms", "lead_ms", "last_launch_ms")} if out_steps else {}
    return {"steps": out_steps, "median": med, "unmatched_gaps": unmatched,
            "long_or_syncing_calls_per_step": {k: {"count": c / n, "us": long_us[k] / n}
                                               for k, c in long_calls.most_common(20)}}


def kernel_table(trace: dict, steps: int, top: int = 40) -> list:
    """The GPU kernels of ``steps`` profiled steps by total time: [name, ms per step, launches per step], longest
    first (the first ``top``)."""
    tot, n = collections.defaultdict(float), collections.Counter()
    for e in trace.get("traceEvents", []):
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            tot[e["name"]] += e.get("dur", 0) / 1e3
            n[e["name"]] += 1
    rows = sorted(tot, key=tot.get, reverse=True)[:top]
    return [[k, tot[k] / steps, n[k] / steps] for k in rows]


def side(name: str, config: str, backend: str, steps: int, out: str) -> dict:
    import torch
    from bench_models import build, inputs, parse, prepare, stepper

    train, batch, amp = parse(config)
    xs, ys = inputs(name, batch, amp, 4)
    model = prepare(build(name), train, amp, backend)
    step = stepper(model, train, amp)
    step(xs[0], ys[0])
    if backend == "miofind":
        from miofind import tiered
        tiered.wait(600)
    for i in range(5):
        step(xs[i % 4], ys[i % 4])
    torch.cuda.synchronize()

    def timed():
        times = []
        for i in range(10):
            torch.cuda.synchronize()
            t = time.perf_counter()
            step(xs[i % 4], ys[i % 4])
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t) * 1e3)
        return statistics.median(times)
    import gc
    gc_ms, gc_n, gc_t0 = [0.0, 0.0, 0.0], [0, 0, 0], [0.0]

    def on_gc(phase, info):     # Python's cyclic collections during the timed steps: count and time per generation
        if phase == "start":
            gc_t0[0] = time.perf_counter()
        else:
            g = info["generation"]
            gc_n[g] += 1
            gc_ms[g] += (time.perf_counter() - gc_t0[0]) * 1e3
    gc.callbacks.append(on_gc)
    before = timed()
    gc.callbacks.remove(on_gc)
    tracked = len(gc.get_objects())
    gc.disable()
    no_gc = timed()
    gc.enable()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(steps):
            torch.cuda.synchronize()
            with torch.profiler.record_function("step"):
                step(xs[i % 4], ys[i % 4])
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    prof.export_chrome_trace(path)
    with open(path) as fh:
        trace = json.load(fh)
    os.unlink(path)
    res = analyse(trace, steps)
    res["kernels_per_step"] = kernel_table(trace, steps)
    res["unprofiled_step_ms"] = before
    res["gc_per_10_steps"] = {"collections": gc_n, "ms": gc_ms, "tracked_objects": tracked}
    res["unprofiled_gc_off_ms"] = no_gc
    res["unprofiled_after_profile_ms"] = timed()     # the same steps once a profiler session has run
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="mobilenet_v2")
    ap.add_argument("--config", default="train32-fp32")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--backends", default="cudnn,miofind")
    ap.add_argument("--side-json", default=None, help=argparse.SUPPRESS)     # a child: one side, into this file
    args = ap.parse_args(argv)
    if args.side_json:
        with open(args.side_json, "w") as fh:
            json.dump(side(args.model, args.config, args.backends, args.steps, args.out), fh)
        return 0
    os.makedirs(args.out, exist_ok=True)
    res = {"model": args.model, "config": args.config}
    import subprocess
    for b in args.backends.split(","):
        # each side in its own process: after a profiler session CUPTI stays subscribed to the driver's
        # launches, which would slow the next side's unprofiled steps (seen as miofind 7.4 ms against 3.8)
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            child = f.name
        subprocess.run([sys.executable, os.path.abspath(__file__), "--out", args.out, "--model", args.model,
                        "--config", args.config, "--steps", str(args.steps), "--backends", b, "--side-json", child],
                       check=True)
        with open(child) as fh:
            res[b] = json.load(fh)
        os.unlink(child)
    with open(os.path.join(args.out, f"timeline_{args.model}_{args.config}.json"), "w") as fh:
        json.dump(res, fh, indent=1)
    lines = [f"# {args.model} {args.config}: step timeline (median of {args.steps} profiled steps, ms)", "",
             "| side | unprofiled step (after profiling) | wall | GPU busy | idle, host late | idle, other | lead | last launch |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for b in args.backends.split(","):
        m = res[b]["median"]
        lines.append(f"| {b} | {res[b]['unprofiled_step_ms']:.2f} ({res[b]['unprofiled_after_profile_ms']:.2f}) | "
                     f"{m['wall_ms']:.2f} | {m['busy_ms']:.2f} | "
                     f"{m['idle_host_ms']:.2f} | {m['idle_other_ms']:.2f} | {m['lead_ms']:.2f} | "
                     f"{m['last_launch_ms']:.2f} |")
    lines.append("")
    for b in args.backends.split(","):
        g = res[b]["gc_per_10_steps"]
        lines.append(f"{b}: Python GC in 10 timed steps: collections by generation {g['collections']}, "
                     f"ms {[round(v, 2) for v in g['ms']]}, {g['tracked_objects']} tracked objects; "
                     f"step with GC off {res[b]['unprofiled_gc_off_ms']:.2f} ms")
    for b in args.backends.split(","):
        s = res[b]["steps"]
        if s:
            lines.append(f"{b}: busy fraction by tenth of step 1: {s[len(s) // 2]['busy_by_tenth']}")
        lines.append(f"{b}: long or syncing API calls per step: "
                     + ", ".join(f"{k} x{v['count']:.0f} {v['us']:.0f} us"
                                 for k, v in res[b]["long_or_syncing_calls_per_step"].items()))
    for b in args.backends.split(","):
        lines += ["", f"{b}: GPU kernels by time per step (the first 15; ms per step, launches per step)", "",
                  "| kernel | ms | launches |", "| --- | ---: | ---: |"]
        lines += [f"| `{k[:90]}` | {ms:.3f} | {c:.0f} |" for k, ms, c in res[b]["kernels_per_step"][:15]]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, f"timeline_{args.model}_{args.config}.md"), "w") as fh:
        fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
