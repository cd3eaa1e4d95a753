"""Host time per call of miofind's custom ops as ``torch.compile(mode="default")`` graphs call them, on the GPU.

Per layer (ResNet-50 and MobileNetV2 layers, batch 32), data type (FP32 NCHW with TF32 off, FP16 NHWC) and
direction, host microseconds to queue one call, under ``no_grad`` as a compiled graph runs them:

- ``aten``: cuDNN (benchmark mode) through ``aten.convolution`` / ``aten.convolution_backward``, as Inductor calls it;
- ``cpp``: ``torch.ops.miofind.conv_*`` with its key learned: the extension's C++ autograd kernel (which
  redispatches below autograd), then its C++ CUDA kernel (``_fast.cpp``'s ``op_call``);
- ``pyag``: the same with custom_op's Python autograd kernel in place of the C++ one (``ops_autograd_set_on(False)``),
  as before the C++ autograd kernels (the switch is turned off and on around each call: two extension calls of a
  fraction of a microsecond are in this figure);
- ``below``: the same call below the Autograd key (``torch._C._AutoDispatchBelowAutograd``; ``guard`` is entering
  and leaving that guard alone): the floor a C++ autograd kernel approaches;
- ``python``: the ops' Python path (the extension's launches off, ``set_enabled(False)``), as before the C++ kernels.

The median over interleaved bursts, the GPU drained between bursts (``bench_overhead.host_us``). Each layer's C++
result is checked bit for bit against the Python path's, and the extension's counters show which path ran.

    python bench/bench_op_host.py --out DIR [--calls 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("MIOFIND_TORCH_CPP", "sync")

# (name, C, K, H = W, filter, stride, padding, groups)
LAYERS = [
    ("r50 1x1 256>64 @56", 256, 64, 56, 1, 1, 0, 1),
    ("r50 3x3 128 @28", 128, 128, 28, 3, 1, 1, 1),
    ("mnv2 dw3x3 144 @56", 144, 144, 56, 3, 1, 1, 144),
    ("mnv2 1x1 144>24 @56", 144, 24, 56, 1, 1, 0, 1),
]
CONFIGS = [("FP32", False), ("FP16", True)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=32)
    a = ap.parse_args()

    import torch

    import miofind.torch as mt
    from bench_overhead import host_us
    from miofind.torch import _fast

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    ops, aten = torch.ops.miofind, torch.ops.aten
    sync = torch.cuda.synchronize
    below = torch._C._AutoDispatchBelowAutograd
    rows = []
    for name, c, k, hw, f, s, p, g in LAYERS:
        for dt_name, cl in CONFIGS:
            dtype = torch.float16 if cl else torch.float32
            fmt = torch.channels_last if cl else torch.contiguous_format
            x = torch.randn(a.batch, c, hw, hw, device="cuda").to(dtype).contiguous(memory_format=fmt)
            w = (torch.randn(k, c // g, f, f, device="cuda") / (c // g * f * f) ** 0.5).to(dtype)
            w = w.contiguous(memory_format=fmt)
            ho = (hw + 2 * p - f) // s + 1
            dy = torch.randn(a.batch, k, ho, ho, device="cuda").to(dtype).contiguous(memory_format=fmt)
            conv = ([s, s], [p, p], [1, 1], g)
            st, pd, dl, _ = conv
            calls = {
                "F": (lambda: ops.conv_forward.default(x, w, *conv),
                      lambda: aten.convolution.default(x, w, None, st, pd, dl, False, [0, 0], g)),
                "B": (lambda: ops.conv_backward_data.default(dy, w, list(x.shape), *conv),
                      lambda: aten.convolution_backward.default(dy, x, w, None, st, pd, dl, False, [0, 0], g,
                                                                [True, False, False])),
                "W": (lambda: ops.conv_backward_weight.default(dy, x, list(w.shape), *conv),
                      lambda: aten.convolution_backward.default(dy, x, w, None, st, pd, dl, False, [0, 0], g,
                                                                [False, True, False])),
            }
            with torch.no_grad():
                for d, (mine, ref) in calls.items():
                    for _ in range(3):      # find (or DB answer), then the learned key
                        mine()
                    mod = _fast._ops_module
                    c0 = mod.ops_stats() if mod else None
                    got = mine()
                    c1 = mod.ops_stats() if mod else None

                    def low(fn=mine):
                        with below():
                            return fn()
                    def guard():
                        with below():
                            pass

                    def pyag(fn=mine):
                        mod.ops_autograd_set_on(False)
                        try:
                            return fn()
                        finally:
                            mod.ops_autograd_set_on(True)
                    fns = {"aten": ref, "cpp": mine, "below": low, "guard": guard}
                    if mod:
                        fns["pyag"] = pyag
                    t = host_us(fns, a.calls, sync)
                    if mod:
                        mod.set_enabled(False)
                    try:
                        slow = mine()
                        t["python"] = host_us(mine, a.calls, sync)
                    finally:
                        if mod:
                            mod.set_enabled(True)
                    entry = [e.solver_id for key, e in mt._policy._table.items()
                             if key[0] == d and tuple(key[1]) == tuple(x.shape) and tuple(key[2]) == tuple(w.shape)
                             and key[7] is dtype]
                    rows.append({"layer": name, "dtype": dt_name, "direction": d,
                                 "us": {kk: round(v, 2) for kk, v in t.items()},
                                 "cpp_path": None if c0 is None else c1[1] - c0[1] == 1,
                                 "equal": bool(torch.equal(got, slow)), "solver": entry[:1]})
                    print(json.dumps(rows[-1]), flush=True)
    os.makedirs(a.out, exist_ok=True)
    meta = {"command": "python bench/bench_op_host.py " + " ".join(sys.argv[1:]), "torch": torch.__version__,
            "device": torch.cuda.get_device_name(), "extension": _fast.status(), "time": time.ctime()}
    with open(os.path.join(a.out, "bench_op_host.json"), "w") as fh:
        json.dump({"meta": meta, "rows": rows}, fh, indent=1)
    lines = [f"# Host µs per op call under no_grad ({meta['device']}, torch {meta['torch']})", "",
             f"`{meta['command']}`; median over interleaved bursts, the GPU drained between them.", "",
             "| layer | dtype | dir | aten | miofind C++ | C++, Python autograd | below autograd | guard | Python path "
             "| C++ taken | equal |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in rows:
        u = r["us"]
        lines.append(f"| {r['layer']} | {r['dtype']} | {r['direction']} | {u['aten']} | {u['cpp']} | "
                     f"{u.get('pyag', '-')} | {u['below']} | {u['guard']} | {u['python']} | {r['cpp_path']} | "
                     f"{r['equal']} |")
    with open(os.path.join(a.out, "bench_op_host.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
