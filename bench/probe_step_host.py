"""Where a host-bound training step spends its time: torchvision ResNet-50 (or another model), batch
32, miofind.torch against cuDNN benchmark mode in one process, in alternating rounds, under
variants that isolate a cause (diagnostics, not settings we ship):

- ``mt-off``: ``torch.autograd.set_multithreading_enabled(False)``: backward runs on the calling
  thread, so the Python backward nodes need no GIL hand-over between threads;
- ``gc-off``: Python's cyclic garbage collector disabled during the steps.

Per variant and side: the median wall time of a step with a synchronize after it, and the time to
queue it (no synchronize, the queue drained before). Then a cProfile of miofind's steps with
multithreading off (so that its backward's Python shows), and the host cost of the allocation
calls an invoker makes (``torch.empty`` forms).

    python bench/probe_step_host.py --out DIR [--model resnet50] [--configs amp,fp32] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import cProfile
import gc
import io
import json
import os
import pstats
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_torch_host import queue_ms, warm_up  # noqa: E402


def _variant(name: str):
    import torch

    @contextlib.contextmanager
    def ctx():
        if name == "mt-off":
            with torch.autograd.set_multithreading_enabled(False):
                yield
        elif name == "gc-off":
            gc.collect()
            gc.disable()
            try:
                yield
            finally:
                gc.enable()
        else:
            yield
    return ctx()


def run(model_name: str, config: str, rounds: int, steps: int, variants: list[str]) -> dict:
    import torch
    import torchvision

    import miofind.torch as mt

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    amp = config == "amp"
    torch.manual_seed(0)
    base = getattr(torchvision.models, model_name)(weights=None).cuda()
    g = torch.Generator(device="cuda").manual_seed(1)
    size = 299 if model_name == "inception_v3" else 224
    x = torch.randn(32, 3, size, size, device="cuda", generator=g)
    yl = torch.randint(0, 1000, (32,), device="cuda", generator=g)
    if amp:
        base = base.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    sides, fwd_bwd = {}, {}
    for side in ("cudnn", "miofind"):
        model = copy.deepcopy(base)
        if side == "miofind":
            mt.convert(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def halves(model=model, opt=opt):
            """One training step; returns the host seconds of its forward and of loss.backward()."""
            opt.zero_grad(set_to_none=True)
            t0 = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                out = model(x)
                if isinstance(out, tuple):
                    out = out[0]
                loss = torch.nn.functional.cross_entropy(out, yl)
            t1 = time.perf_counter()
            loss.backward()
            t2 = time.perf_counter()
            opt.step()
            return t1 - t0, t2 - t1

        def step(halves=halves):
            halves()

        fwd_bwd[side] = halves
        torch.backends.cudnn.benchmark = side == "cudnn"
        warm_up(step, side)
        torch.cuda.synchronize()
        sides[side] = step

    res: dict = {"model": model_name, "config": config, "variants": {}}
    for v in variants:
        acc = {s: {"step_ms": [], "queue_ms": []} for s in sides}
        for _ in range(rounds):
            for side, step in sides.items():
                torch.backends.cudnn.benchmark = side == "cudnn"
                with _variant(v):
                    step()
                    torch.cuda.synchronize()
                    t = []
                    for _ in range(steps):
                        t0 = time.perf_counter()
                        step()
                        torch.cuda.synchronize()
                        t.append((time.perf_counter() - t0) * 1e3)
                    acc[side]["queue_ms"].append(queue_ms(step, steps))
                acc[side]["step_ms"].append(statistics.median(t))
        row = {s: {k: statistics.median(vals) for k, vals in a.items()} for s, a in acc.items()}
        row["speed"] = row["cudnn"]["step_ms"] / row["miofind"]["step_ms"]
        res["variants"][v] = row
        print(json.dumps({"config": config, "variant": v, **row}), flush=True)

    res["split"] = split(sides, fwd_bwd, rounds)
    print(json.dumps({"config": config, "split": res["split"]}), flush=True)

    # miofind's Python, backward included (multithreading off puts it on this thread)
    torch.backends.cudnn.benchmark = False
    prof = cProfile.Profile()
    with torch.autograd.set_multithreading_enabled(False):
        prof.enable()
        for _ in range(10):
            sides["miofind"]()
        torch.cuda.synchronize()
        prof.disable()
    s = io.StringIO()
    st = pstats.Stats(prof, stream=s)
    st.sort_stats("tottime").print_stats(45)
    st.sort_stats("cumulative").print_stats(45)
    res["cprofile_10_steps"] = s.getvalue()
    return res


def split(sides, fwd_bwd, rounds: int, steps: int = 10) -> dict:
    """Per side and autograd threading mode: the host ms of the forward and of ``loss.backward()``
    (no synchronize inside a step; drained between steps), and for miofind the ms per step inside
    its Python backward (``PlannedConv.backward``) with its call count."""
    import torch

    from miofind.torch import _ops

    inner = {"t": 0.0, "n": 0}
    orig = _ops.PlannedConv.backward

    def timed(ctx, dy):
        t0 = time.perf_counter()
        try:
            return orig(ctx, dy)
        finally:
            inner["t"] += time.perf_counter() - t0
            inner["n"] += 1

    out: dict = {}
    _ops.PlannedConv.backward = staticmethod(timed)
    try:
        for _ in range(rounds):
            for mt_on in (True, False):
                for side, halves in fwd_bwd.items():
                    torch.backends.cudnn.benchmark = side == "cudnn"
                    with torch.autograd.set_multithreading_enabled(mt_on):
                        halves()
                        torch.cuda.synchronize()
                        inner["t"], inner["n"] = 0.0, 0
                        fs, bs = [], []
                        for _ in range(steps):
                            f, b = halves()
                            torch.cuda.synchronize()
                            fs.append(f * 1e3)
                            bs.append(b * 1e3)
                    key = f"{side} mt-{'on' if mt_on else 'off'}"
                    r = out.setdefault(key, {"fwd_ms": [], "bwd_ms": [], "py_backward_ms": [], "py_backward_calls": 0})
                    r["fwd_ms"].append(statistics.median(fs))
                    r["bwd_ms"].append(statistics.median(bs))
                    r["py_backward_ms"].append(inner["t"] / steps * 1e3)
                    r["py_backward_calls"] = inner["n"] / steps
    finally:
        _ops.PlannedConv.backward = orig
    return {k: {kk: (statistics.median(v) if isinstance(v, list) else v) for kk, v in r.items()} for k, r in out.items()}


def alloc_costs(calls: int = 3000) -> dict:
    """Host us of the allocations an invoker makes, and of the alternatives."""
    import torch

    from bench_overhead import host_us

    sync = torch.cuda.synchronize
    x = torch.randn(32, 64, 56, 56, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
    dev = x.device
    shape = [32, 64, 56, 56]
    tshape = tuple(shape)
    strides = x.stride()
    cl = torch.channels_last
    cases = {
        "torch.empty(list, dtype, device, memory_format)":
            lambda: torch.empty(shape, dtype=torch.float16, device=dev, memory_format=cl),
        "torch.empty(tuple, dtype, device) (contiguous)": lambda: torch.empty(tshape, dtype=torch.float16, device=dev),
        "torch.empty_strided(tuple, strides, dtype, device)":
            lambda: torch.empty_strided(tshape, strides, dtype=torch.float16, device=dev),
        "x.new_empty(tuple)": lambda: x.new_empty(tshape),
        "torch.empty_like(x)": lambda: torch.empty_like(x),
        "torch.empty(n, uint8, device) (workspace)": lambda: torch.empty(1 << 20, dtype=torch.uint8, device=dev),
        "x.data_ptr()": x.data_ptr,
        "torch._C._cuda_getCurrentRawStream(0)": lambda: torch._C._cuda_getCurrentRawStream(0),
    }
    return {k: host_us(f, calls, sync, burst=50) for k, f in cases.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--configs", default="amp,fp32")
    ap.add_argument("--variants", default="plain,mt-off,gc-off")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import torch
    out = {"argv": sys.argv, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(), "alloc_us": alloc_costs(), "runs": []}
    print(json.dumps(out["alloc_us"]), flush=True)
    for config in args.configs.split(","):
        r = run(args.model, config, args.rounds, args.steps, args.variants.split(","))
        out["runs"].append(r)
        with open(os.path.join(args.out, f"cprofile_{args.model}_{config}.txt"), "w") as f:
            f.write(r.pop("cprofile_10_steps"))
    with open(os.path.join(args.out, "probe_step_host.json"), "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
