"""The workload scripts/sanitize runs under compute-sanitizer: every registered solver (so every
family, F/B/W) once on a tiny problem, through ``Solution.prepare()`` on a non-blocking stream,
each output checked against the float64 reference.

Inputs and the NaN-poisoned output are copied from the host on the side stream, so the only kernels
launched are the solvers' own (and the libraries' they call). CuPy's memory pool is off unless
``--pool``: every buffer is its own cudaMalloc, so memcheck sees each buffer's exact bounds.

    python bench/sanitize_driver.py [--solvers ID,ID,...] [--families direct,fft,...] [--pool] [--every]
                                    [--problems NAME,NAME,...]
                                    [--config JSON]

Prints one line per solution and a summary; exits 1 when an output mismatches or a solution fails,
2 when a selected solver applies to none of the tiny problems.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

# the tiny problems, tried in this order for each solver and direction (the first it claims)
TINY = {
    "dense": dict(n=1, c=8, k=8, in_size=(8, 8), filter_size=3, pads=1),
    "1x1": dict(n=1, c=8, k=8, in_size=(6, 6), filter_size=1),
    "grouped": dict(n=1, c=8, k=8, in_size=(8, 8), filter_size=3, pads=1, groups=2),
    "depthwise": dict(n=1, c=8, k=8, in_size=(8, 8), filter_size=3, pads=1, groups=8),
    # FP16 channels-last (the Hopper family): strided, so that backward data runs its stride phases
    "nhwc_s2": dict(n=1, c=16, k=24, in_size=(9, 9), filter_size=3, pads=1, strides=2, layout="NHWC", dtype="FP16"),
    "nhwc_1x1s2": dict(n=2, c=16, k=8, in_size=(7, 6), filter_size=1, strides=2, layout="NHWC", dtype="FP16"),
    # the Hopper forward's persistent copy-engine default (C % 64 == 0): 256 tiles of 64 x 128 over 132 blocks, so
    # that each block walks two tiles through its stages and its output buffer (with --every)
    "nhwc_tma_walk": dict(n=4, c=64, k=80, in_size=(63, 65), filter_size=3, pads=1, layout="NHWC", dtype="FP16"),
    # C % 64 != 0: the forward's default copies padded K tiles (160 channels in three tiles a tap, the last half past
    # C), walking tiles as nhwc_tma_walk; and a 1x1 layer whose x the copy engine reads as a dense matrix
    "nhwc_pad_walk": dict(n=4, c=160, k=80, in_size=(63, 65), filter_size=3, pads=1, layout="NHWC", dtype="FP16"),
    "nhwc_pad_1x1": dict(n=4, c=96, k=136, in_size=(31, 33), filter_size=1, layout="NHWC", dtype="FP16"),
    # 48 channels: with 32-deep K tiles (TMA = 2, given by --config) each tap's second tile holds 16 live channels;
    # 256 tiles of 128 rows, walked as nhwc_tma_walk
    "nhwc_c48_walk": dict(n=8, c=48, k=40, in_size=(63, 65), filter_size=3, pads=1, layout="NHWC", dtype="FP16"),
    # 192-wide tiles (BN = 192, given by --config): 80 channels (padded taps), 256 tiles of 128 x 192 walked as
    # nhwc_tma_walk; and a split over 9 K tiles of 64 channels (two M tiles)
    "nhwc_bn192_walk": dict(n=8, c=80, k=192, in_size=(63, 65), filter_size=3, pads=1, layout="NHWC", dtype="FP16"),
    "nhwc_bn192_split": dict(n=2, c=64, k=192, in_size=(9, 9), filter_size=3, pads=1, layout="NHWC", dtype="FP16"),
    # backward data's 192-wide tiles (dx's 192 channels) over four stride phases of 48 of dy's channels (padded taps)
    "nhwc_bn192_b_s2": dict(n=2, c=192, k=48, in_size=(17, 16), filter_size=3, pads=1, strides=2, layout="NHWC",
                            dtype="FP16"),
    # the Hopper backward data's persistent copy-engine default (K % 64 == 0) over its four stride phases: each about
    # 165 tiles of 128 x 128 over at most 132 blocks, so that blocks walk tiles of each phase (with --every)
    "nhwc_tma_b_s2": dict(n=20, c=80, k=64, in_size=(63, 65), filter_size=3, pads=1, strides=2, layout="NHWC",
                          dtype="FP16"),
    # the swapped-operand backward data at stride 1 (dy's channels % 64 == 0): its filter rewrite, then 256 tiles of
    # 128 pixels x 64 channels over 132 blocks, each block's two warpgroups taking tiles in turn (the swapped forward
    # takes nhwc_tma_walk the same way: 128 pixel tiles x 2 channel tiles)
    "nhwc_swap_b_walk": dict(n=8, c=72, k=64, in_size=(63, 65), filter_size=3, pads=1, layout="NHWC", dtype="FP16"),
    # few input channels (the small-C family): 2 K slices, edge tiles, more tiles than persistent blocks, and an odd
    # element count (the forward's last 4-byte row copy ends at x's last element)
    "nhwc_c3_walk": dict(n=13, c=3, k=72, in_size=(131, 129), filter_size=7, pads=3, strides=2, layout="NHWC",
                         dtype="FP16"),
    # a fused forward (bias + GELU in the epilogue): the solvers with a fused epilogue
    "nhwc_fused": dict(n=2, c=16, k=24, in_size=(9, 7), filter_size=3, pads=1, layout="NHWC", dtype="FP16", bias=1,
                       activation="gelu"),
    # FP32 channels-last with TF32 math (the Hopper forward's TF32 build): cp.async loads (C % 32 != 0), the persistent
    # copy engine walking tiles (as nhwc_tma_walk), and a fused epilogue split over the reduction (bias + GELU in the
    # reduce kernel)
    "nhwc_tf32_s2": dict(n=1, c=12, k=20, in_size=(9, 9), filter_size=3, pads=1, strides=2, layout="NHWC",
                         dtype="FP32", math="tf32"),
    "nhwc_tf32_walk": dict(n=4, c=64, k=80, in_size=(63, 65), filter_size=3, pads=1, layout="NHWC", dtype="FP32",
                           math="tf32"),
    "nhwc_tf32_fused": dict(n=1, c=256, k=64, in_size=(7, 7), filter_size=3, pads=1, layout="NHWC", dtype="FP32",
                            math="tf32", bias=1, activation="gelu"),
    # the rounding TF32 backward data at stride 1 (dy's channels % 32 == 0): the rounded filter rewrite, then blocks
    # walking tiles of 128 pixels in turn (the rounding forward takes nhwc_tf32_walk the same way)
    "nhwc_tf32_b_walk": dict(n=8, c=72, k=64, in_size=(63, 65), filter_size=3, pads=1, layout="NHWC", dtype="FP32",
                             math="tf32"),
    # channels-first FP16 and TF32 (the Hopper family's NCHW wrappers: the copies into the workspace, the NHWC kernels
    # on them, the output copied back), strided so that backward data runs its stride phases; stride 1 for the TF32
    "nchw_s2": dict(n=2, c=16, k=24, in_size=(9, 9), filter_size=3, pads=1, strides=2, layout="NCHW", dtype="FP16"),
    "nchw_tf32": dict(n=2, c=64, k=64, in_size=(15, 13), filter_size=3, pads=1, layout="NCHW", dtype="FP32",
                      math="tf32"),
    # channels-first FP16 narrow (the swapped-operand wrappers: forward C % 64 == 0, backward data dy's K % 64 == 0)
    "nchw_swap": dict(n=2, c=64, k=64, in_size=(11, 9), filter_size=3, pads=1, layout="NCHW", dtype="FP16"),
}
NP_DTYPES = {"FP32": np.float32, "FP16": np.float16}


def cases(solver_ids=None, families=None, every=False, names=None):
    """[(solver, problem name, problem)] for the selected solvers (the first tiny problem each claims per
    direction, or with ``every`` all it claims; ``names``: of those TINY problems only), and the ids that fit none."""
    from miofind.problem import ProblemDescription as P
    from miofind.registry import solvers
    from miofind.solvers.cudnn_base import frontend_status

    out, unfit = [], []
    for s in solvers():
        if (solver_ids and s.id not in solver_ids) or (families and s.family not in families):
            continue
        if s.family == "cudnn" and not frontend_status()[0]:
            print(f"skip {s.id}: {frontend_status()[1]}")
            continue
        for d in sorted(s.directions, key="FBW".index):
            mine = []
            for name, kw in TINY.items():
                if names and name not in names:
                    continue
                try:
                    p = P.make(d, **kw)
                except ValueError:          # a fused problem in another direction than F
                    continue
                if s.applicability(p):
                    mine.append((s, name, p))
            if not mine:
                unfit.append(f"{s.id} ({d})")
            out += mine if every else mine[:1]
    return out, unfit


def run_one(solver, p, stream, seed: int, config=None) -> float:
    """The relative L2 error of one run of ``solver`` on ``p`` on ``stream`` (inf if non-finite), at ``config``
    (the default config when None)."""
    import cupy

    from miofind.api import Solution
    from miofind.reference import conv_reference

    rng = np.random.default_rng(seed)
    sa, sb, so = p.io_shapes()
    a_h = rng.uniform(-1, 1, sa).astype(NP_DTYPES[p.dtype])
    b_h = rng.uniform(-1, 1, sb).astype(NP_DTYPES[p.dtype])
    bias_h = rng.uniform(-4, 4, (p.k,)).astype(NP_DTYPES[p.dtype]) if p.bias else None
    cfg = config if config is not None else solver.default_config(p.as_conv())
    sol = Solution(solver.id, solver.algorithm, 0.0, solver.workspace_bytes(p, config), cfg, False, p)
    pr = sol.prepare()
    with stream:                        # every buffer made and filled on the launch stream
        a, b = cupy.asarray(a_h), cupy.asarray(b_h)
        out = cupy.asarray(np.full(so, np.nan, dtype=NP_DTYPES[p.dtype]))
        bias = None if bias_h is None else cupy.asarray(bias_h)
        pr(a, b, out, stream=stream, bias=bias)
        got = cupy.asnumpy(out, stream=stream)
    stream.synchronize()
    ref = conv_reference(p, a_h.astype(np.float64), b_h.astype(np.float64),
                         None if bias_h is None else bias_h.astype(np.float64))
    if not np.isfinite(got).all():
        return float("inf")
    return float(np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solvers", default="", help="comma-separated solver ids (default: all)")
    ap.add_argument("--families", default="", help="comma-separated families (default: all)")
    ap.add_argument("--pool", action="store_true", help="keep CuPy's memory pool (default: off, for memcheck)")
    ap.add_argument("--every", action="store_true", help="every tiny problem a solver claims (default: the first)")
    ap.add_argument("--config", default="", help="a JSON config each solver runs where it is valid (else its default)")
    ap.add_argument("--problems", default="", help="comma-separated names of the tiny problems (default: all)")
    args = ap.parse_args(argv)
    import json
    forced = json.loads(args.config) if args.config else None

    import cupy

    from miofind.device import NoGPUError, current_device
    from miofind.registry import solvers
    from miofind.verify import tolerance

    try:
        current_device()
    except NoGPUError as e:
        print(f"sanitize driver: {e}", file=sys.stderr)
        return 2

    known = {s.id for s in solvers()}
    fams = {s.family for s in solvers()}
    ids = {x for x in args.solvers.split(",") if x}
    want = {x for x in args.families.split(",") if x}
    if ids - known:
        ap.error(f"--solvers: unknown solver id(s) {', '.join(sorted(ids - known))}")
    if want - fams:
        ap.error(f"--families: unknown family {', '.join(sorted(want - fams))}; known: {', '.join(sorted(fams))}")
    if not args.pool:
        cupy.cuda.set_allocator(None)

    todo, unfit = cases(ids, want, args.every, set(filter(None, args.problems.split(","))))
    stream = cupy.cuda.Stream(non_blocking=True)
    bad, t0 = [], time.perf_counter()
    for i, (s, name, p) in enumerate(todo):
        t = time.perf_counter()
        cfg = forced if forced is not None and s.tunable and s.is_valid_config(p.as_conv(), forced) else None
        name = name + (" (--config)" if cfg else "")
        try:
            err = run_one(s, p, stream, i, cfg)
        except Exception as e:
            bad.append(s.id)
            print(f"FAIL {s.id:<26} {p.direction} {name:<9} {type(e).__name__}: {e}", flush=True)
            continue
        tol = tolerance(p.dtype, s.family, p.direction, p.math)
        ok = err <= tol
        if not ok:
            bad.append(s.id)
        print(f"{'ok  ' if ok else 'FAIL'} {s.id:<26} {p.direction} {name:<9} rel err {err:.2e} (tol {tol:.0e}) "
              f"{time.perf_counter() - t:6.2f} s", flush=True)
    cupy.cuda.Device().synchronize()
    fam_dirs = sorted({f"{s.family}:{p.direction}" for s, _, p in todo})
    print(f"sanitize driver: {len(todo) - len(bad)}/{len(todo)} solutions ok on a non-blocking stream in "
          f"{time.perf_counter() - t0:.1f} s ({', '.join(fam_dirs)})"
          + (f"; failed: {', '.join(bad)}" if bad else "") + (f"; no tiny problem for: {', '.join(unfit)}" if unfit else ""))
    return 1 if bad else 2 if unfit else 0


if __name__ == "__main__":
    sys.exit(main())
