"""Host time per call of a cuDNN plan by each way of executing it, on the GPU: the frontend's C++ binding
(``direct``, what a call from Python takes) and its public call (``public``), the plan rebuilt through the backend
API called from Python through ctypes (``backend-python``), as a stored plan is prepared (``native-python``:
``cudnn_base.NativePlan``, one ctypes call of cudnn_run) and natively (``native``: the default invoker's replay,
``miofind._native``'s cudnn_run, as miofind.torch's C++ path and prepared solutions run it), beside
``torch.nn.functional.conv2d`` (cuDNN benchmark mode) for F problems; host µs per call, the median over drained
bursts (``bench_overhead.host_us``), the paths interleaved burst by burst. The problems are MobileNetV3-Large AMP
layers whose shipped records pick a cuDNN plan (or ``--keys``), each at its heuristics' first plan that builds.

    python bench/bench_cudnn_execute.py --out DIR [--keys K1,K2] [--calls 3000] [--own]

``--own`` adds the FindDBs' fastest own solution of each problem replayed the same way (``own native``): the
difference from ``native`` is what ``MIOFIND_TORCH_CUDNN_HOST_US`` charges a natively replayed cuDNN plan.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_overhead import host_us  # noqa: E402

# MobileNetV3-Large N=32 FP16 NHWC: squeeze-excitation 1x1 convolutions on the pooled plane, a 1x1 expansion,
# a strided depthwise 5x5 (F, B, W)
KEYS = ("120-1-1-1x1-32-1-1-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F",
        "32-1-1-1x1-120-1-1-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-B",
        "120-1-1-1x1-32-1-1-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-W",
        "112-14-14-1x1-672-14-14-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-F",
        "112-14-14-1x1-672-14-14-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-B",
        "112-14-14-1x1-672-14-14-32-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP16-W")


def _own_replay(p, a, b, out, stream):
    """((solver id, config), fn) replaying natively the fastest own (not cuDNN) solution the FindDBs hold for ``p``
    that has a native replay, its workspace allocated; or why none (a str)."""
    import cupy

    from miofind import find_solutions, launch
    from miofind.invokers import get_invoker, ptr
    from miofind.registry import get_solver

    why = "no own solution in the FindDBs"
    for s in find_solutions(p, mode="normal"):
        if get_solver(s.solver_id).family == "cudnn" or getattr(s, "cut", False):
            continue
        try:
            inv, ws = get_invoker(p, s.solver_id, s.config)
            buf = cupy.empty(ws, dtype=cupy.uint8) if ws else None
            got = launch.replayer(inv, bool(ws), stream)
        except Exception as e:      # noqa: BLE001  the next one
            why = f"{s.solver_id}: {e.__class__.__name__}: {e}"
            continue
        if not got:
            why = f"{s.solver_id}: not replayed ({got!r})"
            continue
        run, pa, pb, po, pw = got[0], ptr(a), ptr(b), ptr(out), ptr(buf) if ws else 0
        return (s.solver_id, s.config), (lambda run=run, pa=pa, pb=pb, po=po, pw=pw, keep=buf:
                                         run(stream, pa, pb, po, pw))
    return why


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--keys", default=",".join(KEYS))
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--own", action="store_true",
                    help="also time the FindDBs' fastest own solution of each problem, replayed natively")
    args = ap.parse_args(argv)
    import cupy
    import torch

    from miofind import launch
    from miofind.invokers import call, ptr
    from miofind.problem import ProblemDescription
    from miofind.solvers import cudnn_base
    from miofind.verify import random_array

    torch.backends.cudnn.benchmark = True
    stream = cupy.cuda.get_current_stream().ptr
    rows = []
    for key in args.keys.split(","):
        p = ProblemDescription.from_key(key)
        d = p.direction
        shapes = {"F": (p.x_shape, p.w_shape, p.y_shape), "B": (p.y_shape, p.w_shape, p.x_shape),
                  "W": (p.y_shape, p.x_shape, p.w_shape)}[d]
        rng = cupy.random.default_rng(1)
        a, b = random_array(shapes[0], p.dtype, rng), random_array(shapes[1], p.dtype, rng)
        out = cupy.empty(shapes[2], dtype=a.dtype)
        (name, ws), = cudnn_base.list_plans(p, limit=1)
        g, plan = cudnn_base.resolve(p, {"plan": name})
        buf = cupy.empty(ws, dtype=cupy.uint8) if ws else None
        fns, paths = {}, {}
        for path in ("backend-python", "direct", "public"):
            inv = g.make_invoker(plan, path)
            paths[path] = inv.path
            fns[path] = (lambda inv=inv: call(inv, p, a, b, out, buf))
        got = launch.replayer(g.make_invoker(plan), bool(ws), stream)
        if got:
            run = got[0]
            pa, pb, po, pw = ptr(a), ptr(b), ptr(out), ptr(buf) if ws else 0
            fns["native"] = (lambda run=run, pa=pa, pb=pb, po=po, pw=pw: run(stream, pa, pb, po, pw))
        paths["native"] = "replayed" if got else f"not replayed ({got!r})"
        # a stored plan as a DB hit prepares it (cudnn_base.NativePlan): called from Python through one ctypes call
        try:
            npl = cudnn_base.NativePlan(p.as_conv(), name, cudnn_base._device_id(), stream)
            inv = npl.invoker()
            nbuf = cupy.empty(npl.workspace, dtype=cupy.uint8) if npl.workspace else None
            fns["native-python"] = (lambda inv=inv, nbuf=nbuf: call(inv, p, a, b, out, nbuf))
            paths["native-python"] = inv.path
        except Exception as e:      # noqa: BLE001  named in the output
            paths["native-python"] = f"not made ({e.__class__.__name__}: {e})"
        if args.own:
            # the FindDBs' fastest own solution of the problem replayed the same way: what miofind.torch's C++
            # path pays per call for kernel launches, against the native cuDNN replay (MIOFIND_TORCH_CUDNN_HOST_US)
            own = _own_replay(p, a, b, out, stream)
            if isinstance(own, str):
                paths["own native"] = own
            else:
                (sid, cfg), fns["own native"] = own
                paths["own native"] = f"replayed: {sid} {cfg}"
        if d == "F" and not p.transposed:
            cl = p.layouts[0] == "NHWC"
            fmt = torch.channels_last if cl else torch.contiguous_format
            dt = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}[p.dtype]
            x = torch.randn(p.n, p.c, *p.in_size, device="cuda", dtype=dt).contiguous(memory_format=fmt)
            w = torch.randn(p.k, p.c // p.groups, *p.filter_size, device="cuda", dtype=dt).contiguous(memory_format=fmt)
            fns["torch conv2d"] = (lambda x=x, w=w: torch.nn.functional.conv2d(
                x, w, None, p.strides, p.pads, p.dilations, p.groups))
        us = host_us(fns, args.calls, torch.cuda.synchronize)
        row = {"key": key, "plan": name, "paths": paths, "host_us": us}
        rows.append(row)
        print(f"{key} {name}: " + ", ".join(f"{k} {v:.1f}" for k, v in us.items()), flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "cudnn_execute.json"), "w") as fh:
        json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
