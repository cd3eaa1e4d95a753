"""What each candidate solution of a model's batch-1 layers costs a framework's eager call, on the GPU.

At batch 1 a PyTorch step is bound by the host: the GPU finishes a layer's kernels before the host has
queued the next layer's. A FindDB record is the GPU's time alone, so the fastest record need not be the
cheapest call. For every forward convolution of a torchvision model (one per distinct shape), this
forces each of the FindDB's top candidates in turn as miofind.torch's choice (``_policy._find``
answering with that solution alone) and measures, ``no_grad``, in one process:

- ``host_us``: host microseconds to queue one call (bursts of ``--calls`` calls started on an idle GPU);
- ``burst_us``: wall microseconds per call of the same burst with the GPU's work waited for: what a
  stream of back-to-back calls of that layer costs, max(host, GPU) and their overlap;
- the C++ path's launches (``_fast.recipe``: kernels, of which library kernels or library calls), or
  that the call runs through Python;
- cuDNN through ``torch.nn.functional.conv2d`` (benchmark mode) on the same tensors, as the reference.

It also reports which candidate miofind.torch's own policy picks when not forced.

    python bench/bench_layer_choice.py --out DIR [--models resnet50,mobilenet_v2] [--configs infer1-fp32,infer1-amp]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_models as bm  # noqa: E402


def layers(name: str):
    """Distinct forward convolutions of torchvision ``name`` at batch 1: (x shape, w shape, stride, padding,
    dilation, groups, count)."""
    torch = bm._torch()
    model = bm.build(name).eval()
    seen: dict[tuple, list] = {}

    def hook(m, inp, out):
        k = (tuple(inp[0].shape), tuple(m.weight.shape), tuple(m.stride), tuple(m.padding), tuple(m.dilation),
             m.groups)
        seen.setdefault(k, [0])[0] += 1
    hs = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    size = 299 if name == "inception_v3" else 224
    with torch.no_grad():
        model(torch.randn(1, 3, size, size, device="cuda"))
    for h in hs:
        h.remove()
    del model
    return [(*k, v[0]) for k, v in seen.items()]


class _Res(list):
    source = "db"
    failures = ()


def measure(call, calls: int, bursts: int) -> tuple[float, float]:
    """(host µs, burst µs) per call: medians over ``bursts`` bursts of ``calls`` calls."""
    torch = bm._torch()
    hs, ws = [], []
    for _ in range(bursts):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        hs.append((t1 - t0) * 1e6 / calls)
        ws.append((t2 - t0) * 1e6 / calls)
    return statistics.median(hs), statistics.median(ws)


def launches(entry) -> str:
    from miofind.torch import _fast
    try:
        r = _fast.recipe(entry)
    except _fast.NotReady:
        return "not-ready"
    if r is None:
        return "python"
    kinds = [k[9] for k in r[0]]
    return f"{len(kinds)}k" + (f"/{sum(1 for k in kinds if k == 1)}call" if 1 in kinds else "") + \
        (f"/{sum(1 for k in kinds if k == 2)}lib" if 2 in kinds else "")


def run(name: str, config: str, args) -> list[dict]:
    torch = bm._torch()
    _, _, amp = bm.parse(config)
    from miofind.torch import _policy, functional as Fm

    dt = torch.float16 if amp else torch.float32
    orig = _policy._find
    rows = []
    for xs, wsh, stride, padding, dilation, groups, count in layers(name):
        g = torch.Generator(device="cuda").manual_seed(3)
        x = torch.randn(xs, device="cuda", generator=g).to(dt)
        w = (torch.randn(wsh, device="cuda", generator=g) * 0.05).to(dt)
        if amp:
            x, w = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)
        p = _policy.problem_for("F", xs, wsh, stride, padding, dilation, groups, dt, amp, False)
        key = p.key()
        res = list(orig(p))
        best = res[0].time_ms
        cands = [s for s in res if not getattr(s, "cut", False) and
                 s.time_ms <= max(best * args.window, best + args.window_us / 1e3)][:args.top]

        def fwd():
            return Fm.conv2d(x, w, None, stride, padding, dilation, groups)

        def settle():
            with torch.no_grad():
                for _ in range(4):
                    fwd()
                bm.settle(600)      # the C++ extension built too: else the first layers are timed on the Python path
                for _ in range(4):
                    fwd()
            torch.cuda.synchronize()

        row = {"model": name, "config": config, "problem": key, "count": count,
               "candidates": []}
        for s in [None, *cands]:
            _policy.clear()
            Fm.clear_plans()
            if s is not None:
                _policy._find = (lambda pr, _s=s: _Res([_s]) if pr.key() == key else orig(pr))
            try:
                settle()
                ent = next(iter(_policy._table.values()))
                with torch.no_grad():
                    h, b = measure(fwd, args.calls, args.bursts)
                c = {"solver": ent.solver_id, "gpu_us": round(ent.time_ms * 1e3, 2), "path": launches(ent),
                     "host_us": round(h, 2), "burst_us": round(b, 2)}
                if s is not None:
                    c["gpu_us"] = round(s.time_ms * 1e3, 2)
            except Exception as e:      # noqa: BLE001  reported, the next candidate measured
                c = {"solver": getattr(s, "solver_id", "policy"), "error": f"{type(e).__name__}: {e}"[:300]}
            finally:
                _policy._find = orig
            if s is None:
                row["policy"] = c
            else:
                row["candidates"].append(c)
        _policy.clear()
        Fm.clear_plans()
        torch.backends.cudnn.benchmark = True
        with torch.no_grad():
            for _ in range(5):
                torch.nn.functional.conv2d(x, w, None, stride, padding, dilation, groups)
            h, b = measure(lambda: torch.nn.functional.conv2d(x, w, None, stride, padding, dilation, groups),
                           args.calls, args.bursts)
        row["cudnn"] = {"host_us": round(h, 2), "burst_us": round(b, 2)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="resnet50,mobilenet_v2,inception_v3")
    ap.add_argument("--configs", default="infer1-fp32,infer1-amp")
    ap.add_argument("--top", type=int, default=4, help="candidates per layer at most")
    ap.add_argument("--window", type=float, default=2.0, help="candidates within this factor of the fastest...")
    ap.add_argument("--window-us", type=float, default=20.0, help="...or this many µs of it")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--bursts", type=int, default=9)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        for config in args.configs.split(","):
            rows += run(name, config, args)
    import torch
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "argv": sys.argv[1:]}
    (out / "bench_layer_choice.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
