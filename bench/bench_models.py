"""End to end on real models: miofind.torch against cuDNN (``cudnn.benchmark=True``), on the GPU.

Models: torchvision ResNet-50, MobileNetV2, Inception-v3 (299x299, no aux head); on request VGG-16,
ResNeXt-101 32x8d and MobileNetV3-Large. Configurations:
batch-32 training step (forward, cross-entropy, backward, SGD with momentum) and batch-1 and
batch-32 inference (``no_grad``, eval), each in FP32 with TF32 off and in AMP FP16 (autocast) with
the model and input in ``channels_last``; on request (``--configs train32-tf32,...``) also FP32 NCHW with
TF32 convolutions, PyTorch's own default (``torch.backends.cudnn.allow_tf32 = True``; matmuls stay FP32,
as PyTorch's default ``matmul.allow_tf32 = False``), which miofind.torch runs as ``math="tf32"`` problems, and
(``-tf32cl``) the same in ``channels_last`` (NHWC TF32 problems: the Hopper TF32 solvers' case), and (``-ampnchw``) AMP FP16
with the model and input left channels-first, autocast's default (NCHW FP16 problems: the Hopper family's NCHW wrappers). Both sides start from the same initial weights, in the
same process (cuDNN first, then miofind: ``miofind.torch.convert`` of a deep copy).

Per configuration:
- median step time over ``--iters`` steps after warm-up (CUDA events), both sides, in ``--rounds``
  alternating rounds (the median of the rounds' medians), and the ratio cuDNN time / miofind time
  (above 1: miofind is faster); miofind's side after its background specialisations finished;
- first iteration in a fresh process (``--first`` subprocesses: model built and on the GPU, CUDA
  up, then one step timed to its synchronize): cuDNN's benchmark-mode first step against
  miofind's with the shipped DB beneath a new, empty user DB; then a second miofind process on that
  user DB, whose ``miofind.torch.stats()["finds_run"]`` must be 0;
- training only: the largest relative difference of the loss over ``--steps`` steps and of the
  gradients (relative L2 per parameter) after them, miofind against cuDNN, beside the same numbers
  for two cuDNN runs (its run-to-run nondeterminism).

    python bench/bench_models.py --out bench/results/torch-models [--models resnet50,...] [--iters 30]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MODELS = ("resnet50", "mobilenet_v2", "inception_v3")
OTHER_MODELS = ("vgg16", "resnext101_32x8d", "mobilenet_v3_large",  # on request: biases (fused epilogue); groups; SE
                "convnext_tiny")                                     # depthwise 7x7 with biases, LayerNorm, GELU
# on request, models of other dimensions: torchvision.models.video (3D convolutions; clips of 16 x 112 x 112, 400
# classes, AMP in channels_last_3d) and torchaudio's wav2vec 2.0 base (1D: its feature encoder's seven strided
# convolutions and the grouped 128-tap positional convolution under weight norm; 2 s of 16 kHz audio, a 1000-way
# frame-averaged head, layer drop off; AMP leaves it channels-first)
VIDEO_MODELS = ("r3d_18", "r2plus1d_18", "mc3_18")
AUDIO_MODELS = ("wav2vec2_base",)
CONFIGS = ("train32-fp32", "train32-amp", "infer1-fp32", "infer1-amp", "infer32-fp32", "infer32-amp")
TF32_CONFIGS = ("train32-tf32", "infer1-tf32", "infer32-tf32",     # on request
                "train32-tf32cl", "infer1-tf32cl", "infer32-tf32cl",
                "train32-ampnchw", "infer32-ampnchw")              # and AMP FP16 without channels_last
_NCHW_AMP = [False]  # AMP with the model and input left channels-first (-ampnchw), set by ``parse``
_TF32 = [False]     # cuDNN's TF32 convolutions, set by ``parse`` for a -tf32 or -tf32cl configuration
_CL = [False]       # channels_last without autocast (-tf32cl), set by ``parse``
_CONVERTED = [None]  # the last miofind.torch.convert's (swapped, left), set by ``prepare``


def _torch():
    import torch
    torch.backends.cudnn.allow_tf32 = _TF32[0]
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch


def build(name: str, seed: int = 0):
    """The torchvision model ``name`` with seeded initial weights, on the GPU."""
    torch = _torch()
    import torchvision

    torch.manual_seed(seed)
    if name in VIDEO_MODELS:
        return getattr(torchvision.models.video, name)(weights=None).cuda()
    if name in AUDIO_MODELS:
        import torchaudio

        class FrameAveraged(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(x)[0].mean(1)
        # layer drop off: every step uses (and differentiates) every layer on both sides
        return FrameAveraged(getattr(torchaudio.models, name)(aux_num_out=1000, encoder_layer_drop=0.0)).cuda()
    kw = dict(aux_logits=False, init_weights=True) if name == "inception_v3" else {}
    return getattr(torchvision.models, name)(weights=None, **kw).cuda()


def parse(config: str):
    """(train, batch, amp) of a configuration name; it also sets TF32 convolutions on for a -tf32 one, off otherwise."""
    kind, prec = config.split("-")
    _TF32[0] = prec in ("tf32", "tf32cl")
    _CL[0] = prec == "tf32cl"
    _NCHW_AMP[0] = prec == "ampnchw"
    _torch()
    return kind.startswith("train"), int(kind.lstrip("trainfer")), prec in ("amp", "ampnchw")


def channels_last(amp: bool, name: str = "") -> bool:
    """Whether the model and input go channels_last: AMP (but -ampnchw) and -tf32cl; never the 1D audio model."""
    return ((amp and not _NCHW_AMP[0]) or _CL[0]) and name not in AUDIO_MODELS


def memory_format(name: str):
    """The channels-last format of the model's activations: channels_last_3d for the video models."""
    torch = _torch()
    return torch.channels_last_3d if name in VIDEO_MODELS else torch.channels_last


def inputs(name: str, batch: int, amp: bool, steps: int, seed: int = 1):
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(seed)
    if name in VIDEO_MODELS:
        shape, classes = (batch, 3, 16, 112, 112), 400
    elif name in AUDIO_MODELS:
        shape, classes = (batch, 32000), 1000
    else:
        size = 299 if name == "inception_v3" else 224
        shape, classes = (batch, 3, size, size), 1000
    xs = [torch.randn(*shape, device="cuda", generator=g) for _ in range(steps)]
    if channels_last(amp, name):
        xs = [x.to(memory_format=memory_format(name)) for x in xs]
    ys = [torch.randint(0, classes, (batch,), device="cuda", generator=g) for _ in range(steps)]
    return xs, ys


def prepare(model, train: bool, amp: bool, backend: str, name: str = ""):
    """The model set up for one side: channels_last for AMP (and -tf32cl), train/eval, converted for miofind."""
    torch = _torch()
    if channels_last(amp, name):
        model = model.to(memory_format=memory_format(name))
    model.train(train)
    torch.backends.cudnn.benchmark = backend == "cudnn"
    if backend == "miofind":
        import miofind.torch as mt
        got = mt.convert(model)
        _CONVERTED[0] = {"swapped": got.swapped, "left": [list(x) for x in got.left]}
        if os.environ.get("MIOFIND_BENCH_FUSE") == "1":     # --fuse (set by main, seen by the --first children too)
            mt.fuse(model)
    return model


def settle(timeout: float = 900) -> float:
    """After miofind's first step: wait until every problem's specialised builds are in (tiered find) and the C++
    extension is built, as a long run's steady state (and `miofind warmup`'s install) has them; seconds waited."""
    from miofind import tiered
    from miofind.torch import _fast
    t0 = time.perf_counter()
    while True:     # a job may queue another (a specialisation's deferred configs): until none is left
        tiered.wait(timeout)
        if not tiered.pending() or time.perf_counter() - t0 > timeout:
            break
    # the C++ extension: a process starts its build at its first learned backward (its second step), after this
    # first step; started here and waited for, so that the timed steps run what a long run reaches
    _fast.module()
    _fast.wait(timeout)
    return time.perf_counter() - t0


def stepper(model, train: bool, amp: bool, opt=None):
    """step(x, y) -> loss tensor (training) or output (inference). ``opt``: the training step's optimizer (default a
    new SGD with momentum)."""
    torch = _torch()
    import torch.nn.functional as F

    if train and opt is None:
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step(x, y):
        if train:
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            return model(x)
    return step


def event_median_ms(call, iters: int) -> float:
    """The median over ``iters`` runs of ``call(i)``, each between two CUDA events and a synchronisation."""
    torch = _torch()
    times = []
    for i in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        call(i)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def median_ms(step, xs, ys, warmup: int, iters: int) -> float:
    for i in range(warmup):
        step(xs[i % len(xs)], ys[i % len(ys)])
    return event_median_ms(lambda i: step(xs[i % len(xs)], ys[i % len(ys)]), iters)


def trajectory(name, train, amp, backend, xs, ys, steps):
    """Losses over ``steps`` training steps from the seeded weights, and the last step's gradients by parameter name."""
    model = prepare(build(name), train, amp, backend, name)
    step = stepper(model, train, amp)
    losses = [float(step(xs[i], ys[i])) for i in range(steps)]
    return losses, {n: None if p.grad is None else p.grad.detach().float().clone() for n, p in model.named_parameters()}


def differences(a, b) -> dict:
    """The largest relative difference of the losses and of a parameter's gradient (relative L2), that parameter,
    its gradient's norm over the median parameter's (a gradient near zero makes any difference large), and the
    largest relative difference among the convolutions' weights alone."""
    (la, ga), (lb, gb) = a, b
    loss = max(abs(x - y) / max(abs(y), 1e-30) for x, y in zip(la, lb))
    if any((ga[n] is None) != (g is None) for n, g in gb.items()):
        return {"loss_max_rel": loss, "grad_max_rel_l2": float("inf"),
                "grad_worst_param": "a gradient on one side only"}
    gb = {n: g for n, g in gb.items() if g is not None}   # parameters no step used (none on either side)
    rels = {n: float((ga[n] - g).norm() / g.norm().clamp_min(1e-30)) for n, g in gb.items()}
    worst = max(rels, key=rels.get)
    norms = sorted(float(g.norm()) for g in gb.values())
    conv = [r for n, r in rels.items() if gb[n].dim() >= 3]
    return {"loss_max_rel": loss, "grad_max_rel_l2": rels[worst], "grad_worst_param": worst,
            "grad_worst_norm_over_median": float(gb[worst].norm()) / max(norms[len(norms) // 2], 1e-30),
            "conv_weight_grad_max_rel_l2": max(conv) if conv else None}


def first_iteration(name: str, config: str, backend: str, env: dict, profile: str | None = None) -> dict:
    """One step of a fresh process (``--first``), as JSON: seconds and miofind's stats; ``profile``: a file for
    that step's cProfile."""
    cmd = [sys.executable, os.path.abspath(__file__), "--first", name, config, backend]
    if profile:
        env = {**env, "MIOFIND_BENCH_CPROFILE": profile}
    # process_s: the process's wall time from its start to its end; exit_s: from its printed result to its end (what
    # its interpreter's exit took: background work joined or stopped, CUDA torn down)
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        lines, t_result = [], None
        try:
            for line in p.stdout:
                lines.append(line)
                if line.startswith("{"):
                    t_result = time.perf_counter()
            rc = p.wait(timeout=3600)
        finally:
            if p.poll() is None:
                p.kill()
        t_end = time.perf_counter()
        if rc:
            err.seek(0)
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{err.read()[-3000:]}")
    out = json.loads("".join(lines).strip().splitlines()[-1])
    out["process_s"] = t_end - t0
    out["exit_s"] = t_end - t_result
    return out


def _first_main(name: str, config: str, backend: str) -> None:
    torch = _torch()
    if os.environ.get("MIOFIND_BENCH_NATIVE_FIRST") == "0":
        # an A/B of a fresh process's first step: stored cuDNN plans prepared through the frontend's graph as before
        # cudnn_base.NativePlan (session-nov27d)
        from miofind.solvers import cudnn_base
        cudnn_base.native_first = False
    if os.environ.get("MIOFIND_BENCH_NATIVE_FIND") == "0":
        # an A/B of a fresh process's first step: a find's cuDNN plans built through the frontend's graph, and the
        # winner's native replay building its plan again, as before session-nov27e
        from miofind.solvers import cudnn_base
        cudnn_base.native_find = False
    train, batch, amp = parse(config)
    model = prepare(build(name), train, amp, backend, name)
    xs, ys = inputs(name, batch, amp, 1)
    sources = []    # (problem key, how it was answered: db / find / predicted) of each problem this process looked up
    if backend == "miofind":
        from miofind.torch import _policy
        _find = _policy._find

        def recorded(problem, *a, **kw):
            res = _find(problem, *a, **kw)
            sources.append((problem.key(), getattr(res, "source", "find")))
            return res
        _policy._find = recorded
    step = stepper(model, train, amp)
    torch.cuda.synchronize()
    prof = os.environ.get("MIOFIND_BENCH_CPROFILE")   # a file: the first step's cProfile as text
    if prof:
        import cProfile
        pr = cProfile.Profile()
        pr.enable()
    t0 = time.perf_counter()
    step(xs[0], ys[0])
    torch.cuda.synchronize()
    out = {"first_s": time.perf_counter() - t0}
    if prof:
        import pstats
        pr.disable()
        with open(prof, "w") as fh:
            fh.write(f"first step {out['first_s']:.3f} s (profiled)\n")
            for order in ("cumulative", "tottime"):
                pstats.Stats(pr, stream=fh).sort_stats(order).print_stats(70)
    after = int(os.environ.get("MIOFIND_BENCH_AFTER_STEPS", "0"))
    if after:
        # the steps that follow the first, each synchronised: how soon the process reaches its steady step while
        # the work the finds left (deferred candidates, later configs, specialised builds) runs in the background
        # and swaps faster solutions in
        times = []
        for i in range(after):
            t0 = time.perf_counter()
            step(xs[0], ys[0])
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
        out["after_ms"] = times
    if backend == "miofind" and os.environ.get("MIOFIND_BENCH_DRAIN") == "1":
        # then the background work drained (its wall time) and ten steady steps on what it left
        from miofind import tiered
        t0 = time.perf_counter()
        tiered.wait(600)
        out["drain_s"] = time.perf_counter() - t0
        times = []
        for i in range(10):
            t0 = time.perf_counter()
            step(xs[0], ys[0])
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
        out["steady_ms"] = times
    if backend == "miofind":
        import miofind.torch as mt
        from miofind import compile as mc
        from miofind import tiered
        out["stats"] = mt.stats()
        out["sources"] = sources
        # what the step compiled here (NVRTC) and loaded, and the specialisations still compiling or measuring
        # in the background when it ended (a fresh process's first step: where its time goes besides finds)
        out["compile"] = dict(mc.stats)
        out["background_pending"] = tiered.pending()
        # the problems this step found: a fresh user DB holds records of those alone (which the DBs lacked)
        url = os.environ.get("MIOFIND_DB", "")
        if url.startswith("sqlite:///") and os.path.isfile(url[len("sqlite:///"):]):
            import sqlite3
            con = sqlite3.connect(url[len("sqlite:///"):])
            try:
                out["found_keys"] = sorted(k for (k,) in con.execute("select distinct problem_key from find_records"))
            except sqlite3.Error as e:
                out["found_keys_error"] = str(e)
            finally:
                con.close()
    print(json.dumps(out), flush=True)


def profile(model, train: bool, amp: bool, xs, ys, steps: int = 5, cprofile: bool = False) -> dict:
    """Where a side's step time goes: the GPU time of all its kernels per step (busy), the host time to
    queue one step (no synchronize), the kernels by GPU time, and for miofind the chosen solver of
    every prepared problem (by direction)."""
    torch = _torch()
    from torch.autograd import DeviceType

    step = stepper(model, train, amp)
    for i in range(3):
        step(xs[i % len(xs)], ys[i % len(ys)])
    torch.cuda.synchronize()
    host = []
    for i in range(steps):
        t0 = time.perf_counter()
        step(xs[i % len(xs)], ys[i % len(ys)])
        host.append((time.perf_counter() - t0) * 1e3)
        torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(steps):
            step(xs[i % len(xs)], ys[i % len(ys)])
        torch.cuda.synchronize()
    kern = [e for e in prof.key_averages() if e.device_type == DeviceType.CUDA]
    busy = sum(e.self_device_time_total for e in kern) / steps / 1e3
    top = sorted(kern, key=lambda e: -e.self_device_time_total)[:25]
    cpu = sorted((e for e in prof.key_averages() if e.device_type == DeviceType.CPU),
                 key=lambda e: -e.self_cpu_time_total)[:30]
    out = {"gpu_busy_ms": busy, "host_queue_ms": statistics.median(host),
           "kernels": [{"name": e.key[:100], "per_step": e.count / steps,
                        "ms_per_step": e.self_device_time_total / steps / 1e3} for e in top],
           # the host's side under the profiler: the ops and autograd nodes by their own CPU time per step
           "cpu_ops": [{"name": e.key[:100], "per_step": e.count / steps,
                        "self_cpu_ms_per_step": e.self_cpu_time_total / steps / 1e3} for e in cpu]}
    if cprofile:
        import cProfile
        import io
        import pstats

        pr = cProfile.Profile()
        pr.enable()
        for i in range(steps):
            step(xs[i % len(xs)], ys[i % len(ys)])
        torch.cuda.synchronize()
        pr.disable()
        buf = io.StringIO()
        pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(40)
        pstats.Stats(pr, stream=buf).sort_stats("cumulative").print_stats(40)
        out["cprofile"] = buf.getvalue()
    try:
        from miofind.torch import _policy
        chosen: dict[str, dict[str, int]] = {}
        for key, entry in _policy._table.items():
            d = chosen.setdefault(key[0], {})
            d[entry.solver_id] = d.get(entry.solver_id, 0) + 1
        out["chosen"] = chosen
    except ImportError:
        pass
    return out


def _cpp_plans() -> list[int]:
    """(forward plans with a C++ plan, all forward plans) of miofind.torch now."""
    from miofind.torch import functional as MF
    plans = list(MF._plans.values())
    return [sum(type(p.fast) is int for p in plans), len(plans)]


def _plan_report(model) -> dict:
    """miofind.torch's forward plans after the timed steps: by plan, its dimensions, solver, C++ plan (its id and
    (C++ launches, Python fallbacks), or None/False), whether it copies w or fuses an epilogue, the solvers of its
    learned backward; and how many of the model's modules are armed, the C++ extension's status, pending swaps."""
    from miofind.torch import _fast, _policy
    from miofind.torch import functional as MF
    mod = _fast._module
    plans = []
    for k, p in list(MF._plans.items()):
        eb, ew = p._backward_entries()
        plans.append({"nd": k[0], "problem": p.entry.problem_key, "solver": p.entry.solver_id,
                      "fast": p.fast if not isinstance(p.fast, int) or isinstance(p.fast, bool) else
                      [p.fast, list(mod.counts(p.fast))] if mod else p.fast,
                      "wcopy": p.wcopy, "fused": p.fused, "act": p.act, "pinned": p.pinned is not None,
                      "bwd": [e.solver_id if e is not None else None for e in (eb, ew)]})
    convs = [m for m in model.modules() if hasattr(m, "_miofind_args")]
    return {"plans": plans, "modules": len(convs), "armed": sum("_miofind_hot" in m.__dict__ for m in convs),
            "cpp": _fast.status(), "pending_swaps": len(_policy._swaps)}


def run_config(name: str, config: str, args) -> dict:
    torch = _torch()
    train, batch, amp = parse(config)
    xs, ys = inputs(name, batch, amp, max(args.steps, 4))
    row = {"model": name, "config": config}
    sides = {}
    for backend in ("cudnn", "miofind"):
        model = prepare(build(name), train, amp, backend, name)
        if backend == "miofind":
            # one step makes every problem's choice; its specialised builds compile in the background
            # (tiered find): time the steady state a long run reaches, with them in place
            stepper(model, train, amp)(xs[0], ys[0])
            row["specialise_wait_s"] = settle(900)
        sides[backend] = (model, stepper(model, train, amp))
    # the two sides alternate, ``--rounds`` times: host time on these machines drifts by tens of
    # percent within a minute, and the comparison must not depend on which side ran when
    if args.python_path:
        # miofind once more, its launches through ctypes and CuPy (MIOFIND_NATIVE=0): the native launcher's
        # effect, timed in the same rounds; the path switches before each miofind side's round
        model = prepare(build(name), train, amp, "miofind", name)
        sides["miofind-python"] = (model, stepper(model, train, amp))
    if args.cpp_ab:
        # miofind once more with the C++ hot path switched off (miofind.torch._fast.use): the same model and plans,
        # the Python path's PlannedConv; the switch flips before each miofind side's round
        sides["miofind-py"] = sides["miofind"]
    if args.trace_ab:
        # miofind once more without the traced recipes (GEMM, Winograd through Python: miofind.torch._fast.trace_recipes),
        # its problems chosen again (miofind.torch.clear, then warm-up steps) whenever the setting flips
        sides["miofind-notrace"] = sides["miofind"]
    if args.capture_ab:
        # miofind once more with each cuBLASLt matmul of a traced recipe replayed as a library call rather than as
        # its kernels read from a graph capture (miofind.cublas.capture_kernels), chosen again whenever it flips
        sides["miofind-ltcall"] = sides["miofind"]
    if args.cudnn_exec_ab:
        # miofind once more with its cuDNN plans not replayed natively (through the backend API, from miofind.torch's
        # C++ path) but called through Python and the frontend's binding (miofind.solvers.cudnn_base.backend_execute),
        # chosen again whenever it flips
        sides["miofind-frontend"] = sides["miofind"]
    if args.env_ab:
        # miofind once more with one environment setting (NAME=VALUE), its problems chosen again whenever it flips
        sides["miofind-env"] = sides["miofind"]
    if args.host_ab:
        # miofind once more choosing by measured GPU time alone (MIOFIND_TORCH_HOST_US=0): the same model, its
        # problems chosen again (miofind.torch.clear, then warm-up steps) whenever the setting flips
        sides["miofind-gpu"] = sides["miofind"]
    from launch_paths import set_path
    import miofind.torch as mt
    from miofind import cublas, tiered
    from miofind import invokers
    from miofind.solvers import cudnn_base
    from miofind.torch import _fast
    rounds = {b: [] for b in sides}
    host_us = os.environ.get("MIOFIND_TORCH_HOST_US")
    chosen_by = "host"
    row["loadavg_1min"] = []     # other work on the host's CPUs (background compiles, neighbours)

    # module switches flipped for one miofind side, the problems chosen again on each flip: (on, side, module, name)
    switches = [(args.trace_ab, "miofind-notrace", _fast, "trace_recipes"),
                (args.capture_ab, "miofind-ltcall", cublas, "capture_kernels"),
                (args.cudnn_exec_ab, "miofind-frontend", cudnn_base, "backend_execute")]

    def rechoose(step):
        """After a setting that changes miofind's choices flipped: every problem chosen again, its specialised builds
        (cached) switched in."""
        mt.clear()
        mt.reset_stats()
        cudnn_base.clear_cache()        # cuDNN plans' invokers are kept with their graphs and by solution
        invokers.clear()
        step(xs[0], ys[0])
        tiered.wait(300)
    path = "native"
    env_on = False
    env_before = os.environ.get(args.env_ab.split("=", 1)[0]) if args.env_ab else None
    # miofind's background work while the sides are timed (none is due after ``settle``): jobs not done at the
    # start and end, and solutions swapped in meanwhile
    row["background"] = {"jobs_at_start": tiered.pending(), "replaced_at_start": mt.stats()["replaced"]}
    for r in range(args.rounds):
        row["loadavg_1min"].append(os.getloadavg()[0])
        for backend, (model, step) in sides.items():
            torch.backends.cudnn.benchmark = backend == "cudnn"
            warm = args.warmup if r == 0 else 2
            want = "python" if backend == "miofind-python" else "native"
            if args.python_path and backend != "cudnn" and want != path:
                set_path(want)          # every problem is looked up and prepared again: warm-up steps
                path, warm = want, max(warm, 3)
            _fast.use = backend != "miofind-py"
            by = "gpu" if backend == "miofind-gpu" else "host"
            if args.host_ab and backend != "cudnn" and by != chosen_by:
                if by == "gpu":
                    os.environ["MIOFIND_TORCH_HOST_US"] = "0"
                elif host_us is None:
                    os.environ.pop("MIOFIND_TORCH_HOST_US", None)
                else:
                    os.environ["MIOFIND_TORCH_HOST_US"] = host_us
                chosen_by, warm = by, max(warm, 4)
                rechoose(step)
            if args.env_ab and backend != "cudnn" and (backend == "miofind-env") != env_on:
                env_name, env_value = args.env_ab.split("=", 1)
                env_on = backend == "miofind-env"
                if env_on:
                    os.environ[env_name] = env_value
                elif env_before is None:
                    os.environ.pop(env_name, None)
                else:
                    os.environ[env_name] = env_before
                warm = max(warm, 4)
                rechoose(step)
            for on, side, mod, attr in switches:
                if on and backend != "cudnn" and getattr(mod, attr) != (backend != side):
                    setattr(mod, attr, backend != side)
                    warm = max(warm, 4)
                    rechoose(step)
            rounds[backend].append(median_ms(step, xs, ys, warm, args.iters))
            if args.trace_ab and backend != "cudnn":
                row.setdefault(f"{backend}_cpp_plans", []).append(_cpp_plans())
            if (args.host_ab or args.env_ab) and backend != "cudnn":
                row.setdefault(f"{backend}_host_aware_picks", []).append(mt.stats()["host_aware"])
    if env_on:
        env_name = args.env_ab.split("=", 1)[0]
        if env_before is None:
            os.environ.pop(env_name, None)
        else:
            os.environ[env_name] = env_before
    row["background"].update(jobs_at_end=tiered.pending(), replaced_at_end=mt.stats()["replaced"])
    _fast.use = True
    for _, _, mod, attr in switches:
        setattr(mod, attr, True)
    if path != "native":
        set_path("native")
    for backend, (model, step) in sides.items():
        torch.backends.cudnn.benchmark = backend == "cudnn"
        row[f"{backend}_ms"] = statistics.median(rounds[backend])
        row[f"{backend}_rounds_ms"] = rounds[backend]
        if args.profile and backend not in ("miofind-python", "miofind-py", "miofind-ltcall", "miofind-frontend"):
            row[f"{backend}_profile"] = profile(model, train, amp, xs, ys, cprofile=True)
    if "miofind" in sides:
        row["miofind_plans"] = _plan_report(sides["miofind"][0])
    del sides, model, step
    torch.cuda.empty_cache()
    row["converted"] = _CONVERTED[0]
    # what miofind's side asked of the FindDB since it was set up (lookups, DB hits, finds run)
    row["miofind_stats"] = {k: v for k, v in mt.stats().items() if isinstance(v, (int, float))}
    row["speedup"] = row["cudnn_ms"] / row["miofind_ms"]
    # the median of each round's ratio (the sides alternate within a round): steadier where the host's speed drifts
    row["speedup_paired"] = statistics.median(c / m for c, m in zip(row["cudnn_rounds_ms"], row["miofind_rounds_ms"]))
    if "miofind-python_ms" in row:
        row["speedup_python_path"] = row["cudnn_ms"] / row["miofind-python_ms"]
    if "miofind-gpu_ms" in row:
        row["speedup_gpu_choice"] = row["cudnn_ms"] / row["miofind-gpu_ms"]
    if "miofind-notrace_ms" in row:
        row["speedup_no_trace"] = row["cudnn_ms"] / row["miofind-notrace_ms"]
    if "miofind-ltcall_ms" in row:
        row["speedup_lt_call"] = row["cudnn_ms"] / row["miofind-ltcall_ms"]
    if "miofind-env_ms" in row:
        row["speedup_env"] = row["cudnn_ms"] / row["miofind-env_ms"]
        row["env_ab"] = args.env_ab
    if "miofind-frontend_ms" in row:
        row["speedup_frontend_exec"] = row["cudnn_ms"] / row["miofind-frontend_ms"]
    if "miofind-py_ms" in row:
        row["speedup_cpp_off"] = row["cudnn_ms"] / row["miofind-py_ms"]
        row["cpp_status"] = _fast.status()
    if not args.skip_first:
        env = {k: v for k, v in os.environ.items() if k not in ("MIOFIND_SYSTEM_DB",)}
        with tempfile.TemporaryDirectory() as d:
            env["MIOFIND_DB"] = f"sqlite:///{os.path.join(d, 'finddb.sqlite')}"
            prof = (lambda tag: os.path.join(args.profile_first, f"{name}_{config}_{tag}.txt")) \
                if args.profile_first else (lambda tag: None)
            if args.profile_first:
                os.makedirs(args.profile_first, exist_ok=True)
            row["first_cudnn_s"] = first_iteration(name, config, "cudnn", env, prof("first_cudnn"))["first_s"]
            first = first_iteration(name, config, "miofind", env, prof("first_miofind"))
            second = first_iteration(name, config, "miofind", env, prof("second_miofind"))
        row["first_miofind_s"] = first["first_s"]
        row["first_miofind_stats"] = first["stats"]
        row["first_miofind_found"] = first.get("found_keys")
        row["first_over_steady"] = first["first_s"] * 1e3 / row["miofind_ms"]
        row["second_process_s"] = second["first_s"]
        row["second_process_finds_run"] = second["stats"]["finds_run"]
        row["second_process_found"] = [k for k, src in second.get("sources", ()) if src != "db"]
        for tag, got in (("first", first), ("second", second)):
            row[f"{tag}_process_compile"] = got.get("compile")
            row[f"{tag}_process_background_pending"] = got.get("background_pending")
    if train and args.steps:
        ref = trajectory(name, train, amp, "cudnn", xs, ys, args.steps)
        mine = trajectory(name, train, amp, "miofind", xs, ys, args.steps)
        row["vs_cudnn"] = differences(mine, ref)
        row["cudnn_vs_cudnn"] = differences(trajectory(name, train, amp, "cudnn", xs, ys, args.steps), ref)
        if amp:
            # cuDNN's AMP run repeats itself bit for bit, so it bounds nothing: each AMP side against the same steps
            # in FP32 (cuDNN, TF32 off), whose distance is what FP16 costs each side
            fp32 = trajectory(name, train, False, "cudnn", xs, ys, args.steps)
            row["vs_fp32"] = {"miofind": differences(mine, fp32), "cudnn": differences(ref, fp32)}
    return row


def markdown(rows, meta) -> str:
    out = [f"# miofind.torch against cuDNN (benchmark mode) on {meta['device']}", "",
           f"`{meta['command']}`  ", f"PyTorch {meta['torch']}, cuDNN {meta['cudnn']}, torchvision "
           f"{meta['torchvision']}; median of {meta['iters']} steps after {meta['warmup']} warm-ups; speedup = "
           "cuDNN time / miofind time (above 1: miofind faster). First iteration: a fresh process, miofind with "
           "the shipped DB beneath an empty user DB; second process: finds run on that user DB.", "",
           "| model | config | cuDNN ms | miofind ms | speedup | first iter cuDNN s | first iter miofind s "
           "| first / steady | finds in 2nd process | loss max rel diff (cuDNN vs itself) "
           "| grad max rel L2 (cuDNN vs itself) | GPU busy ms cuDNN / miofind | host queue ms cuDNN / miofind |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | --- |"]
    f = lambda v, p=3, unit="": "" if v is None else f"{v:.{p}f}{unit}"  # noqa: E731
    for r in rows:
        if "error" in r:
            out.append(f"| {r['model']} | {r['config']} | failed: {r['error'][:300]} |" + " |" * 11)
            continue
        d, s = r.get("vs_cudnn", {}), r.get("cudnn_vs_cudnn", {})
        diff = lambda k: f"{d[k]:.1e} ({s[k]:.1e})" if d else ""  # noqa: E731
        prof = lambda k: (f"{r['cudnn_profile'][k]:.2f} / {r['miofind_profile'][k]:.2f}"  # noqa: E731
                          if "miofind_profile" in r else "")
        out.append(f"| {r['model']} | {r['config']} | {f(r['cudnn_ms'], 2)} | {f(r['miofind_ms'], 2)} | "
                   f"{f(r['speedup'], 2, 'x')} | {f(r.get('first_cudnn_s'), 2)} | {f(r.get('first_miofind_s'), 2)} | "
                   f"{f(r.get('first_over_steady'), 1, 'x')} | {r.get('second_process_finds_run', '')} | "
                   f"{diff('loss_max_rel')} | {diff('grad_max_rel_l2')} | {prof('gpu_busy_ms')} | {prof('host_queue_ms')} |")
    rows = [r for r in rows if "error" not in r]
    py = [r for r in rows if "miofind-python_ms" in r]
    if py:
        out += ["", "The native launcher (`miofind._native`) against ctypes and CuPy (`MIOFIND_NATIVE=0`), both sides of "
                "miofind timed in the same alternating rounds as cuDNN:", "",
                "| model | config | cuDNN ms | miofind ms, native | miofind ms, ctypes/CuPy | speedup native "
                "| speedup ctypes/CuPy |", "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        for r in py:
            out.append(f"| {r['model']} | {r['config']} | {f(r['cudnn_ms'], 2)} | {f(r['miofind_ms'], 2)} | "
                       f"{f(r['miofind-python_ms'], 2)} | {f(r['speedup'], 2, 'x')} | "
                       f"{f(r['speedup_python_path'], 2, 'x')} |")
    out += _ab_table(rows, "miofind-py", "speedup_cpp_off",
                     "miofind.torch's C++ hot path (`MIOFIND_TORCH_CPP`) against its Python path (`_fast.use` off), both "
                     "timed in the same alternating rounds as cuDNN, the same model and plans:",
                     ("C++ path", "Python path"), ("C++", "Python"), ("C++", "Python"))
    out += _ab_table(rows, "miofind-gpu", "speedup_gpu_choice",
                     "miofind.torch's host-aware choice (`MIOFIND_TORCH_HOST_US`, default 30 us) against the choice by "
                     "measured GPU time alone (`MIOFIND_TORCH_HOST_US=0`), the same model, its problems chosen again "
                     "(`miofind.torch.clear`) whenever the setting flips, timed in the same alternating rounds as cuDNN:",
                     ("host-aware", "GPU time alone"), ("host-aware", "GPU time alone"), ("host-aware", "GPU alone"),
                     ("host-aware picks per re-choice",
                      lambda r: ",".join(str(v) for v in r.get("miofind_host_aware_picks", []))))
    out += _ab_table(rows, "miofind-notrace", "speedup_no_trace",
                     "miofind.torch with the traced recipes (GEMM and Winograd replayed by the C++ path, "
                     "`miofind.torch._fast.trace_recipes`) against without them (through Python), the same model, its "
                     "problems chosen again (`miofind.torch.clear`) whenever the setting flips, timed in the same "
                     "alternating rounds as cuDNN:",
                     ("traced", "not traced"), ("traced", "not traced"), ("traced", "not traced"),
                     ("forward plans in C++ (traced / not)",
                      lambda r: " / ".join("{}/{}".format(*r[f"{b}_cpp_plans"][-1]) for b in ("miofind", "miofind-notrace"))))
    out += _ab_table(rows, "miofind-ltcall", "speedup_lt_call",
                     "miofind.torch with each cuBLASLt matmul of a traced recipe replayed as the kernels read from a "
                     "graph capture of it (`miofind.capture`) against as a `cublasLtMatmul` call "
                     "(`miofind.cublas.capture_kernels` off), the same model, its problems chosen again whenever the "
                     "setting flips, timed in the same alternating rounds as cuDNN:",
                     ("captured kernels", "cuBLASLt calls"), ("kernels", "calls"), ("kernels", "calls"))
    out += _ab_table(rows, "miofind-frontend", "speedup_frontend_exec",
                     "miofind.torch with its cuDNN plans replayed by its C++ path through cuDNN's backend API "
                     "(`MIOFIND_CUDNN_EXECUTE=backend`) against called through Python and the frontend's binding "
                     "(`direct`), the "
                     "same model, its problems chosen again whenever the setting flips, timed in the same alternating "
                     "rounds as cuDNN:",
                     ("backend API", "frontend"), ("backend", "frontend"), ("backend", "frontend"))
    env_ab = next((r["env_ab"] for r in rows if "env_ab" in r), "")
    out += _ab_table(rows, "miofind-env", "speedup_env",
                     f"miofind.torch as configured against with `{env_ab}`, the same model, its problems chosen again "
                     "(`miofind.torch.clear`) whenever the setting flips, timed in the same alternating rounds as cuDNN:",
                     ("as configured", env_ab), ("default", "setting"), ("default", "setting"),
                     ("host-aware picks per re-choice (default / setting)",
                      lambda r: " / ".join(",".join(str(v) for v in r.get(f"{b}_host_aware_picks", []))
                                           for b in ("miofind", "miofind-env"))))
    return "\n".join(out) + "\n"


def _ab_table(rows, other: str, speed_key: str, intro: str, ms_labels, speed_labels, round_labels,
              extra=None) -> list[str]:
    """The markdown table of an in-process A/B (``--cpp-ab``, ``--host-ab``, ``--trace-ab``): each row with
    ``{other}_ms`` (miofind's B side), both sides' times and speedups, ``extra`` (header, row -> cell) if given,
    and every round of cuDNN, A and B; no lines where no row has it."""
    ab = [r for r in rows if f"{other}_ms" in r]
    if not ab:
        return []
    f = lambda v, p=3, unit="": "" if v is None else f"{v:.{p}f}{unit}"  # noqa: E731
    head = (f"| model | config | cuDNN ms | miofind ms, {ms_labels[0]} | miofind ms, {ms_labels[1]} | speedup "
            f"{speed_labels[0]} | speedup {speed_labels[1]} |" + (f" {extra[0]} |" if extra else "")
            + f" rounds cuDNN / {round_labels[0]} / {round_labels[1]} |")
    out = ["", intro, "", head, "| --- | --- | ---: | ---: | ---: | ---: | ---: |" + (" --- |" if extra else "")
           + " --- |"]
    for r in ab:
        rr = " / ".join(",".join(f"{v:.2f}" for v in r[f"{b}_rounds_ms"]) for b in ("cudnn", "miofind", other))
        out.append(f"| {r['model']} | {r['config']} | {f(r['cudnn_ms'], 2)} | {f(r['miofind_ms'], 2)} | "
                   f"{f(r[f'{other}_ms'], 2)} | {f(r['speedup'], 2, 'x')} | {f(r[speed_key], 2, 'x')} |"
                   + (f" {extra[1](r)} |" if extra else "") + f" {rr} |")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="results folder (bench_models.json and bench_models.md)")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3, help="alternating timing rounds per side (median of rounds)")
    ap.add_argument("--steps", type=int, default=20, help="training steps compared against cuDNN (0: none)")
    ap.add_argument("--skip-first", action="store_true", help="no fresh-process first-iteration runs")
    ap.add_argument("--cpp-ab", action="store_true",
                    help="also time miofind with miofind.torch's C++ hot path off, in the same rounds")
    ap.add_argument("--host-ab", action="store_true",
                    help="also time miofind choosing by measured GPU time alone (MIOFIND_TORCH_HOST_US=0) in the same "
                         "rounds: the host-aware choice's effect")
    ap.add_argument("--trace-ab", action="store_true",
                    help="also time miofind without the traced recipes (GEMM and Winograd through Python, "
                         "miofind.torch._fast.trace_recipes off) in the same rounds: their effect")
    ap.add_argument("--capture-ab", action="store_true",
                    help="also time miofind with each traced cuBLASLt matmul replayed as a library call, not as its "
                         "captured kernels (miofind.cublas.capture_kernels off), in the same rounds: their effect")
    ap.add_argument("--python-path", action="store_true",
                    help="also time miofind with its launches through ctypes and CuPy (MIOFIND_NATIVE=0), in the "
                         "same alternating rounds: the native launcher's effect")
    ap.add_argument("--profile-first", metavar="DIR",
                    help="cProfile each fresh process's first step into DIR (MODEL_CONFIG_{first,second}_miofind.txt, "
                         "..._first_cudnn.txt); the times it reports then include the profiler's cost")
    ap.add_argument("--env-ab", metavar="NAME=VALUE",
                    help="also time miofind with one environment setting (e.g. MIOFIND_TORCH_CUDNN_HOST_US=30) in the "
                         "same rounds, its problems chosen again whenever it flips (side miofind-env)")
    ap.add_argument("--cudnn-exec-ab", action="store_true",
                    help="also time miofind with its cuDNN plans called through Python and the frontend's binding "
                         "(MIOFIND_CUDNN_EXECUTE=direct), not replayed natively through the backend API, in the same "
                         "rounds: that replay's effect")
    ap.add_argument("--profile", action="store_true",
                    help="also profile each side (GPU busy time, host queue time, top kernels, chosen solvers)")
    ap.add_argument("--fuse", action="store_true",
                    help="miofind's side also runs miofind.torch.fuse (each conv + ReLU/GELU of a Sequential fused)")
    ap.add_argument("--first", nargs=3, metavar=("MODEL", "CONFIG", "BACKEND"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.fuse:
        os.environ["MIOFIND_BENCH_FUSE"] = "1"
    if args.first:
        _first_main(*args.first)
        return 0
    if not args.out:
        ap.error("--out is required")
    models = [m for m in args.models.split(",") if m]
    configs = [c for c in args.configs.split(",") if c]
    known = MODELS + OTHER_MODELS + VIDEO_MODELS + AUDIO_MODELS
    for m in models:
        if m not in known:
            ap.error(f"--models: {m!r} is not one of {', '.join(known)}")
    for c in configs:
        if c not in CONFIGS + TF32_CONFIGS and not re.fullmatch(r"(train|infer)[1-9][0-9]*-(fp32|amp)", c):
            ap.error(f"--configs: {c!r} is not one of {', '.join(CONFIGS + TF32_CONFIGS)} "
                     "(or trainN-fp32/amp, inferN-fp32/amp for another batch size N)")
    torch = _torch()
    import torchvision

    os.makedirs(args.out, exist_ok=True)
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version(), "torchvision": torchvision.__version__,
            "iters": args.iters, "warmup": args.warmup, "steps": args.steps,
            "command": "python bench/bench_models.py " + " ".join(sys.argv[1:] if argv is None else argv)}
    rows = []
    for m in models:
        for c in configs:
            try:
                row = run_config(m, c, args)
            except Exception as e:     # another model's configurations still run; the failure is a result
                import traceback
                row = {"model": m, "config": c, "error": f"{type(e).__name__}: {e}"[:4000],
                       "traceback": traceback.format_exc()[-6000:]}
                torch.cuda.empty_cache()
            rows.append(row)
            print(json.dumps(row), flush=True)
            with open(os.path.join(args.out, "bench_models.json"), "w") as f:
                json.dump({"meta": meta, "rows": rows}, f, indent=1)
            with open(os.path.join(args.out, "bench_models.md"), "w") as f:
                f.write(markdown(rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
