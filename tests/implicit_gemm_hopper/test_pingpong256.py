"""The Hopper forward's and backward data's ping-pong tiles of 256 rows (PINGPONG = 1, BM = 256: each of the two
consumer warpgroups multiplies whole 256-row tiles, four m64 blocks, the kernel's WG_M = 4), at most 64 wide (128
accumulators a thread), as cuDNN's kernel for Inception's 32-channel stem (one producer and two consumer warpgroups
of 256 x 32 tiles). Claims and builds on the CPU; on the GPU, against the float64 reference with the output poisoned:
32-deep (TMA = 2) and 64-deep (TMA = 1) K tiles, 32 and 64 wide, walks of many tiles a block, the fused epilogue,
the copy-engine store and backward data."""

from __future__ import annotations

import pytest

from gpu_helpers import check_configs
from nvrtc_check import nvrtc_or_skip
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.solvers import implicit_gemm_hopper_base as hb

FWD, BWD, TSTORE, FUSED = (get_solver(f"ConvImplicitGemmHopper{d}") for d in ("Fwd", "Bwd", "FwdTmaStore",
                                                                             "FwdBiasActiv"))

# 32 channels (each tap one 32-deep tile), 48 (padded 32-deep taps), 64 (64-deep copy-engine tiles), an M tail
C32 = dict(n=3, c=32, k=32, in_size=(15, 13), filter_size=3)
C48 = dict(n=2, c=48, k=64, in_size=(13, 12), filter_size=5, pads=2)
C64 = dict(n=3, c=64, k=64, in_size=(15, 13), filter_size=3, pads=1)
# a walk: every block takes several tiles, so that both warpgroups take turns many times
MANY = dict(n=160, c=32, k=32, in_size=(35, 35), filter_size=3)
B32 = dict(n=3, c=40, k=32, in_size=(15, 13), filter_size=3, pads=1)


def _p(d, dt="FP16", **kw):
    return ProblemDescription.make(d, layout="NHWC", dtype=dt, **kw)


def _cfg(bn, st, tma=2, **more):
    return {"BM": 256, "BN": bn, "WGS": 2, "STAGES": st, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": tma,
            "PINGPONG": 1, **more}


def test_which_tiles_take_four_m64_blocks(no_gpu_arch):
    """A warpgroup takes four m64 blocks only with ping-pong, and then at most 64 columns; no other count is new."""
    p = _p("F", **C32)
    assert hb.config_ok(p, _cfg(32, 6)) and hb.config_ok(p, _cfg(64, 6))
    assert not hb.config_ok(p, _cfg(128, 4))                          # 256 accumulators a thread
    assert not hb.config_ok(p, dict(_cfg(32, 6), BM=192))             # three m64 blocks
    assert not hb.config_ok(p, dict(_cfg(32, 6), PINGPONG=0, WGS=1))  # one warpgroup of four blocks: still refused
    assert hb.config_ok(p, dict(_cfg(32, 6), PINGPONG=0))             # two warpgroups of two blocks, as before
    assert _cfg(32, 6) in list(hb.space(p))
    q = _p("F", **C64)
    assert hb.config_ok(q, _cfg(64, 3, tma=1))
    assert _cfg(64, 3, tma=1) in list(hb.space(q))
    assert TSTORE.is_valid_config(q, _cfg(64, 3, tma=1, OBUF=1))
    assert BWD.is_valid_config(_p("B", **B32), _cfg(32, 6))


def test_pingpong256_builds(no_gpu_arch):
    """They compile for sm_90a (NVRTC, no GPU): 32- and 64-deep, 32 and 64 wide, fused, the copy-engine store,
    backward data."""
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    builds = [FWD.get_solution(_p("F", **C32), _cfg(32, 6)).kernels[0],
              FWD.get_solution(_p("F", **C48), _cfg(64, 6)).kernels[0],
              FWD.get_solution(_p("F", **C64), _cfg(64, 3, tma=1)).kernels[0],
              FUSED.get_solution(_p("F", bias=1, activation="relu", **C32), _cfg(32, 6)).kernels[0],
              TSTORE.get_solution(_p("F", **C64), _cfg(64, 3, tma=1, OBUF=1)).kernels[0]]
    builds += BWD.get_solution(_p("B", **B32), _cfg(32, 6)).kernels
    for kern in builds:
        assert nvrtc_compile(kern, "sm_90a")[:4] == b"\x7fELF", (kern.name, dict(kern.macros))


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
def test_fwd_pingpong256(dt):
    """32-deep tiles 32 and 64 wide (plain and padded taps), 64-deep copy-engine tiles, a walk of many tiles, the
    fused bias and ReLU."""
    check_configs(FWD, _p("F", dt, **C32), [_cfg(32, 6), _cfg(32, 10), _cfg(64, 4)])
    check_configs(FWD, _p("F", dt, **C48), [_cfg(64, 6)])
    check_configs(FWD, _p("F", dt, **C64), [_cfg(64, 3, tma=1), _cfg(32, 4, tma=1)])
    p = _p("F", dt, **MANY)
    per = [_cfg(32, 6), _cfg(64, 6)]
    for c in per:
        assert hb.tiles(p, c) >= 4 * FWD.get_solution(p, c).kernels[0].grid[0], c
    check_configs(FWD, p, per)
    check_configs(FUSED, _p("F", dt, bias=1, activation="relu", **MANY), [_cfg(32, 6)])


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
def test_tma_store_and_bwd_pingpong256(dt):
    """The copy-engine store's 256-row ping-pong tile (one output tile a warpgroup), and backward data's."""
    check_configs(TSTORE, _p("F", dt, **C64), [_cfg(64, 3, tma=1, OBUF=1)])
    check_configs(BWD, _p("B", dt, **B32), [_cfg(32, 6), _cfg(64, 4)])
