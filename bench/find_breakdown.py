"""Where the finds of a model's first training step spend their time, on the GPU.

Runs one training step of torchvision ResNet-50 through ``miofind.torch`` at a batch size the
shipped DB does not hold, on an empty user DB, and sums each find's ``FindResult.timing`` (lookup,
compile, reference, verify, timing, store) and its candidates (solver, configs, runs, cut), so that a
cheaper find knows what to cut.

    python bench/find_breakdown.py --out DIR [--batch 48] [--amp] [--steady N] [--profile] [--cudnn]

With ``--profile`` the step runs under cProfile (``profile.txt``: cumulative and own time, the main
thread only). With ``--cudnn`` the same step runs without miofind, in cuDNN's benchmark mode: the
baseline's first step, for the same process set-up.

With ``--steady N`` it then times a second step at once, waits for the background work the finds
left (``miofind.tiered``: specialised builds, deferred solvers; ``background_wait_s``), and times N
more steps (median ``steady_ms``), listing the solver each problem runs then (``chosen``).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch", type=int, default=48)
    ap.add_argument("--amp", action="store_true")
    ap.add_argument("--steady", type=int, default=0, help="then time N steps after the background work")
    ap.add_argument("--profile", action="store_true", help="the step under cProfile (profile.txt)")
    ap.add_argument("--cudnn", action="store_true", help="the step in cuDNN's benchmark mode, without miofind")
    ap.add_argument("--rechoose", action="store_true",
                    help="with --steady: then forget the prepared problems (miofind.torch.clear) and time N steps "
                         "again on Entries made from the FindDB's records")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    tmp = tempfile.mkdtemp()
    os.environ.setdefault("MIOFIND_DB", f"sqlite:///{tmp}/user.sqlite")

    import torch
    import torchvision

    import miofind.torch as mt
    from miofind.torch import _policy

    torch.backends.cudnn.allow_tf32 = False
    finds = []
    orig = _policy._find

    def recording(problem):
        t0 = time.perf_counter()
        res = orig(problem)
        finds.append({"key": problem.key(), "wall_ms": (time.perf_counter() - t0) * 1e3,
                      "source": getattr(res, "source", None), "timing": getattr(res, "timing", None) or {},
                      "winner": res[0].solver_id if len(res) else None})
        return res

    _policy._find = recording
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).cuda()
    x = torch.randn(args.batch, 3, 224, 224, device="cuda")
    if args.amp:
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    if args.cudnn:
        torch.backends.cudnn.benchmark = True
    else:
        mt.convert(model)
    y = torch.randint(0, 1000, (args.batch,), device="cuda")

    def step() -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.float16, enabled=args.amp):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        step_s = prof.runcall(step)
        with open(os.path.join(args.out, "profile.txt"), "w") as fh:
            for order in ("cumulative", "tottime"):
                pstats.Stats(prof, stream=fh).sort_stats(order).print_stats(120)
    else:
        step_s = step()
    after = {}
    write(args.out, finds, step_s, after)
    if args.steady:
        from miofind import tiered
        after["second_step_s"] = step()
        t0 = time.perf_counter()
        tiered.wait(1800)
        after["background_wait_s"] = time.perf_counter() - t0
        step()      # applies what the background work replaced
        times = sorted(step() * 1e3 for _ in range(args.steady))
        after["steady_ms"] = times[len(times) // 2]
        after["steady_all_ms"] = times
        after["chosen"] = sorted(f"{k[0]} {e.pr.problem.key()}: {e.solver_id}" for k, e in _policy._table.items())
        after["entries"] = entries(_policy)
        if args.rechoose:
            mt.clear()
            step(), step()
            times = sorted(step() * 1e3 for _ in range(args.steady))
            after["rechosen_ms"] = times[len(times) // 2]
            after["rechosen_all_ms"] = times
            after["rechosen_entries"] = entries(_policy)

    print(json.dumps(write(args.out, finds, step_s, after), indent=1))
    return 0


def entries(policy) -> dict:
    """Per prepared problem: the solver, where its Entry came from, its invoker's type, workspace bytes."""
    return {f"{k[0]} {e.pr.problem.key()}": [e.solver_id, e.source, type(e.invoker).__name__, e.ws_bytes,
                                              sorted(e.streams)]
            for k, e in policy._table.items()}


def write(out: str, finds: list, step_s: float, after: dict) -> dict:
    """Sum the finds' breakdowns into find_breakdown.json in ``out``; returns the summary."""
    import miofind.torch as mt

    tot = collections.defaultdict(float)
    by_solver = collections.defaultdict(lambda: collections.defaultdict(float))
    for f in finds:
        for k, v in f["timing"].items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                tot[k] += v
        for c in f["timing"].get("candidates", ()):
            d = by_solver[c["solver_id"]]
            d["measured"] += 1
            d["verify_ms"] += c["verify_ms"] or 0
            d["timing_ms"] += c["timing_ms"] or 0
            d["compile_ms"] += c["compile_ms"] or 0
            d["cut"] += bool(c["cut"])
        if f["winner"]:
            by_solver[f["winner"]]["won"] += 1
    summary = {"step_s": step_s, "finds": len(finds), "find_wall_ms": sum(f["wall_ms"] for f in finds),
               "timing_totals_ms": dict(tot), "by_solver": {k: dict(v) for k, v in by_solver.items()},
               "stats": mt.stats(), **after}
    with open(os.path.join(out, "find_breakdown.json"), "w") as fh:
        json.dump({"summary": summary, "finds": finds}, fh, indent=1)
    return summary


if __name__ == "__main__":
    sys.exit(main())
