"""192-wide tiles (BN = 192, m64n192k16) of the 16-bit Hopper forward on the copy engine, for N a multiple of 192
(Inception's 192- and 384-channel outputs, MobileNetV2's 576 and 960), where 128- and 256-wide tiles leave a third of a
tile idle. Claims and builds on the CPU; against the float64 reference on the GPU: 64-deep and 32-deep K tiles, padded
taps, a dense 1x1, split-K, persistent and resident-B tiles, two N tiles, tails of M, the fused epilogue, the NCHW
wrapper and the copy-engine store (three stored boxes a tile)."""

from __future__ import annotations

import pytest

from gpu_helpers import check_configs
from nvrtc_check import assert_cubins, nvrtc_or_skip
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.solvers import implicit_gemm_hopper_base as hb

FWD, BWD, TSTORE, FUSED, NCHW = (get_solver(f"ConvImplicitGemmHopper{d}") for d in
                                 ("Fwd", "Bwd", "FwdTmaStore", "FwdBiasActiv", "FwdNchw"))

# C a multiple of 64 (3x3), padded taps (80: 64-deep tiles 5/8 live, 32-deep 5/6), a dense 1x1 of 160 channels, two
# N tiles (384) of a strided 3x3, an M tail (7 x 5 pixels a batch)
CASES = {
    "c64_k192_3x3": dict(n=3, c=64, k=192, in_size=(15, 13), filter_size=3, pads=1),
    "c80_k192_3x3": dict(n=2, c=80, k=192, in_size=(13, 12), filter_size=3),
    "c160_k192_1x1": dict(n=3, c=160, k=192, in_size=(15, 13), filter_size=1),
    "c128_k384_3x3s2": dict(n=2, c=128, k=384, in_size=(17, 16), filter_size=3, pads=1, strides=2),
    "c96_k576_1x1_tail": dict(n=2, c=96, k=576, in_size=(7, 5), filter_size=1),
}
# a persistent walk: many tiles a block
MANY = dict(n=48, c=64, k=192, in_size=(35, 35), filter_size=3, pads=1)


def _p(d, dt="FP16", **kw):
    return ProblemDescription.make(d, layout="NHWC", dtype=dt, **kw)


def _cfg(bm, wgs, st, per=1, tm=1, sk=1):
    return {"BM": bm, "BN": 192, "WGS": wgs, "STAGES": st, "PERSIST": per, "SPLITK": sk, "WSPEC": 1, "TMA": tm,
            "PINGPONG": 0}


# 128 x 192 of two warpgroups (persistent, 4 stages), 64 x 192 of one (6 stages), the same not persistent and split in
# three, 32-deep K tiles (8 stages), resident B (1x1 layers: few K tiles)
KINDS = (_cfg(128, 2, 4), _cfg(64, 1, 6), _cfg(128, 2, 4, per=0), _cfg(64, 1, 4, per=0, sk=3), _cfg(128, 2, 8, tm=2),
         _cfg(64, 1, 8, tm=2), _cfg(128, 2, 4, per=2), _cfg(64, 1, 6, per=2, tm=2))


def _kinds(p, solver=FWD):
    return [c for c in KINDS if solver.is_valid_config(p, c)]


def test_which_problems_take_192_wide_tiles(no_gpu_arch):
    """16-bit forwards on the copy engine whose N is a multiple of 192 (the fused, NCHW and copy-engine-store ones too)
    and backward data whose dx has such channels (three MN-major filter blocks), one m64 block a warpgroup; not TF32,
    cp.async, ping-pong or three warpgroups. The tuning space holds them only where N is a multiple of 192."""
    p = _p("F", **CASES["c64_k192_3x3"])
    assert FWD.is_valid_config(p, _cfg(128, 2, 4)) and FWD.is_valid_config(p, _cfg(64, 1, 4, per=0, sk=3))
    assert not FWD.is_valid_config(p, _cfg(128, 1, 4))                          # two m64 blocks: 192 accumulators
    assert not FWD.is_valid_config(p, _cfg(192, 3, 4))
    assert not FWD.is_valid_config(p, dict(_cfg(128, 2, 4), WSPEC=0, TMA=0))
    assert not FWD.is_valid_config(p, dict(_cfg(128, 2, 4), PINGPONG=1))
    assert not FWD.is_valid_config(_p("F", "FP32", math="tf32", **CASES["c64_k192_3x3"]), _cfg(64, 1, 4))
    assert BWD.is_valid_config(_p("B", **dict(CASES["c64_k192_3x3"], c=192, k=64)), _cfg(128, 2, 4))   # dx's 192
    assert TSTORE.is_valid_config(p, dict(_cfg(128, 2, 4), OBUF=1))       # three stored boxes a tile
    assert not TSTORE.is_valid_config(p, dict(_cfg(128, 2, 4), OBUF=2))      # two 48 KiB output tiles do not fit
    assert FUSED.is_valid_config(_p("F", bias=1, activation="relu", **CASES["c64_k192_3x3"]), _cfg(128, 2, 4))
    assert any(c["BN"] == 192 for c in FWD.config_space(p))
    assert any(c["BN"] == 192 for c in FWD.config_space(_p("F", **CASES["c96_k576_1x1_tail"])))
    assert not any(c["BN"] == 192 for c in FWD.config_space(_p("F", **dict(CASES["c64_k192_3x3"], k=256))))
    assert not any(c["BN"] == 192 for c in FWD.config_space(_p("F", **dict(CASES["c64_k192_3x3"], k=320))))
    assert any(c["BN"] == 192 for c in BWD.config_space(_p("B", **dict(CASES["c64_k192_3x3"], c=192))))
    assert not any(c["BN"] == 192 for c in BWD.config_space(_p("B", **CASES["c64_k192_3x3"])))    # dx's 64
    sol = FWD.get_solution(p, _cfg(128, 2, 4, per=0))
    assert dict(sol.kernels[0].macros)["BN"] == "192" and sol.kernels[0].grid[0] == 3 * 15 * 13 // 128 + 1


def test_bn192_memory(no_gpu_arch):
    """Shared memory: STAGES x (BM + 192) rows of 128 (64) bytes; resident B: all K tiles of the 192 filter rows."""
    p = _p("F", **CASES["c160_k192_1x1"])
    assert hb.smem_bytes(p, _cfg(128, 2, 4)) == 4 * (128 + 192) * 128 + 128 * 200 * 2 + 1024
    assert hb.smem_bytes(p, _cfg(64, 1, 6, per=2, tm=2)) == (5 * 192 + 6 * 64) * 64 + 64 * 200 * 2 + 1024
    assert not FWD.is_valid_config(_p("F", **CASES["c64_k192_3x3"]), _cfg(128, 2, 4, per=2))   # 9 K tiles: 216 KiB


def test_bn192_builds(no_gpu_arch):
    """Every kind compiles for sm_90a (NVRTC, no GPU) on each case, with the fused epilogue, for the NCHW forward and
    with the copy-engine store."""
    nvrtc_or_skip()
    builds = []
    for name in sorted(CASES):
        p = _p("F", **CASES[name])
        builds += [k for c in _kinds(p) for k in FWD.get_solution(p, c).kernels]
    builds.append(FUSED.get_solution(_p("F", bias=1, activation="gelu", **CASES["c80_k192_3x3"]),
                                     _cfg(128, 2, 4)).kernels[0])
    builds += NCHW.get_solution(ProblemDescription.make("F", layout="NCHW", dtype="BF16", **MANY),
                                _cfg(128, 2, 4)).kernels
    for name in ("c80_k192_3x3", "c160_k192_1x1"):
        p = _p("F", **CASES[name])
        builds += [TSTORE.get_solution(p, dict(c, OBUF=1)).kernels[0] for c in _kinds(p)
                   if TSTORE.is_valid_config(p, dict(c, OBUF=1))]
    assert len(builds) >= 25
    assert_cubins(builds)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_fwd_bn192(name, dt):
    """Every valid kind against the float64 reference, the output poisoned."""
    p = _p("F", dt, **CASES[name])
    check_configs(FWD, p, _kinds(p))


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
def test_fwd_bn192_walks_fused_nchw(dt):
    """Persistent blocks walking many tiles, the fused bias and ReLU, and the NCHW wrapper on the transposed copies."""
    p = _p("F", dt, **MANY)
    per = [_cfg(128, 2, 4), _cfg(64, 1, 6), _cfg(128, 2, 8, tm=2)]
    for c in per:
        assert hb.tiles(p, c) >= 2 * FWD.get_solution(p, c).kernels[0].grid[0], c
    check_configs(FWD, p, [c for c in per if FWD.is_valid_config(p, c)])
    check_configs(FUSED, _p("F", dt, bias=1, activation="relu", **MANY), [_cfg(128, 2, 4), _cfg(64, 1, 4, per=0)])
    check_configs(NCHW, ProblemDescription.make("F", layout="NCHW", dtype=dt, **MANY), [_cfg(128, 2, 4)])


@pytest.mark.gpu
@pytest.mark.parametrize("name", ("c80_k192_3x3", "c96_k576_1x1_tail"))
def test_fwd_bn192_find_configs(name):
    """Every 192-wide config a find measures."""
    p = _p("F", **CASES[name])
    cfgs = [c for c in FWD.find_configs(p) if c and c["BN"] == 192]
    check_configs(FWD, p, cfgs)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_tma_store_bn192(name, dt):
    """The copy-engine store's 192-wide tiles (persistent, one output tile) against the float64 reference, its find's
    192-wide twins among them; many tiles a block on the walk."""
    p = _p("F", dt, **CASES[name])
    cfgs = [dict(c, OBUF=1) for c in KINDS if TSTORE.is_valid_config(p, dict(c, OBUF=1))]
    cfgs += [c for c in TSTORE.find_configs(p) if c and c["BN"] == 192 and c not in cfgs]
    check_configs(TSTORE, p, cfgs)
    if name == "c64_k192_3x3":
        check_configs(TSTORE, _p("F", dt, **MANY), [dict(_cfg(128, 2, 4), OBUF=1), dict(_cfg(64, 1, 6), OBUF=1)])


# backward data, dx's 192 channels the GEMM's N: stride 1, stride 2 (four phases over 48 of dy's channels: padded taps),
# a dense 1x1 (dy as a matrix; few K tiles: resident B)
BWD_CASES = {
    "b_c192_k64_3x3": dict(n=2, c=192, k=64, in_size=(15, 13), filter_size=3, pads=1),
    "b_c192_k48_3x3s2": dict(n=2, c=192, k=48, in_size=(17, 16), filter_size=3, pads=1, strides=2),
    "b_c192_k256_1x1": dict(n=3, c=192, k=256, in_size=(15, 13), filter_size=1),
}


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(BWD_CASES))
def test_bwd_bn192(name, dt):
    """Backward data's 192-wide tiles (three MN-major filter blocks), every phase, against the float64 reference: the
    kinds valid here and the find's 192-wide twins."""
    p = _p("B", dt, **BWD_CASES[name])
    cfgs = _kinds(p, BWD)
    cfgs += [c for c in BWD.find_configs(p) if c and c["BN"] == 192 and c not in cfgs]
    check_configs(BWD, p, cfgs)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
def test_bwd_bn192_nchw(dt):
    """The NCHW backward data (the channels-last kernels on transposed copies) with 192-wide tiles: its find's twins."""
    nchw_b = get_solver("ConvImplicitGemmHopperBwdNchw")
    p = ProblemDescription.make("B", layout="NCHW", dtype=dt, **BWD_CASES["b_c192_k64_3x3"])
    cfgs = [c for c in nchw_b.find_configs(p) if c and c["BN"] == 192]
    check_configs(nchw_b, p, cfgs)
