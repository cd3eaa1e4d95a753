"""Which cuBLASLt matmuls of the GEMM-using solutions are replayed as their captured kernels, on the GPU.

For every ResNet-50 problem (batch ``--batch``) of each ``--configs`` dtype:layout and direction, the GEMM-using own
solutions the FindDB holds (im2col-GEMM, Winograd; FFT is cuFFT's) are prepared and run once on the current stream; the
replay's steps are counted by kind (``miofind.launch.replayer``: 0 a kernel of ours, 1 a library call, 2 a library's
kernel read from a graph capture, ``miofind.capture``), and the reasons a capture was refused are collected from
the log. Then, for the first replayed problem of each config, host µs per prepared call with the matmuls as
captured kernels against as cuBLASLt calls (alternating bursts, the GPU drained between them).

    python bench/lt_capture_probe.py --out DIR [--configs FP32:NCHW,FP16:NHWC] [--batch 32] [--calls 4000] [--limit N]
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_overhead import host_us  # noqa: E402


class _Reasons(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.seen = collections.Counter()

    def emit(self, record):
        # the messages of miofind.cublas and miofind.launch end with the NotTraceable refusing the capture
        if "not replayed" in record.msg and record.args:
            self.seen[str(record.args[-1])] += 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", default="FP32:NCHW,FP16:NHWC")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--limit", type=int, default=100, help="at most this many problems per config")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    import torch

    import miofind
    from miofind import cublas, invokers
    from miofind.find import candidates
    from miofind.invokers import Prepared, _logical
    from miofind.models import model_problems

    reasons = _Reasons()
    for name in ("miofind.cublas", "miofind.launch"):
        lg = logging.getLogger(name)
        lg.addHandler(reasons)
        lg.setLevel(logging.INFO)
    out = {"configs": {}}
    lines = ["# cuBLASLt matmuls replayed as captured kernels (H100)", ""]
    for cfg in a.configs.split(","):
        dtype, layout = cfg.split(":")
        tdt = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}[dtype]
        fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
        per_solver: dict = {}
        timed = None
        reasons.seen.clear()
        for p in model_problems("resnet50", batch=a.batch, dtypes=(dtype,), layouts=(layout,))[:a.limit]:
            sids = {s.id for s in candidates(p)[0] if s.family in ("gemm", "winograd")}
            if not sids:
                continue
            for s in miofind.find_solutions(p):        # the shipped DB answers: every solver's record
                if s.solver_id not in sids or getattr(s, "cut", False):
                    continue
                pr = s.prepare()
                shapes = [_logical(sh, lay) for sh, lay in zip(p.io_shapes(), (p.layouts[i] for i in
                          {"F": (0, 1, 2), "B": (2, 1, 0), "W": (2, 0, 1)}[p.direction]))]
                t = [torch.randn(sh, device="cuda", dtype=tdt).contiguous(memory_format=fmt) for sh in shapes]
                pr(*t)
                st = torch.cuda.current_stream().cuda_stream
                kinds = pr._runs.get(st, (None, None, ()))[2] or ()
                c = collections.Counter(kinds)
                row = per_solver.setdefault(s.solver_id, {"problems": 0, "replayed": 0, "captured": 0,
                                                           "library_calls": 0, "captured_kernels": 0})
                row["problems"] += 1
                row["replayed"] += bool(kinds)
                row["captured"] += bool(kinds) and c[1] == 0 and c[2] > 0
                row["library_calls"] += c[1]
                row["captured_kernels"] += c[2]
                if timed is None and c[2] and c[1] == 0:
                    # the same problem with the matmuls as cuBLASLt calls: a second Prepared traced without capture
                    cublas.capture_kernels = False
                    calls = Prepared(pr.problem, pr.solver_id, pr.config, pr.invoker, pr.workspace_bytes)
                    calls(*t)
                    cublas.capture_kernels = True
                    step = Prepared(pr.problem, pr.solver_id, pr.config, pr.invoker, pr.workspace_bytes)
                    step._replay = False
                    o2, o3 = torch.empty_like(t[2]), torch.empty_like(t[2])
                    calls(t[0], t[1], o2)
                    step(t[0], t[1], o3)
                    pr(*t)
                    torch.cuda.synchronize()
                    us = host_us({"captured kernels": lambda: pr(*t), "cuBLASLt calls": lambda: calls(*t),
                                  "step by step": lambda: step(*t)}, a.calls, torch.cuda.synchronize)
                    timed = {"problem": p.key(), "solver": s.solver_id, "kinds": list(kinds),
                             "calls_kinds": list(calls._runs[st][2]), "host_us": us,
                             "equal": bool(torch.equal(t[2], o2) and torch.equal(t[2], o3))}
        invokers.clear()
        out["configs"][cfg] = {"per_solver": per_solver, "refusals": dict(reasons.seen), "timed": timed}
        lines += [f"## {dtype} {layout}, ResNet-50 N={a.batch}", "",
                  "| solver | problems | replayed | every matmul captured | library calls left | captured kernels |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for sid, r in per_solver.items():
            lines.append(f"| {sid} | {r['problems']} | {r['replayed']} | {r['captured']} | {r['library_calls']} | "
                         f"{r['captured_kernels']} |")
        lines += ["", "Refusals: " + (", ".join(f"{k} ({v})" for k, v in reasons.seen.items()) or "none"), ""]
        if timed:
            lines += [f"Host µs per prepared call, `{timed['problem']}` {timed['solver']} (steps {timed['kinds']} "
                      f"against {timed['calls_kinds']}; outputs equal: {timed['equal']}): "
                      + ", ".join(f"{k} {v:.2f}" for k, v in timed["host_us"].items()), ""]
    with open(os.path.join(a.out, "lt_capture_probe.json"), "w") as fh:
        json.dump(out, fh, indent=1)
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "lt_capture_probe.md"), "w") as fh:
        fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
