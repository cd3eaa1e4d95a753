"""A training step (or an inference forward) captured whole in one CUDA graph (PyTorch's "whole-network capture"),
cuDNN benchmark mode against miofind.torch: what a host-bound model's step costs once the host is out of it.

An eager step of a small model (MobileNetV2 at batch 32) is bound by the host's launch work on both sides
(``bench/results/README.md``, session-timeline), so it hides what the kernels save. Captured, a step is one
``CUDAGraph.replay()``, and the GPU's time decides. Each side: the torchvision model from the same seeded weights,
SGD with momentum, static input and target tensors; warm-up steps on a side stream (miofind: its choices made and
its background specialisation waited for, ``tiered.wait``), then ``torch.cuda.graph`` captures zero_grad, forward,
loss, backward and the optimizer step. Timed: the median of ``--iters`` replays (CUDA events), the sides in
alternating rounds, the median of rounds; speedup = cuDNN ms / miofind ms. Also reported: the eager step on the
same models in the same rounds, and the losses of the first replays on fresh batches on each side (both sides
train the same model on the same batches from the same weights after one eager step each, so they should
agree to within nondeterminism). An inference configuration (``infer1-fp32``...) captures the forward without
autograd, its batch-norm statistics first computed from a seeded batch (``calibrate``), and reports the largest
relative L2 difference of the two sides' logits on the fresh batches.

    python bench/bench_graph_step.py --out DIR [--models mobilenet_v2,resnet50] [--configs train32-fp32,infer1-amp]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_models as bm  # noqa: E402  (build, parse, inputs, prepare: the models and set-up bench_models uses)


def captured(model, train: bool, amp: bool, x, y):
    """(replay(), eager step(xb, yb), static x, static y, static output) of ``model``: a training step with SGD
    with momentum (the output: the loss), or an inference forward without autograd (the output: the logits)."""
    torch = bm._torch()
    import torch.nn.functional as F

    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9) if train else None
    sx, sy = x.clone(), y.clone()

    def body(xb, yb):
        # the autocast cache must be off under capture: its cast weights would be captured once
        if not train:
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16, enabled=amp, cache_enabled=False):
                return model(xb)
        opt.zero_grad(set_to_none=False)
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp, cache_enabled=False):
            loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            body(sx, sy)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        sloss = body(sx, sy)
    torch.cuda.synchronize()
    return g.replay, body, sx, sy, sloss


def calibrate(name: str, model) -> None:
    """Batch-norm statistics from three training-mode forwards of one seeded batch of 8 (FP32, no autograd), as a
    trained model has them: an untrained one evaluates with its initial statistics (mean 0, variance 1), and
    its activations then grow layer by layer (Inception-v3's past 1e12: an FP16 forward overflows on both sides)."""
    torch = bm._torch()
    xb = bm.inputs(name, 8, False, 1, seed=2)[0][0]
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    kept = [m.momentum for m in bns]
    for m in bns:   # a cumulative average of the three batches' statistics, not 10% of each
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(xb)
    for m, k in zip(bns, kept):
        m.momentum = k


def run(name: str, config: str, args) -> dict:
    torch = bm._torch()
    train, batch, amp = bm.parse(config)
    xs, ys = bm.inputs(name, batch, amp, 4)
    row = {"model": name, "config": config}
    sides = {}
    for backend in ("cudnn", "miofind"):
        model = bm.build(name)
        if not train:
            calibrate(name, model)
        model = bm.prepare(model, train, amp, backend, name)
        torch.backends.cudnn.benchmark = backend == "cudnn"
        bm.stepper(model, train, amp)(xs[0], ys[0])         # both sides: one eager step (training: its own SGD) first
        if backend == "miofind":
            bm.settle(900)      # every problem chosen, the specialised builds in, the C++ extension built
        replay, body, sx, sy, sloss = captured(model, train, amp, xs[0], ys[0])
        losses, outs = [], []
        for i in range(1, 4):                               # fresh batches through the static tensors
            sx.copy_(xs[i])
            sy.copy_(ys[i])
            replay()
            if train:
                losses.append(float(sloss))
            else:
                outs.append(sloss.float().clone())
        if train:
            row[f"{backend}_replay_losses"] = losses
        else:
            row[f"{backend}_replay_outputs"] = outs
        sides[backend] = (replay, lambda body=body, sx=sx, sy=sy: body(sx, sy))
    if not train:   # the largest relative L2 difference of the replays' logits between the sides
        a, b = row.pop("cudnn_replay_outputs"), row.pop("miofind_replay_outputs")
        for side, outs in (("cudnn", a), ("miofind", b)):
            # non-finite logits on a side: FP16 overflow of the seeded untrained weights, or a wrong kernel
            row[f"{side}_replay_nonfinite"] = [int((~torch.isfinite(o)).sum()) for o in outs]
            row[f"{side}_replay_absmax"] = [float(o.abs().nan_to_num(nan=float("inf")).max()) for o in outs]
        row["replay_output_rel_l2"] = max(float((p - q).norm() / q.norm()) for p, q in zip(b, a))
    graph = {b: [] for b in sides}
    eager = {b: [] for b in sides}
    for r in range(args.rounds):
        for backend, (replay, step) in sides.items():
            torch.backends.cudnn.benchmark = backend == "cudnn"
            for _ in range(3 if r == 0 else 1):
                replay()
            graph[backend].append(bm.event_median_ms(lambda i: replay(), args.iters))
            if args.eager:
                for _ in range(2):
                    step()
                eager[backend].append(bm.event_median_ms(lambda i: step(), args.iters))
    for backend in sides:
        row[f"{backend}_graph_ms"] = statistics.median(graph[backend])
        row[f"{backend}_graph_rounds_ms"] = graph[backend]
        if args.eager:
            row[f"{backend}_eager_ms"] = statistics.median(eager[backend])
            row[f"{backend}_eager_rounds_ms"] = eager[backend]
    row["speedup_graph"] = row["cudnn_graph_ms"] / row["miofind_graph_ms"]
    if args.eager:
        row["speedup_eager"] = row["cudnn_eager_ms"] / row["miofind_eager_ms"]
    import miofind.torch as mt
    row["miofind_stats"] = mt.stats()
    del sides
    torch.cuda.empty_cache()
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="mobilenet_v2,resnet50")
    ap.add_argument("--configs", default="train32-fp32")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-eager", dest="eager", action="store_false", help="time the captured step only")
    args = ap.parse_args(argv)
    torch = bm._torch()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        for config in args.configs.split(","):
            t0 = time.perf_counter()
            try:
                row = run(name, config, args)
            except Exception as e:      # noqa: BLE001  reported in the table, the other rows go on
                row = {"model": name, "config": config, "error": f"{type(e).__name__}: {e}"}
            row["wall_s"] = time.perf_counter() - t0
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if not k.endswith("_stats")}), flush=True)
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version(), "argv": sys.argv, "rounds": args.rounds, "iters": args.iters}
    (out / "bench_graph_step.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"# A step captured in one CUDA graph, cuDNN benchmark mode against miofind.torch ({meta['device']})",
             "", f"`{' '.join(sys.argv)}`; torch {meta['torch']}, cuDNN {meta['cudnn']}; median of {args.iters} "
             f"steps per round, median of {args.rounds} alternating rounds; speedup = cuDNN ms / miofind ms.", "",
             "| model | config | graph cuDNN ms | graph miofind ms | graph speedup | eager cuDNN ms | eager miofind ms "
             "| eager speedup | replays: losses cuDNN / miofind, or logits' difference |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['config']} | {r['error']} | | | | | | |")
            continue
        cells = [f"{r['cudnn_graph_ms']:.2f}", f"{r['miofind_graph_ms']:.2f}", f"{r['speedup_graph']:.3f}"]
        cells += ([f"{r['cudnn_eager_ms']:.2f}", f"{r['miofind_eager_ms']:.2f}", f"{r['speedup_eager']:.3f}"]
                  if "speedup_eager" in r else ["", "", ""])
        if "cudnn_replay_losses" in r:
            cells.append(" / ".join(", ".join(f"{v:.4f}" for v in r[f"{b}_replay_losses"])
                                    for b in ("cudnn", "miofind")))
        else:
            cells.append(f"logits rel. L2 {r['replay_output_rel_l2']:.2e}; non-finite cuDNN "
                         f"{sum(r['cudnn_replay_nonfinite'])} / miofind {sum(r['miofind_replay_nonfinite'])}")
        lines.append(f"| {r['model']} | {r['config']} | " + " | ".join(cells) + " |")
    (out / "bench_graph_step.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
