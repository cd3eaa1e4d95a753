"""The Hopper forward split over a thread-block cluster (ConvImplicitGemmHopperFwdClusterSplit: the forward kernel with
CSPLIT = 1, partial tiles summed through distributed shared memory). Claims, configs and builds on the CPU; on the GPU
against the float64 reference (copy-engine and cp.async loads, 2 to 8 chunks, tails of M and N, 64- to 256-wide tiles),
and output for output equal to the forward's own split of the same tile (the same sums in the same order)."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_helpers import check_configs
from nvrtc_check import assert_cubins, nvrtc_or_skip
from shapes import RESNET50_SMALL_N
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.solvers import implicit_gemm_hopper_fwd_cluster_split as cs

CSPLIT, FWD = get_solver("ConvImplicitGemmHopperFwdClusterSplit"), get_solver("ConvImplicitGemmHopperFwd")

# C a multiple of 64 (copy engine) and 96 (cp.async), an M tail (2 x 7 x 7 = 98 pixels), an N tail (192 outputs in
# 128-wide tiles), a 1x1 of many K tiles
CASES = {
    "c256_k128_3x3": dict(n=2, c=256, k=128, in_size=(14, 14), filter_size=3, pads=1),
    "c96_k64_3x3": dict(n=2, c=96, k=64, in_size=(9, 9), filter_size=3, pads=1),
    "c512_k192_3x3_tail": dict(n=2, c=512, k=192, in_size=(7, 7), filter_size=3, pads=1),
    "c1024_k256_1x1": dict(n=3, c=1024, k=256, in_size=(7, 7), filter_size=1),
}


def _p(d="F", dt="FP16", **kw):
    return ProblemDescription.make(d, layout="NHWC", dtype=dt, **kw)


def _cfg(bm, bn, wgs, st, sk, tm=1):
    return {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": 0, "SPLITK": sk, "WSPEC": tm, "TMA": tm,
            "PINGPONG": 0}


def test_claims_and_configs(no_gpu_arch):
    """Applicable to 16-bit NHWC forwards whose default tile leaves the GPU under two waves with K tiles for two
    chunks; a config is non-persistent, 64-deep, split 2 to 8 with every chunk two K tiles or more; no workspace, one
    kernel (no reduce) with CSPLIT and SPLITK as grid.y."""
    p = _p(**RESNET50_SMALL_N["r50_2048to512_7_1x1s1"])
    assert CSPLIT.applicability(p)
    assert not CSPLIT.applicability(_p(**dict(RESNET50_SMALL_N["r50_64to64_56_3x3s1"], n=32)))     # a full grid
    assert not CSPLIT.applicability(_p(n=2, c=192, k=64, in_size=(7, 7), filter_size=1))     # 3 K tiles
    assert not CSPLIT.applicability(ProblemDescription.make("F", layout="NCHW", dtype="FP16",
                                                            **RESNET50_SMALL_N["r50_2048to512_7_1x1s1"]))
    assert not CSPLIT.applicability(ProblemDescription.make("F", layout="NHWC", dtype="FP32",
                                                            **RESNET50_SMALL_N["r50_2048to512_7_1x1s1"]))
    assert not CSPLIT.applicability(_p("B", **RESNET50_SMALL_N["r50_2048to512_7_1x1s1"]))
    ok = _cfg(128, 128, 2, 4, 4)
    assert CSPLIT.is_valid_config(p, ok) and CSPLIT.is_valid_config(p, _cfg(128, 64, 2, 4, 8, tm=0))
    assert not CSPLIT.is_valid_config(p, dict(ok, SPLITK=1))
    assert not CSPLIT.is_valid_config(p, dict(ok, SPLITK=9))                        # past a portable cluster
    assert not CSPLIT.is_valid_config(p, dict(ok, PERSIST=1))
    assert not CSPLIT.is_valid_config(p, dict(ok, TMA=2))
    q = _p(**CASES["c96_k64_3x3"])                                                  # 14 K tiles
    assert CSPLIT.is_valid_config(q, _cfg(128, 64, 2, 4, 7, tm=0))
    assert not CSPLIT.is_valid_config(q, _cfg(128, 64, 2, 4, 8, tm=0))          # 8 chunks of 2 would be 7
    assert not CSPLIT.is_valid_config(q, _cfg(128, 64, 2, 4, 4))                # C = 96: no copy engine split
    sol = CSPLIT.get_solution(p, ok)
    (k,) = sol.kernels
    mac = dict(k.macros)
    assert mac["CSPLIT"] == "1" and mac["SPLITK"] == "4" and k.grid[1] == 4 and k.name == "igemm_hopper_fwd"
    assert sol.workspace_bytes == 0 and CSPLIT.workspace_bytes(p, ok) == 0
    d = CSPLIT.default_config(p)
    assert CSPLIT.is_valid_config(p, d) and all(CSPLIT.is_valid_config(p, c) for c in CSPLIT.find_configs(p) if c)
    space = list(CSPLIT.config_space(p))
    assert d in space and len(space) == len({tuple(sorted(c.items())) for c in space})
    assert all(c["SPLITK"] >= 2 and not c["PERSIST"] for c in space)


def test_split_choice(no_gpu_arch):
    """``cluster_split`` picks the split of least estimated time among the valid ones: 2 to 8 chunks."""
    p = _p(**dict(RESNET50_SMALL_N["r50_2048to512_7_1x1s1"], n=32))
    tile = cs.base_tile(p)
    s = cs.cluster_split(p, tile)
    assert 2 <= s <= cs.CS_MAX and cs.cluster_ok(p, dict(tile, SPLITK=s))
    est = {t: cs.split_estimate_us(p, dict(tile, SPLITK=t), t, planes=False) for t in range(2, cs.CS_MAX + 1)
           if cs.cluster_ok(p, dict(tile, SPLITK=t))}
    assert est[s] == min(est.values())


@pytest.mark.parametrize("name", sorted(CASES))
def test_builds(no_gpu_arch, name):
    """NVRTC sm_90a builds of the find's configs (CSPLIT kernels carry __cluster_dims__(1, SPLITK, 1))."""
    nvrtc_or_skip()
    p = _p(**CASES[name])
    assert CSPLIT.applicability(p), CSPLIT.applicability(p).reason
    assert_cubins([k for c in CSPLIT.find_configs(p) for k in CSPLIT.get_solution(p, c).kernels])


def _configs(p):
    """The find's configs and, where valid, 2 and 8 chunks of three tiles (256-wide where N allows)."""
    tm = int(CSPLIT.default_config(p)["TMA"])
    extra = [_cfg(bm, bn, wgs, 4, sk, tm) for bm, bn, wgs in ((128, 128, 2), (64, 256, 1), (64, 64, 1))
             for sk in (2, 8)]
    out = [c or CSPLIT.default_config(p) for c in CSPLIT.find_configs(p)]
    return out + [c for c in extra if c not in out and CSPLIT.is_valid_config(p, c)]


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_against_reference(name, dt):
    p = _p(dt=dt, **CASES[name])
    check_configs(CSPLIT, p, _configs(p))


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CASES))
def test_equals_the_forward_split(name):
    """Each config gives the outputs of ConvImplicitGemmHopperFwd at the same config (its partial planes summed by the
    reduce kernel): the same chunks' sums, added in the same order, rounded alike."""
    import cupy

    from miofind.api import Solution, run_solution
    from miofind.verify import poison, random_array

    p = _p(dt="BF16", **CASES[name])
    rng = cupy.random.default_rng(5)
    sa, sb, so = p.io_shapes()
    a, b = random_array(sa, p.dtype, rng), random_array(sb, p.dtype, rng)
    for cfg in _configs(p):
        outs = []
        for s in (CSPLIT, FWD):
            assert s.is_valid_config(p, cfg), (s.id, cfg)
            out = cupy.empty(so, dtype=a.dtype)
            poison(out, p.dtype)
            run_solution(Solution(s.id, s.algorithm, 0.0, s.workspace_bytes(p, cfg), cfg, False, p), a, b, out)
            outs.append(cupy.asnumpy(out).astype(np.float32))
        assert np.isfinite(outs[0]).all() and np.array_equal(outs[0], outs[1]), cfg
