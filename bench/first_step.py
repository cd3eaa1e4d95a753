"""Where a fresh process's first training step goes: miofind.torch against PyTorch's own first step, on the GPU.

Each measurement is a new process (model built and on the GPU, CUDA up, ``miofind.torch.convert`` done where
miofind's side runs), timing one training step phase by phase (forward to the loss, backward, optimizer step),
each phase to its synchronize. Backends:

- ``heuristic``: PyTorch with ``cudnn.benchmark=False`` (cuDNN's heuristics pick; nothing is measured),
- ``cudnn``: PyTorch with ``cudnn.benchmark=True`` (issue 17's baseline),
- ``miofind``: ``miofind.torch`` with the shipped DB beneath a new, empty user DB in each process;
- ``miofind-nopreload``: the same with ``MIOFIND_TORCH_PRELOAD=0`` (nothing imported in the background after
  ``convert``);
- ``miofind-nobridge``: ``miofind`` with ``MIOFIND_LT_BRIDGE=0`` (cuBLASLt-backed picks wait for cuBLASLt's set-up
  instead of running on the bridge GEMM meanwhile: ``miofind.lt_bridge``);
- ``null``: every convolution computes nothing (``step_host_floor.null_convert``: one Python autograd Function per
  call, uninitialised outputs and gradients). No convolution library is set up or asked anything: what is left is
  PyTorch's own first step around the convolutions, a lower bound for any convolution provider's first step.

``--steady N`` then times N more steps in the same process, each to its synchronize (after ``bench_models.settle``
on miofind's side: its background builds in, as a long run has them), and reports their median and the first step
over it: issue 17's "first iteration <= 1.5x a steady-state step". The null side's ratio is PyTorch's own.

``--setup-ms N`` waits N ms between the set-up (model, ``convert``, optimizer, inputs) and the step, as a script's
own set-up would (a data loader's first batch, a checkpoint): ``convert``'s background preload runs meanwhile.

``--prewarm`` first runs a few tiny PyTorch ops (a cuDNN convolution forward and backward, batch norm, a linear
layer and its backward) on shapes the model does not have, outside the timing: the libraries' own set-up in a
process (cuDNN's and cuBLAS's handles and kernels) is then paid before the step, and what is left is each side's
per-shape work. miofind's side also records, per problem: the FindDB lookup (``find_ms``), the whole choice with
the prepare (``choose_ms``), the solution's first call (``first_call_ms``), and the imports made inside the step
(``python -X importtime``, summed over the top-level modules imported between the step's start and end).

    python bench/first_step.py --out DIR [--model resnet50] [--configs train32-fp32,train32-amp]
        [--backends heuristic,miofind,null] [--rounds 3] [--prewarm] [--setup-ms 0] [--steady 0]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MARK_START, MARK_END = "##first-step-start##", "##first-step-end##"


def _prewarm(torch) -> None:
    """Library set-up outside the timing: a cuDNN convolution (forward and backward), batch norm, a linear layer."""
    bench = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = False
    for dt in (torch.float32, torch.float16):
        x = torch.randn(2, 8, 9, 9, device="cuda", dtype=dt, requires_grad=True)
        w = torch.randn(8, 8, 3, 3, device="cuda", dtype=dt, requires_grad=True)
        y = torch.nn.functional.conv2d(x, w, padding=1)
        bn = torch.nn.functional.batch_norm(y.float(), None, None, training=True)
        lin = torch.nn.functional.linear(bn.flatten(1), torch.randn(5, bn[0].numel(), device="cuda"))
        lin.sum().backward()
    torch.cuda.synchronize()
    torch.backends.cudnn.benchmark = bench


def _instrument():
    """Wrap miofind.torch's choice, lookup and first calls with timers; the per-problem records and totals."""
    from miofind.torch import _fast, _policy, functional

    rec: list[dict] = []
    calls: dict[str, list[float]] = collections.defaultdict(list)
    tot = collections.Counter()
    find, choose, call = _policy._find, _policy._choose, _policy.Entry.__call__

    def t_find(problem):
        t0 = time.perf_counter()
        try:
            return find(problem)
        finally:
            tot["find_ms"] += (time.perf_counter() - t0) * 1e3
            tot["finds"] += 1

    def t_choose(problem, det, dev):
        f0, t0 = tot["find_ms"], time.perf_counter()
        e = choose(problem, det, dev)
        ms = (time.perf_counter() - t0) * 1e3
        rec.append({"problem": problem.key(), "solver": e.solver_id, "choose_ms": ms,
                    "find_ms": tot["find_ms"] - f0})
        return e

    def t_call(self, a, b, out, stream, bias=None):
        if stream in self.streams:
            return call(self, a, b, out, stream, bias)
        t0 = time.perf_counter()
        try:
            return call(self, a, b, out, stream, bias)
        finally:
            calls[self.solver_id].append((time.perf_counter() - t0) * 1e3)

    def timed(mod, name, key):
        f = getattr(mod, name)

        def w(*a, **k):
            t0 = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                tot[key] += (time.perf_counter() - t0) * 1e3
        setattr(mod, name, w)

    _policy._find, _policy._choose, _policy.Entry.__call__ = t_find, t_choose, t_call
    timed(functional, "_make_plan", "make_plan_ms")
    timed(_fast, "module", "fast_module_ms")
    return rec, calls, tot


def _child(model_name: str, config: str, backend: str, prewarm: bool, setup_ms: float = 0.0, steady: int = 0) -> None:
    import bench_models as bm
    torch = bm._torch()
    import torch.nn.functional as F

    train, batch, amp = bm.parse(config)
    if not train:
        raise SystemExit("first_step.py times training steps (train32-fp32, train32-amp)")
    if prewarm:
        _prewarm(torch)
    side = "miofind" if backend.startswith("miofind") else backend      # prepare: benchmark mode for "cudnn" only
    if side == "null":
        from step_host_floor import null_convert
        model = bm.prepare(bm.build(model_name), train, amp, "heuristic")
        swapped = null_convert(model)
    else:
        model = bm.prepare(bm.build(model_name), train, amp, side)
    xs, ys = bm.inputs(model_name, batch, amp, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    inst = _instrument() if side == "miofind" else None
    torch.cuda.synchronize()
    if setup_ms:
        time.sleep(setup_ms / 1e3)
    print(MARK_START, file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
        loss = F.cross_entropy(model(xs[0]), ys[0])
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    loss.backward()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    opt.step()
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    print(MARK_END, file=sys.stderr, flush=True)
    out = {"first_s": t3 - t0, "forward_s": t1 - t0, "backward_s": t2 - t1, "optimizer_s": t3 - t2}
    if side == "null":
        out["null_swapped"] = swapped
    if steady:
        if side == "miofind":
            out["settle_s"] = bm.settle(900)
        from step_host_floor import time_steps
        step = bm.stepper(model, train, amp, opt)
        for _ in range(3):      # untimed: a second step still makes the backward plans
            step(xs[0], ys[0])
        out["steady_s"] = time_steps(step, xs, ys, steady)[1] / 1e3      # wall ms of each step to its synchronize
        out["first_over_steady"] = out["first_s"] / out["steady_s"]
    if inst is not None:
        import miofind.torch as mt
        rec, calls, tot = inst
        out["stats"] = mt.stats()
        out["problems"] = rec
        out["first_calls"] = {k: [len(v), sum(v)] for k, v in calls.items()}
        out["totals"] = dict(tot)
    print(json.dumps(out))


def _imports(stderr: str) -> dict:
    """Top-level imports made between the step's marks (``-X importtime``), cumulative ms each."""
    inside, got = False, {}
    for line in stderr.splitlines():
        if MARK_START in line:
            inside = True
        elif MARK_END in line:
            break
        elif inside and line.startswith("import time:"):
            parts = line.split("|")
            if len(parts) == 3 and not parts[2].startswith("  ") and parts[1].strip().isdigit():
                got[parts[2].strip()] = int(parts[1]) / 1e3
    return got


def run_one(model: str, config: str, backend: str, prewarm: bool, env: dict, setup_ms: float = 0.0,
            steady: int = 0) -> dict:
    cmd = [sys.executable, "-X", "importtime", os.path.abspath(__file__), "--child", model, config, backend,
           "--setup-ms", str(setup_ms), "--steady", str(steady)]
    if prewarm:
        cmd.append("--prewarm")
    with tempfile.TemporaryDirectory() as d:    # a new, empty user DB above the shipped one, every process
        env = dict(env, MIOFIND_DB=f"sqlite:///{os.path.join(d, 'finddb.sqlite')}")
        if backend == "miofind-nopreload":
            env["MIOFIND_TORCH_PRELOAD"] = "0"
        if backend == "miofind-nobridge":
            env["MIOFIND_LT_BRIDGE"] = "0"
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if r.returncode:
        tail = "\n".join(ln for ln in r.stderr.splitlines() if not ln.startswith("import time:"))[-3000:]
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{tail}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["imports_ms"] = _imports(r.stderr)
    return out


def summary(runs: list[dict]) -> dict:
    med = lambda k: statistics.median(r[k] for r in runs)      # noqa: E731
    s = {k: med(k) for k in ("first_s", "forward_s", "backward_s", "optimizer_s")}
    if all("steady_s" in r for r in runs):
        s["steady_s"] = med("steady_s")
        s["first_over_steady"] = med("first_over_steady")
    s["imports_ms"] = statistics.median(sum(r["imports_ms"].values()) for r in runs)
    if "problems" in runs[0]:
        by = collections.defaultdict(list)      # per solver: median over runs of the summed choose / first-call ms
        for r in runs:
            acc = collections.Counter()
            for p in r["problems"]:
                acc[(p["solver"], "choose")] += p["choose_ms"]
                acc[(p["solver"], "find")] += p["find_ms"]
                acc[(p["solver"], "n")] += 1
            for sid, (n, ms) in r["first_calls"].items():
                acc[(sid, "first_call")] += ms
                acc[(sid, "calls")] += n
            for k, v in acc.items():
                by[k].append(v)
        s["per_solver"] = {f"{sid}/{what}": statistics.median(v) for (sid, what), v in sorted(by.items())}
        s["totals"] = {k: statistics.median(r["totals"].get(k, 0.0) for r in runs)
                       for k in sorted({k for r in runs for k in r["totals"]})}
        s["choose_ms"] = statistics.median(sum(p["choose_ms"] for p in r["problems"]) for r in runs)
        s["first_call_ms"] = statistics.median(sum(v[1] for v in r["first_calls"].values()) for r in runs)
    return s


def markdown(res: dict, cmd: str) -> str:
    out = ["# First training step in a fresh process, phase by phase", "", f"`{cmd}`", "",
           "| model | config | backend | prewarm | first step s | forward | backward | optimizer | imports in step ms "
           "| miofind: choices (lookup + prepare) ms | of which lookup ms | first calls ms | runs | steady step ms "
           "| first / steady |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for key, row in res.items():
        s = row["summary"]
        f = lambda v: "" if v is None else f"{v:.3f}"       # noqa: E731
        out.append(f"| {row['model']} | {row['config']} | {row['backend']} | {row['prewarm']} | {f(s['first_s'])} | "
                   f"{f(s['forward_s'])} | {f(s['backward_s'])} | {f(s['optimizer_s'])} | {s['imports_ms']:.1f} | "
                   f"{s.get('choose_ms', 0):.1f} | {s.get('totals', {}).get('find_ms', 0):.1f} | "
                   f"{s.get('first_call_ms', 0):.1f} | {len(row['runs'])} | "
                   f"{'' if 'steady_s' not in s else format(s['steady_s'] * 1e3, '.2f')} | "
                   f"{'' if 'first_over_steady' not in s else format(s['first_over_steady'], '.1f') + 'x'} |")
    for key, row in res.items():
        s = row["summary"]
        if "per_solver" not in s:
            continue
        out += ["", f"## {key}: miofind per solver (median over runs, ms summed over the step's problems)", "",
                "| solver | problems | choose ms | of which lookup ms | first calls | first calls ms |",
                "| --- | --- | --- | --- | --- | --- |"]
        ps = s["per_solver"]
        for sid in sorted({k.rsplit("/", 1)[0] for k in ps}):
            g = lambda w: ps.get(f"{sid}/{w}", 0)    # noqa: E731
            out.append(f"| {sid} | {g('n'):.0f} | {g('choose'):.1f} | {g('find'):.1f} | {g('calls'):.0f} | "
                       f"{g('first_call'):.1f} |")
        out.append("")
        out.append("Totals (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in s["totals"].items()))
        imports = collections.Counter()
        for r in row["runs"]:
            for k, v in r["imports_ms"].items():
                imports[k] += v / len(row["runs"])
        out.append("Imports inside the step (mean ms over runs): " + ", ".join(
            f"{k} {v:.1f}" for k, v in imports.most_common(8)))
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--configs", default="train32-fp32,train32-amp")
    ap.add_argument("--backends", default="heuristic,miofind")
    ap.add_argument("--rounds", type=int, default=3, help="processes per (config, backend), alternating")
    ap.add_argument("--prewarm", action="store_true", help="library set-up outside the timing (see the docstring)")
    ap.add_argument("--both", action="store_true", help="with and without --prewarm, alternating")
    ap.add_argument("--setup-ms", type=float, default=0.0,
                    help="wait this long between the set-up and the step (a script's own set-up after convert)")
    ap.add_argument("--steady", type=int, default=0,
                    help="then time this many steps in the same process: the first step over their median")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(*args.child, args.prewarm, args.setup_ms, args.steady)
        return 0
    if not args.out:
        ap.error("--out is required")
    os.makedirs(args.out, exist_ok=True)
    warm = [False, True] if args.both else [args.prewarm]
    res: dict = {}
    env = dict(os.environ)
    for r in range(args.rounds):
        for config in args.configs.split(","):
            for pw in warm:
                for backend in args.backends.split(","):
                    key = f"{args.model}/{config}/{backend}/{'prewarm' if pw else 'cold'}"
                    row = res.setdefault(key, {"model": args.model, "config": config, "backend": backend,
                                               "prewarm": pw, "runs": []})
                    t = time.perf_counter()
                    one = run_one(args.model, config, backend, pw, env, args.setup_ms, args.steady)
                    row["runs"].append(one)
                    steady = f", steady {one['steady_s'] * 1e3:.2f} ms" if "steady_s" in one else ""
                    print(f"round {r} {key}: first step {one['first_s']:.3f} s{steady} (process "
                          f"{time.perf_counter() - t:.1f} s)"
                          + (f", stats {one['stats']}" if "stats" in one else ""), flush=True)
                    with open(os.path.join(args.out, "first_step.json"), "w") as fh:
                        json.dump(res, fh, indent=1)
    for row in res.values():
        row["summary"] = summary(row["runs"])
    cmd = "python bench/first_step.py " + " ".join(sys.argv[1:] if argv is None else argv)
    with open(os.path.join(args.out, "first_step.json"), "w") as fh:
        json.dump(res, fh, indent=1)
    md = markdown(res, cmd)
    with open(os.path.join(args.out, "first_step.md"), "w") as fh:
        fh.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
