"""``miofind warmup``: compile the generic builds and the float64 reference into the binary cache.

Run once at install time (needs NVRTC, no GPU), so that a find of a shape never seen before compiles
nothing before it measures: the generic builds (``miofind.generic``) of every solver that has one,
for the configs and plan variants the model presets' problems reach, the shape-free kernels those
solutions also launch, and the naive solvers' builds (the float64 verification reference among
them). The builds go into the binary cache, keyed by source text, options, architecture and NVRTC
version, so they survive a package upgrade exactly when the kernel sources are unchanged.

Where a GPU is usable, it also runs the find's own GPU steps once on a tiny problem per data type,
layout and direction (``warm_device``): random inputs, the float64 reference, poisoning and the
verification's reductions are CuPy kernels that CuPy compiles on first use into its own cache
(``CUPY_CACHE_DIR``), about half a second of a fresh install's first find otherwise.

Why a command rather than cubins inside the wheel: a cubin is tied to the NVRTC/driver line and
the architecture (the wheel would carry sm_80, sm_90 and sm_100 builds of every variant for both
CUDA 12 and 13: hundreds of MB), while compiling them takes a few minutes once per machine.
"""

from __future__ import annotations

import subprocess
import time

from . import generic, lt_bridge
from .models import MODELS, model_problems
from .registry import solvers as all_solvers
from .solver import KernelInfo
from .harness import hold_kernel_info
from .verify import error_kernel_info

DEFAULT_ARCHS = ("sm_80", "sm_90", "sm_100")
# written into the kernel cache when a warmup ended without errors (``write_stamp``): a copy of a cache that lacks it
# (a warmup cut short, or one that failed) is not what a fresh install that ran `miofind warmup` has
STAMP_FILE = "warmup.json"


def supported_archs(archs) -> tuple[str, ...]:
    """``archs`` that this NVRTC can target (sm_100 needs CUDA 12.8 or newer); ValueError naming an
    unknown one."""
    from cupy_backends.cuda.libs import nvrtc

    have = {f"sm_{a}" for a in nvrtc.getSupportedArchs()}
    out = []
    for a in archs:
        if not a.startswith("sm_") or not a[3:].isdigit():
            raise ValueError(f"--arch={a!r}: expected sm_<number>, e.g. sm_90")
        if a in have:
            out.append(a)
    return tuple(out)


def warmup_kernels(models=MODELS, batches=(32, 1), dtypes=("FP32", "FP16", "BF16"), layouts=("NCHW", "NHWC")) \
        -> list[KernelInfo]:
    """The distinct kernels to pre-build: generic builds (and the shape-free kernels of generic
    solutions) for the presets' problems, the naive solvers' builds with their float64 variant,
    verification's error kernel per storage type, the timing hold, and the bridge GEMM's module."""
    seen: dict[tuple, KernelInfo] = {}
    sols = [s for s in all_solvers() if getattr(s, "kernel_files", ())]
    for model in models:
        for batch in batches:
            problems = model_problems(model, batch=batch, dtypes=dtypes, layouts=layouts)
            if "FP32" in dtypes:    # and as PyTorch runs FP32 convolutions by default: TF32 math
                problems += model_problems(model, batch=batch, dtypes=("FP32",), layouts=layouts, tf32=True)
            for p in problems:
                for s in sols:
                    if not s.applicability(p):
                        continue
                    variants = []
                    if s.is_reference:
                        variants = [s.get_solution(p), s.get_solution(p, reference=True)]
                    elif any(f in generic.RUNTIME for f in s.kernel_files):
                        try:
                            variants = [s.get_solution(p, generic.generic_config(s, p, None))]
                        except ValueError:
                            continue
                    for sol in variants:
                        gks = generic.generic_kernels(sol) if not s.is_reference else [None] * len(sol.kernels)
                        if gks is None:
                            continue
                        for g, k in zip(gks, sol.kernels):
                            kk = g.kinfo if g is not None else k
                            seen.setdefault((kk.source, kk.name, kk.compile_options()), kk)
    # the shape-free kernels: verification's error kernel per storage type (verify.errors_of), the timing hold of a
    # find's timed runs (MIOFIND_FIND_TIMING=device), the bridge GEMM's module (miofind.lt_bridge)
    for kk in (*(error_kernel_info(dt) for dt in ("FP32", "FP16", "BF16", "FP64")), hold_kernel_info(),
               lt_bridge.kernel_info()):
        seen.setdefault((kk.source, kk.name, kk.compile_options()), kk)
    return list(seen.values())


def warmup(archs=DEFAULT_ARCHS, jobs: int | None = None, kernels: list[KernelInfo] | None = None) -> dict:
    """Compile ``kernels`` (default ``warmup_kernels()``) for every supported arch of ``archs``
    into the binary cache in a process pool; a summary dict (kernels, per-arch compiled counts,
    errors, seconds)."""
    from .tuning.precompile import precompile

    t0 = time.perf_counter()
    kernels = warmup_kernels() if kernels is None else kernels
    archs_ok = supported_archs(archs)
    out = {"kernels": len(kernels), "archs": {}, "skipped_archs": [a for a in archs if a not in archs_ok],
           "errors": {}}
    for a in archs_ok:
        n, errors = precompile(kernels, a, jobs)
        out["archs"][a] = n
        out["errors"].update({f"{a} {k}": v for k, v in errors.items()})
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def write_stamp(summary: dict) -> None:
    """Record in the kernel cache (``STAMP_FILE``) that a warmup of ``summary``'s architectures ended without
    errors: the package version, the architectures compiled, the kernel builds, whether it ran a find's steps on a
    GPU (CuPy's cache then holds their kernels) and when; best effort."""
    from . import __version__
    from .compile import write_cache_json

    dev = summary.get("device")
    write_cache_json(STAMP_FILE, {"v": 1, "miofind": __version__, "archs": sorted(summary.get("archs", {})),
                                  "kernels": summary.get("kernels"), "device": dev is not None and "skipped" not in dev,
                                  "finished": time.time()})


def read_stamp(cache_dir) -> dict | None:
    """The warmup stamp of the kernel cache at ``cache_dir`` (``write_stamp``), None where there is none (no warmup
    ended there without errors) or it cannot be read."""
    from .compile import read_cache_json

    return read_cache_json(STAMP_FILE, cache_dir)


def warm_torch_cpp() -> dict:
    """Build miofind.torch's C++ hot path (``miofind.torch._fast``) against the installed PyTorch into the kernel
    cache: ``{"built": path, "seconds": s}``, or ``{"skipped": reason}`` (no PyTorch, ``MIOFIND_TORCH_CPP=off``,
    no C++ compiler), or ``{"failed": reason}`` (miofind.torch then stays on its Python path)."""
    import importlib.util

    from . import env
    if importlib.util.find_spec("torch") is None:
        return {"skipped": "PyTorch is not installed"}
    if env.torch_cpp() == "off":
        return {"skipped": "MIOFIND_TORCH_CPP=off"}
    from .torch import _fast
    if _fast.compiler() is None:
        return {"skipped": "no C++ compiler (set CXX, or install g++)"}
    t0 = time.perf_counter()
    try:
        path = _fast.build()
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        return {"failed": str(e)}
    return {"built": str(path), "seconds": round(time.perf_counter() - t0, 1)}


def warm_device(dtypes=("FP32", "FP16", "BF16"), layouts=("NCHW", "NHWC")) -> dict:
    """On a usable GPU: verify and time the naive solver of a tiny problem per data type, layout and
    direction through ``harness.Harness``, as a find does, and compute the GEMM reference of small
    problems of each structure (``_warm_gemm_reference``), so that the CuPy kernels of a find's own
    steps are in CuPy's kernel cache. ``{"problems": n, "seconds": s}``, or ``{"skipped": reason}``
    when no GPU is usable."""
    from .device import NoGPUError, current_device

    try:
        current_device()
    except NoGPUError as e:
        return {"skipped": str(e).splitlines()[0]}
    from .harness import Harness, reference_invoker_for
    from .invokers import build_invoker
    from .problem import ProblemDescription
    from .registry import reference_solver

    t0 = time.perf_counter()
    n = 0
    for dt in dtypes:
        for layout in layouts:
            for d in "FBW":
                p = ProblemDescription.make(d, n=2, c=8, k=8, in_size=(9, 9), filter_size=3, pads=1, layout=layout,
                                            dtype=dt)
                s = reference_solver(d)
                if not s.applicability(p):
                    continue
                sol = s.get_solution(p, None)
                h = Harness(p, verify=True, seed=0, reference_invoker=reference_invoker_for(p))
                h.measure(build_invoker(p, sol), h.workspace(sol.workspace_bytes), s.family, 1, 2)
                n += 1
    n += _warm_gemm_reference(layouts)
    return {"problems": n, "seconds": round(time.perf_counter() - t0, 1)}


# the GEMM reference's structural variants (miofind.harness.Reference): 1x1 and 3x3 at strides 1 and 2,
# asymmetric filters, groups, each F/B/W per layout, one in batch chunks; their CuPy kernels (padding,
# strided copies and adds, the layout moves) depend on these shapes' ranks and strides, not their sizes
_GEMM_REFERENCE_SHAPES = (
    dict(n=2, c=16, k=24, in_size=(6, 7), filter_size=1),
    dict(n=2, c=16, k=24, in_size=(9, 8), filter_size=1, strides=2),
    dict(n=2, c=16, k=24, in_size=(6, 7), filter_size=3, pads=1),
    dict(n=3, c=16, k=24, in_size=(9, 10), filter_size=3, pads=1, strides=2),
    dict(n=2, c=16, k=16, in_size=(7, 9), filter_size=(1, 7), pads=(0, 3)),
    dict(n=2, c=32, k=32, in_size=(6, 6), filter_size=3, pads=1, groups=2),
)


def _warm_gemm_reference(layouts) -> int:
    """The GEMM reference of ``_GEMM_REFERENCE_SHAPES`` per layout and direction, whole and in batch chunks,
    so that its CuPy kernels are in CuPy's cache (a find compiles none of them: they cost 100-300 ms each
    at their first use); the number of references computed."""
    import cupy

    from .harness import reference_invoker_for_kind
    from .problem import ProblemDescription
    from .reference import conv_reference, reference_bytes_per_sample

    rng = cupy.random.default_rng(0)
    n = 0
    for layout in layouts:
        for kw in _GEMM_REFERENCE_SHAPES:
            for d in "FBW":
                p = ProblemDescription.make(d, layout=layout, dtype="FP32", **kw)
                a_shape, b_shape, _ = p.io_shapes()
                a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
                reference_invoker_for_kind(p, "gemm").output(p, a, b)
                conv_reference(p, a, b, max_bytes=reference_bytes_per_sample(p))
                n += 1
    cupy.cuda.get_current_stream().synchronize()
    return n
