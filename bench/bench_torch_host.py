"""Where the host time of a PyTorch step goes: miofind.torch against cuDNN through PyTorch, on the GPU.

1. Per layer (ResNet-50 layer shapes, N=32, answered from the FindDBs): one ``Conv2d`` module, host
   microseconds to queue one call, forward only (``no_grad``) and forward + backward (dx and dw),
   miofind against torch (``cudnn.benchmark``) in the same run; median over bursts of ``--calls``
   calls, the GPU drained between bursts so that GPU time never shows as host time. AMP FP16
   ``channels_last`` and FP32 (TF32 off).
2. Per model step (torchvision ResNet-50 or ``--model``, batch 32 training, or ``--model-configs``: training or
   ``no_grad`` inference at any batch): host time to queue one step (no
   synchronize), both sides; and for miofind the part of it spent in its forward calls, its backward
   calls and its launches (``Entry.run``, per solver), and how many calls missed the planned path
   (``functional._conv_slow``), from wrappers that add about 1 us per wrapped call.

    python bench/bench_torch_host.py --out bench/results/torch-host [--configs amp,fp32] [--skip-model]
    python bench/bench_torch_host.py --out DIR --model inception_v3 --model-configs train32-amp,infer1-amp
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

def queue_ms(step, n: int) -> float:
    """Median host ms to queue one ``step`` (each started on an idle GPU, not waited for), over ``n``."""
    import torch

    hs = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        hs.append((time.perf_counter() - t0) * 1e3)
    torch.cuda.synchronize()
    return statistics.median(hs)


def warm_up(step, side: str) -> None:
    """Three steps, then (miofind) the background specialisations compiled, then three more."""
    for _ in range(3):
        step()
    if side == "miofind":
        from miofind import tiered
        tiered.wait(900)
    for _ in range(3):
        step()


# (C, K, HxW, filter, stride, pad) of ResNet-50 layers
LAYERS = {
    "r50_64_64_56_3x3": (64, 64, 56, 3, 1, 1),
    "r50_256_64_56_1x1": (256, 64, 56, 1, 1, 0),
    "r50_128_128_28_3x3": (128, 128, 28, 3, 1, 1),
    "r50_256_512_56_1x1_s2": (256, 512, 56, 1, 2, 0),
    "r50_1024_256_14_1x1": (1024, 256, 14, 1, 1, 0),
    "r50_512_512_7_3x3": (512, 512, 7, 3, 1, 1),
    # MobileNetV2's inverted residual at 56x56: its depthwise 3x3 (groups = channels) and its 1x1 projection
    "mnv2_dw_144_56": (144, 144, 56, 3, 1, 1, 144),
    "mnv2_pw_144_24_56": (144, 24, 56, 1, 1, 0),
}


def _torch():
    import torch
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch


def layer_rows(config: str, args) -> list[dict]:
    torch = _torch()
    from bench_overhead import host_us

    import miofind.torch as mt
    from miofind.torch import _policy

    amp = config == "amp"
    rows = []
    for name, (c, k, hw, f, s, p, *g) in LAYERS.items():
        torch.manual_seed(0)
        base = torch.nn.Conv2d(c, k, f, stride=s, padding=p, groups=g[0] if g else 1, bias=False).cuda()
        x = torch.randn(args.batch, c, hw, hw, device="cuda")
        if amp:
            base = base.to(memory_format=torch.channels_last)
            x = x.to(memory_format=torch.channels_last)
        ours = copy.deepcopy(base)
        mt.convert(ours)
        x.requires_grad_(True)
        row = {"layer": name, "config": config}
        for side, mod in (("cudnn", base), ("miofind", ours)):
            torch.backends.cudnn.benchmark = side == "cudnn"
            with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                y0 = mod(x)
            gy = torch.randn_like(y0)

            def fwd():
                with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                    mod(x)

            def train():
                with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                    y = mod(x)
                y.backward(gy)

            train()
            if side == "miofind":
                from miofind import tiered
                tiered.wait(600)
            # bursts of ``--calls`` calls after 3 untimed ones
            row[f"{side}_fwd_us"] = host_us(fwd, args.bursts * args.calls, torch.cuda.synchronize, args.calls, 3)
            row[f"{side}_train_us"] = host_us(train, args.bursts * args.calls, torch.cuda.synchronize, args.calls, 3)
            mod.weight.grad = None
            x.grad = None
        row["chosen"] = {key[0]: e.solver_id for key, e in _policy._table.items()
                         if key[1][1] == c and key[2][0] == k and key[2][2] == f and key[3][0] == s}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


class _Acc:
    """perf_counter wrappers: total seconds and calls per label."""

    def __init__(self) -> None:
        self.t = collections.defaultdict(float)
        self.n = collections.defaultdict(int)
        self.undo = []

    def wrap(self, owner, attr: str, label) -> None:
        orig = getattr(owner, attr)
        t, n, pc = self.t, self.n, time.perf_counter

        if callable(label):
            def w(*a, **k):
                t0 = pc()
                try:
                    return orig(*a, **k)
                finally:
                    lab = label(a)
                    t[lab] += pc() - t0
                    n[lab] += 1
        else:
            def w(*a, **k):
                t0 = pc()
                try:
                    return orig(*a, **k)
                finally:
                    t[label] += pc() - t0
                    n[label] += 1
        setattr(owner, attr, w)
        self.undo.append((owner, attr, orig))

    def restore(self) -> None:
        for owner, attr, orig in reversed(self.undo):
            setattr(owner, attr, orig)
        self.undo.clear()


def model_rows(config: str, args) -> dict:
    """``config``: "amp"/"fp32" (a batch ``--batch`` training step) or bench_models' names
    ("train32-amp", "infer1-fp32", ...): training or ``no_grad`` inference at that batch."""
    torch = _torch()
    from bench_models import build, inputs, parse

    import miofind.torch as mt
    from miofind.torch import _policy, functional

    if "-" not in config:
        config = f"train{args.batch}-{config}"
    train, batch, amp = parse(config)
    base = build(args.model)
    if not train:
        base.eval()
    xs, ys = inputs(args.model, batch, amp, 1)
    x, yl = xs[0], ys[0]
    if amp:
        base = base.to(memory_format=torch.channels_last)
    out = {"config": config, "model": args.model}
    for side in ("cudnn", "miofind"):
        model = copy.deepcopy(base)
        if side == "miofind":
            mt.convert(model)
        torch.backends.cudnn.benchmark = side == "cudnn"
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step():
            if not train:
                with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                    model(x)
                return
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                loss = torch.nn.functional.cross_entropy(model(x), yl)
            loss.backward()
            opt.step()

        warm_up(step, side)

        out[f"{side}_host_ms"] = queue_ms(step, args.steps)
        if side == "miofind":
            acc = _Acc()
            acc.wrap(functional, "conv_normalized", "forward (conv_normalized)")
            acc.wrap(functional._Plan, "backward", "backward (_Plan.backward)")
            acc.wrap(functional, "_conv_slow", "slow path (_conv_slow)")
            acc.wrap(_policy.Entry, "__call__", lambda a: f"Entry.__call__ {a[0].solver_id}")
            acc.wrap(_policy.Entry, "run", lambda a: f"Entry.run {a[0].solver_id}")
            try:
                acc.t.clear(), acc.n.clear()
                out["miofind_host_ms_instrumented"] = queue_ms(step, args.steps)
            finally:
                acc.restore()
            k = args.steps
            out["miofind_parts"] = {lab: {"ms_per_step": acc.t[lab] / k * 1e3, "calls_per_step": acc.n[lab] / k,
                                          "us_per_call": acc.t[lab] / max(acc.n[lab], 1) * 1e6}
                                    for lab in sorted(acc.t, key=lambda s: -acc.t[s])}
            chosen: dict[str, dict[str, int]] = {}
            for key, e in _policy._table.items():
                d = chosen.setdefault(key[0], {})
                d[e.solver_id] = d.get(e.solver_id, 0) + 1
            out["chosen"] = chosen
        # torch.profiler's CPU view of both sides: the autograd nodes and aten ops by inclusive time
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            for _ in range(3):
                step()
            torch.cuda.synchronize()
        ev = sorted(prof.key_averages(), key=lambda e: -e.cpu_time_total)
        out[f"{side}_profiler_top"] = [{"name": e.key[:90], "calls_per_step": e.count / 3,
                                        "cpu_ms_per_step": e.cpu_time_total / 3 / 1e3,
                                        "self_cpu_ms_per_step": e.self_cpu_time_total / 3 / 1e3} for e in ev[:30]]
        del model, opt
        torch.cuda.empty_cache()
    print(json.dumps({k: v for k, v in out.items() if not k.endswith("profiler_top")}), flush=True)
    return out


def parts_rows(config: str, args) -> list[dict]:
    """Host us of each step of one planned call (``functional.conv_normalized`` on a prepared problem),
    forward and backward, against torch's module call and backward, same tensors, bursts of 20 calls."""
    torch = _torch()
    from bench_overhead import host_us

    import miofind.torch as mt
    from miofind import tiered
    from miofind.torch import _fast, _ops, _policy, functional

    amp = config == "amp"
    dt = torch.float16 if amp else torch.float32
    fmt = torch.channels_last if amp else torch.contiguous_format
    rows = []
    for name in args.parts_layers.split(","):
        c, k, hw, f, s, p, *g = LAYERS[name]
        torch.manual_seed(0)
        base = torch.nn.Conv2d(c, k, f, stride=s, padding=p, groups=g[0] if g else 1,
                               bias=False).cuda().to(dt).to(memory_format=fmt)
        ours = copy.deepcopy(base)
        mt.convert(ours)
        x = torch.randn(args.batch, c, hw, hw, device="cuda", dtype=dt).to(memory_format=fmt).requires_grad_(True)
        w = ours.weight
        sync = torch.cuda.synchronize
        torch.backends.cudnn.benchmark = True
        ours(x).sum().backward()       # the find (DB) and the plans
        base(x).sum().backward()
        tiered.wait(600)
        ours(x).sum().backward()
        st, pa, di, gr = ours._miofind_args()
        key = functional._plan_key(2, x, w, st, pa, di, gr, None, "none")
        plan = functional._plans[key]
        y = ours(x)
        gy = torch.randn_like(y)
        stream = _ops._stream(0)
        out = torch.empty(plan.out_shape, dtype=dt, device="cuda", memory_format=fmt)
        e = plan.entry
        pw = w.data_ptr()
        px, po = x.data_ptr(), out.data_ptr()
        wst = torch.empty(max(e.ws_bytes, 1), dtype=torch.uint8, device="cuda")
        pws = wst.data_ptr() if e.ws_bytes else 0
        bk = next(iter(plan.bwd.values()), (None, None))
        xd = x.detach()
        if plan.fast is None:
            plan.make_fast()
        fid, cpp = plan.fast, _fast._module
        row = {"layer": name, "config": config, "F": e.solver_id,
               "B": bk[0].solver_id if bk[0] else None, "W": bk[1].solver_id if bk[1] else None}
        steps = {
            "torch module fwd (no_grad)": (lambda: base(xd)),
            "miofind module fwd (no_grad)": (lambda: ours(xd)),
            "conv_normalized (no_grad)": (lambda: functional.conv_normalized(2, xd, w, None, st, pa, di, gr)),
            "empty lambda (loop floor)": (lambda: None),
            "torch.compiler.is_compiling": torch.compiler.is_compiling,
            "torch.is_autocast_enabled": (lambda: torch.is_autocast_enabled("cuda")),
            "torch.is_grad_enabled": torch.is_grad_enabled,
            "_cuda_getDevice": torch._C._cuda_getDevice,
            "_ops._stream": (lambda: _ops._stream(0)),
            "x.contiguous(fmt)": (lambda: xd.contiguous(memory_format=fmt)),
            "x.stride()": xd.stride,
            "x.shape": (lambda: xd.shape),
            "torch.empty(list, fmt)": (lambda: torch.empty(plan.conv[0], dtype=dt, device="cuda", memory_format=fmt)),
            "torch.empty(tuple, plan.device)": (lambda: torch.empty(tuple(plan.out_shape), dtype=dt,
                                                                    device=plan.device, memory_format=fmt)),
            "torch.empty(bytes)": (lambda: torch.empty(1 << 20, dtype=torch.uint8, device="cuda")),
            "x.data_ptr()": xd.data_ptr,
            "module._miofind_args": ours._miofind_args,
            "_plan_key": (lambda: functional._plan_key(2, xd, w, st, pa, di, gr, None, "none")),
            "plan.forward": (lambda: plan.forward(xd, w)),
            "torch.empty(out)": (lambda: torch.empty(plan.out_shape, dtype=dt, device="cuda", memory_format=fmt)),
            "Entry.__call__": (lambda: e(xd, w, out, stream)),
            "invoker (pointers)": (lambda: e.invoker(*((pw, px) if e.swap else (px, pw)), po, pws, stream)),
            "torch module fwd (grad)": (lambda: base(x)),
            "miofind module fwd (grad)": (lambda: ours(x)),
            "PlannedConv.apply": (lambda: _ops.PlannedConv.apply(x, w, None, plan, w)),
            "torch fwd+backward": (lambda: base(x).backward(gy)),
            "miofind fwd+backward": (lambda: ours(x).backward(gy)),
            "_Plan.backward (dx, dw)": (lambda: plan.backward(gy, xd, w, True, True)),
        }
        if type(fid) is int and cpp:    # the C++ path's calls alone, without conv_normalized's Python
            steps["C++ forward (no_grad)"] = lambda: cpp.forward(xd, w, None, fid, stream)
            steps["C++ apply (grad)"] = lambda: cpp.apply(x, w, w, None, fid, stream)
            steps["C++ apply+backward"] = lambda: cpp.apply(x, w, w, None, fid, stream).backward(gy)
        row["cpp_plan"] = fid if type(fid) is int else None
        # conv_normalized's no-grad path, stage by stage (perf_counter between stages, summed)
        stages = collections.defaultdict(float)
        pc = time.perf_counter
        PL = functional._PLAIN

        def staged():
            t0 = pc()
            ok = type(xd) in PL and type(w) in PL and xd.is_cuda
            t1 = pc()
            ok = ok and not torch.compiler.is_compiling()
            t2 = pc()
            torch.is_autocast_enabled("cuda")
            t3 = pc()
            key = functional._plan_key(2, xd, w, st, pa, di, gr, None, "none")
            t4 = pc()
            pl = functional._plans.get(key)
            t5 = pc()
            ok = pl is not None and pl.dev == torch._C._cuda_getDevice() and not torch.is_grad_enabled()
            t6 = pc()
            pl.forward(xd, w)
            t7 = pc()
            for lab_, a_, b_ in (("type checks", t0, t1), ("is_compiling", t1, t2), ("autocast check", t2, t3),
                                 ("_plan_key", t3, t4), ("_plans.get", t4, t5), ("device/grad checks", t5, t6),
                                 ("plan.forward", t6, t7)):
                stages[lab_] += b_ - a_
        with torch.no_grad():
            for _ in range(200):
                staged()
            torch.cuda.synchronize()
            stages.clear()
            for _ in range(50):
                for _ in range(20):
                    staged()
                torch.cuda.synchronize()
        row["staged_us"] = {k_: v_ / 1000 * 1e6 for k_, v_ in stages.items()}
        with torch.no_grad():
            for lab in [k_ for k_ in steps if "(grad)" not in k_ and "backward" not in k_ and "apply" not in k_]:
                row[lab] = host_us(steps[lab], args.parts_calls, sync, burst=20)
        for lab in [k_ for k_ in steps if k_ not in row and k_ not in ("layer", "config")]:
            row[lab] = host_us(steps[lab], args.parts_calls, sync, burst=20)
        base.weight.grad = ours.weight.grad = x.grad = None
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def markdown(res: dict, cmd: str) -> str:
    lines = [f"# miofind.torch host time against cuDNN through PyTorch ({res['meta']['device']})", "",
             f"`{cmd}`", "",
             "Per layer: host us to queue one call (median of bursts, GPU drained between bursts), N="
             f"{res['meta']['batch']}.", "",
             "| layer | config | F/B/W chosen | fwd cuDNN | fwd miofind | fwd+bwd cuDNN | fwd+bwd miofind |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: |"]
    for r in res["layers"]:
        ch = "/".join(r["chosen"].get(d, "?") for d in "FBW")
        lines.append(f"| {r['layer']} | {r['config']} | {ch} | {r['cudnn_fwd_us']:.1f} | {r['miofind_fwd_us']:.1f} | "
                     f"{r['cudnn_train_us']:.1f} | {r['miofind_train_us']:.1f} |")
    for r in res.get("parts", []):
        lines += ["", f"## One planned call, {r['layer']} {r['config']} (F {r['F']}, B {r['B']}, W {r['W']}): "
                      "host us per call, bursts of 20", "", "| step | us |", "| --- | ---: |"]
        lines += [f"| {k} | {v:.1f} |" for k, v in r.items() if isinstance(v, float)]
        lines += [f"| staged: {k} | {v:.2f} |" for k, v in r.get("staged_us", {}).items()]
    for m in res["models"]:
        lines += ["", f"## {m.get('model', 'resnet50')} {m['config']} step: host ms to queue a step: cuDNN "
                      f"{m['cudnn_host_ms']:.2f}, miofind {m['miofind_host_ms']:.2f} "
                      f"(instrumented {m['miofind_host_ms_instrumented']:.2f})", "",
                  "| miofind part | ms per step | calls per step | us per call |", "| --- | ---: | ---: | ---: |"]
        for lab, v in m["miofind_parts"].items():
            lines.append(f"| {lab} | {v['ms_per_step']:.2f} | {v['calls_per_step']:.0f} | {v['us_per_call']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", default="amp,fp32")
    ap.add_argument("--model-configs", default=None,
                    help="model steps instead of --configs': e.g. train32-amp,infer1-fp32 (bench_models' names)")
    ap.add_argument("--model", default="resnet50", help="the torchvision model of --model-configs")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--bursts", type=int, default=15)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--skip-model", action="store_true")
    ap.add_argument("--skip-layers", action="store_true")
    ap.add_argument("--parts", action="store_true", help="only the per-step breakdown of one planned call")
    ap.add_argument("--parts-layers", default="r50_64_64_56_3x3,r50_512_512_7_3x3")
    ap.add_argument("--parts-calls", type=int, default=2000)
    args = ap.parse_args(argv)
    torch = _torch()
    res = {"meta": {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                    "cudnn": torch.backends.cudnn.version(), "batch": args.batch, "argv": sys.argv},
           "layers": [], "models": [], "parts": []}
    if args.model_configs:
        for config in args.model_configs.split(","):
            res["models"].append(model_rows(config, args))
    for config in args.configs.split(",") if not args.model_configs else []:
        if args.parts:
            res["parts"] += parts_rows(config, args)
            continue
        if not args.skip_model:
            res["models"].append(model_rows(config, args))
        if not args.skip_layers:
            res["layers"] += layer_rows(config, args)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench_torch_host.json"), "w") as f:
        json.dump(res, f, indent=1)
    md = markdown(res, "python " + " ".join(sys.argv))
    with open(os.path.join(args.out, "bench_torch_host.md"), "w") as f:
        f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
