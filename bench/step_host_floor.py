"""The host floor of an eager training step: how much of a host-bound step is PyTorch's own work around the
convolutions, and so how fast an eager step could be with convolutions of zero cost.

Three sides on the same torchvision model from the same seeded weights, SGD with momentum, in alternating rounds:
``cudnn`` (benchmark mode), ``miofind`` (``miofind.torch.convert``) and ``null``: every ``nn.Conv2d`` replaced by a
convolution that computes nothing (its forward returns an uninitialised output of the right shape and memory format,
its backward uninitialised gradients, through one Python ``autograd.Function``, whose own host cost, a few µs per
call, stays in: the floor is an upper bound). Per step: the host's time to queue it (zero_grad to the optimizer's
return, no synchronisation: the GPU runs behind) and its wall time to a synchronisation; the medians of ``--iters``
steps per round, the median of rounds. A side's step wall time can be no lower than its host time, so the ``null``
side's host time bounds every eager step's from below, whatever the convolutions cost. No values are checked (the
null side computes garbage).

    python bench/step_host_floor.py --out DIR [--models mobilenet_v2,resnet50] [--config train32-fp32]
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


def null_convert(model) -> int:
    """Swap every nn.Conv2d of ``model`` for a convolution that computes nothing; how many were swapped."""
    torch = bm._torch()

    class NullConv(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, shape):
            ctx.shapes = (x.shape, w.shape)
            cl = x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
            ctx.cl = cl
            return torch.empty(shape, dtype=x.dtype, device=x.device,
                               memory_format=torch.channels_last if cl else torch.contiguous_format)

        @staticmethod
        def backward(ctx, gy):
            xs, ws = ctx.shapes
            fmt = torch.channels_last if ctx.cl else torch.contiguous_format
            dx = torch.empty(xs, dtype=gy.dtype, device=gy.device, memory_format=fmt) if ctx.needs_input_grad[0] else None
            dw = torch.empty(ws, dtype=gy.dtype, device=gy.device, memory_format=fmt) if ctx.needs_input_grad[1] else None
            return dx, dw, None

    class NullConv2d(torch.nn.Conv2d):
        def forward(self, x):
            n, _, h, w = x.shape
            (fy, fx), (sy, sx), (py, px), (dy, dx) = self.kernel_size, self.stride, self.padding, self.dilation
            ho = (h + 2 * py - dy * (fy - 1) - 1) // sy + 1
            wo = (w + 2 * px - dx * (fx - 1) - 1) // sx + 1
            y = NullConv.apply(x, self.weight, (n, self.out_channels, ho, wo))
            return y if self.bias is None else y + self.bias.view(1, -1, 1, 1)

    count = 0
    for m in model.modules():
        if type(m) is torch.nn.Conv2d:
            m.__class__ = NullConv2d
            count += 1
    return count


def time_steps(step, xs, ys, iters: int) -> tuple[float, float]:
    """(median host ms to queue a step, median wall ms of a step to its synchronisation)."""
    torch = bm._torch()
    host, wall = [], []
    for i in range(iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step(xs[i % len(xs)], ys[i % len(ys)])
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        host.append((t1 - t0) * 1e3)
        wall.append((t2 - t0) * 1e3)
    return statistics.median(host), statistics.median(wall)


def run(name: str, config: str, args) -> dict:
    torch = bm._torch()
    train, batch, amp = bm.parse(config)
    if not train:
        raise SystemExit("step_host_floor times training steps: give a train config")
    xs, ys = bm.inputs(name, batch, amp, 4)
    steps, row = {}, {"model": name, "config": config}
    for side in ("cudnn", "miofind", "null"):
        model = bm.build(name)
        if side == "null":
            if amp:
                model = model.to(memory_format=torch.channels_last)
            model.train(True)
            row["null_swapped"] = null_convert(model)
            torch.backends.cudnn.benchmark = True
        else:
            model = bm.prepare(model, train, amp, side)
        step = bm.stepper(model, train, amp)
        step(xs[0], ys[0])
        if side == "miofind":
            bm.settle(900)
        for i in range(5):
            step(xs[i % 4], ys[i % 4])
        steps[side] = step
    res = {s: ([], []) for s in steps}
    for _ in range(args.rounds):
        for side, step in steps.items():
            torch.backends.cudnn.benchmark = side != "miofind"
            h, w = time_steps(step, xs, ys, args.iters)
            res[side][0].append(h)
            res[side][1].append(w)
    for side, (h, w) in res.items():
        row[f"{side}_host_ms"], row[f"{side}_wall_ms"] = statistics.median(h), statistics.median(w)
        row[f"{side}_host_rounds_ms"], row[f"{side}_wall_rounds_ms"] = h, w
    import miofind.torch as mt
    row["miofind_stats"] = mt.stats()
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="mobilenet_v2,resnet50")
    ap.add_argument("--config", default="train32-fp32")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    torch = bm._torch()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        row = run(name, args.config, args)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if not k.endswith("_stats")}), flush=True)
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
            "argv": sys.argv, "rounds": args.rounds, "iters": args.iters}
    (out / "step_host_floor.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"# Host floor of an eager training step ({meta['device']})", "",
             f"`{' '.join(sys.argv)}`; torch {meta['torch']}, cuDNN {meta['cudnn']}; median of {args.iters} steps per "
             f"round, median of {args.rounds} alternating rounds. host: ms to queue a step; wall: ms to its "
             "synchronisation. null: every convolution computes nothing (one Python autograd.Function per call).", "",
             "| model | config | cuDNN host | cuDNN wall | miofind host | miofind wall | null host | null wall |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['config']} | " + " | ".join(
            f"{r[f'{s}_{k}_ms']:.2f}" for s in ("cudnn", "miofind", "null") for k in ("host", "wall")) + " |")
    (out / "step_host_floor.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
