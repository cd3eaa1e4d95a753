"""The Hopper forward's 32-deep 16-bit K tiles (TMA = 2: 64-byte rows under the 64-byte swizzle, the kernel's ROW64) for
layers whose channels are not a multiple of 64 (Inception's 32- and 48-channel stems, DenseNet's and MobileNetV2's
narrow layers), and backward data's over dy's channels (its filter tiles MN-major, 32 kk rows a block). Claims and
builds on the CPU; against the float64 reference on the GPU, every kind of config: plain and padded taps, dense 1x1
pixels, persistent, ping-pong, three warpgroups, 32- to 256-wide tiles, deep pipelines, the fused epilogue, the NCHW
wrapper, and backward data's stride phases."""

from __future__ import annotations

import pytest

from gpu_helpers import check_configs
from nvrtc_check import assert_cubins, nvrtc_or_skip
from miofind import tma
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.solvers import implicit_gemm_hopper_base as hb
from miofind.solvers import implicit_gemm_hopper_bwd as bwd

FWD, BWD, TSTORE, FUSED, NCHW = (get_solver(f"ConvImplicitGemmHopper{d}") for d in
                                 ("Fwd", "Bwd", "FwdTmaStore", "FwdBiasActiv", "FwdNchw"))

# C a multiple of 32 (each tap one tile: 32; or several: 96), C padded to whole 32-deep tiles (48: a tap's second tile
# holds one live k16 step; 24, 8: a single tile narrower than its box), a dense 1x1 (x as a tiled map), tails of M and
# N, padding, a stride, a dilation
CASES = {
    "c32_k32_3x3": dict(n=3, c=32, k=32, in_size=(15, 13), filter_size=3),
    "c96_k72_3x3": dict(n=2, c=96, k=72, in_size=(15, 13), filter_size=3, pads=1),
    "c48_k64_5x5": dict(n=2, c=48, k=64, in_size=(13, 12), filter_size=5, pads=2),
    "c24_k40_dil2s2": dict(n=2, c=24, k=40, in_size=(17, 16), filter_size=3, pads=2, dilations=2, strides=2),
    "c32_k144_1x1": dict(n=3, c=32, k=144, in_size=(15, 13), filter_size=1),
    "c8_k16_3x3": dict(n=2, c=8, k=16, in_size=(12, 12), filter_size=3, pads=1),
}
# a persistent walk: many tiles a block (over twice the grid at one block per SM), 9 taps of one 32-deep tile each
MANY = dict(n=64, c=32, k=32, in_size=(35, 35), filter_size=3)
# backward data, dy's channels K % 64 != 0: stride 1 (one phase, 32 channels a tap), stride 2 (four phases, 48 channels:
# padded taps), a dilated 5x5, a 1x1 (dy as a dense matrix) and a 1x1 stride 2 (three phases no tap reaches)
BWD_CASES = {
    "b_k32_3x3": dict(n=3, c=40, k=32, in_size=(15, 13), filter_size=3, pads=1),
    "b_k48_3x3s2": dict(n=2, c=72, k=48, in_size=(17, 16), filter_size=3, pads=1, strides=2),
    "b_k96_5x5_dil2": dict(n=2, c=32, k=96, in_size=(16, 15), filter_size=5, pads=4, dilations=2),
    "b_k24_1x1": dict(n=3, c=144, k=24, in_size=(15, 13), filter_size=1),
    "b_k160_1x1s2": dict(n=2, c=64, k=160, in_size=(14, 13), filter_size=1, strides=2),
}


def _p(d, dt="FP16", **kw):
    return ProblemDescription.make(d, layout="NHWC", dtype=dt, **kw)


def _cfg(bm, bn, wgs, st, per=1, pp=0):
    return {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": per, "SPLITK": 1, "WSPEC": 1, "TMA": 2,
            "PINGPONG": pp}


# persistent 256 x 32 of two warpgroups and 10 stages (cuDNN's tile for Inception's stem), 128 x 64 at 12 stages, a
# ping-pong one, three warpgroups, one warpgroup, 256 wide, and two non-persistent ones
KINDS = (_cfg(256, 32, 2, 10), _cfg(128, 64, 2, 12), _cfg(128, 128, 2, 6, pp=1), _cfg(192, 128, 3, 6),
         _cfg(64, 64, 1, 8), _cfg(128, 256, 2, 4), _cfg(128, 64, 2, 6, per=0), _cfg(64, 32, 1, 4, per=0))


# backward data: persistent, ping-pong, three warpgroups, 256-row, non-persistent (32-wide ones: test_bn32.py)
BWD_KINDS = (_cfg(128, 64, 2, 8), _cfg(256, 128, 2, 4), _cfg(128, 128, 2, 6, pp=1), _cfg(192, 64, 3, 4, per=0),
             _cfg(64, 128, 1, 12))


def _kinds(p):
    return [c for c in KINDS if FWD.is_valid_config(p, c)]


def test_which_problems_take_row64(no_gpu_arch):
    """16-bit forwards with C % 8 == 0 within the im2col fields, unsplit, on the producer warpgroup, and backward data;
    not TF32, not the copy-engine store (its 64-wide y boxes and 128-byte rows); in the tuning space only
    where C (backward data: dy's K) is not a multiple of 64, with stages up to 12 (persistent) as the half-size stages
    allow."""
    p = _p("F", **CASES["c32_k32_3x3"])
    assert len(_kinds(p)) == len(KINDS)
    assert FWD.is_valid_config(_p("F", "BF16", **CASES["c48_k64_5x5"]), _cfg(128, 64, 2, 12))
    assert FWD.is_valid_config(_p("F", **dict(CASES["c32_k32_3x3"], c=128)), _cfg(128, 64, 2, 8))
    assert not FWD.is_valid_config(p, dict(_cfg(128, 64, 2, 4, per=0), SPLITK=2))
    assert not FWD.is_valid_config(p, dict(_cfg(128, 64, 2, 4), WSPEC=0))
    assert not FWD.is_valid_config(p, _cfg(128, 64, 2, 13)) and not FWD.is_valid_config(p, _cfg(128, 64, 2, 7, per=0))
    assert not FWD.is_valid_config(p, dict(_cfg(128, 64, 2, 4), TMA=3))
    assert not FWD.is_valid_config(p, _cfg(256, 256, 2, 12))        # shared memory
    assert not FWD.is_valid_config(_p("F", "FP32", math="tf32", **CASES["c32_k32_3x3"]), _cfg(128, 64, 2, 4))
    b = _p("B", **BWD_CASES["b_k48_3x3s2"])
    assert all(BWD.is_valid_config(b, c) for c in BWD_KINDS) and BWD.is_valid_config(b, _cfg(128, 32, 2, 4))
    assert any(c["TMA"] == 2 for c in BWD.config_space(b))
    assert not any(c["TMA"] == 2 for c in BWD.config_space(_p("B", **dict(BWD_CASES["b_k48_3x3s2"], k=64))))
    # the copy-engine store takes persistent 32-deep tiles (not the non-persistent ones), 32 wide too
    assert TSTORE.is_valid_config(p, dict(_cfg(128, 64, 2, 4), OBUF=1))
    assert TSTORE.is_valid_config(p, dict(_cfg(256, 32, 2, 6), OBUF=2))
    assert not TSTORE.is_valid_config(p, dict(_cfg(128, 64, 2, 4, per=0), OBUF=1))
    assert any(c["TMA"] == 2 for c in TSTORE.config_space(p))
    space = list(FWD.config_space(p))
    deep = [c for c in space if c["TMA"] == 2]
    assert deep and max(c["STAGES"] for c in deep) == 12 and all(FWD.is_valid_config(p, c) for c in deep)
    assert len(space) == len({repr(c) for c in space})
    assert not any(c["TMA"] == 2 for c in FWD.config_space(_p("F", **dict(CASES["c32_k32_3x3"], c=128))))


def test_find_tries_row64_last(no_gpu_arch):
    """A find of a 16-bit forward with C % 64 != 0 (F, the fused F, the NCHW F) measures the ALTERNATE_TILES_ROW64
    after its other alternates, those valid and at most max(64, 2K) wide; none where C % 64 == 0, for TF32 or for
    backward data."""
    for kw in (MANY, dict(MANY, c=160, k=192, filter_size=(1, 7), pads=(0, 3)), CASES["c48_k64_5x5"]):
        for solver, q in ((FWD, _p("F", **kw)), (FUSED, _p("F", bias=1, activation="relu", **kw)),
                          (NCHW, ProblemDescription.make("F", layout="NCHW", dtype="BF16", **kw))):
            alts = solver.alternatives(q) if solver is not NCHW else solver.find_configs(q)[1:]
            alts = [c for c in alts if c["BN"] != 192]         # the 192-wide twins: test_bn192.py
            twins = [c for c in alts if c["PERSIST"] == 2]     # last: test_resident_b.py
            alts = alts[:len(alts) - len(twins)]
            deep = [c for c in alts if c["TMA"] == 2]
            want = [t for t in hb.ALTERNATE_TILES_ROW64 if hb.width_ok(t[1], q.k)]
            assert [(c["BM"], c["BN"], c["WGS"], c["STAGES"], c["PERSIST"]) for c in deep] == list(want), solver.id
            assert alts[len(alts) - len(deep):] == deep and all(solver.is_valid_config(q, c) for c in deep)
    assert not any(c["TMA"] == 2 for c in FWD.alternatives(_p("F", **dict(MANY, c=128))))
    assert not any(c["TMA"] == 2 for c in FWD.alternatives(_p("F", "FP32", math="tf32", **dict(MANY, c=96))))
    b = _p("B", **dict(MANY, c=96, k=96))
    deep = [c for c in BWD.find_configs(b)[1:] if c["TMA"] == 2]
    want = [t[:2] for t in hb.ALTERNATE_TILES_ROW64 if hb.width_ok(t[1], 96)]
    assert [(c["BM"], c["BN"]) for c in deep] == want
    assert (256, 32) not in [(c["BM"], c["BN"]) for c in deep]
    assert not any(c and c["TMA"] == 2 for c in BWD.find_configs(_p("B", **dict(MANY, k=128))))


def test_row64_maps_and_memory(no_gpu_arch):
    """The maps' boxes are 32 channels (64 bytes) under the 64-byte swizzle: w a 2-D map where C % 32 == 0, else the
    3-D map of padded taps; x im2col, or tiled over dense pixels. A stage is (BM + BN) rows of 64 bytes, and the 128-row
    TMA = 1 config's maps keep the 128-byte swizzle."""
    p = _p("F", **CASES["c32_k32_3x3"])
    x, w = (m.spec.fields for m in hb.forward_maps(p, _cfg(256, 32, 2, 10)))
    assert x[0] == 1 and x[8] == 32 and x[9] == 256 and x[11] == tma.SWIZZLE_64B
    assert w[0] == 0 and w[5] == [32, 32] and w[11] == tma.SWIZZLE_64B
    x1, w1 = (m.spec.fields for m in hb.forward_maps(_p("F", **dict(CASES["c32_k32_3x3"], c=64)),
                                                      dict(_cfg(256, 32, 2, 4), TMA=1)))
    assert x1[8] == 64 and x1[11] == w1[11] == tma.SWIZZLE_128B
    w48 = hb.forward_maps(_p("F", **CASES["c48_k64_5x5"]), _cfg(128, 64, 2, 8))[1].spec.fields
    assert w48[2] == 3 and w48[5] == [32, 1, 64]
    xd = hb.forward_maps(_p("F", **CASES["c32_k144_1x1"]), _cfg(128, 64, 2, 8))[0].spec.fields
    assert xd[0] == 0 and xd[5] == [32, 128] and xd[11] == tma.SWIZZLE_64B
    assert hb.smem_bytes(p, _cfg(256, 32, 2, 10)) == 10 * 288 * 64 + 256 * 40 * 2 + 1024
    assert hb.smem_bytes(p, _cfg(128, 128, 2, 6, pp=1)) == 6 * 256 * 64 + 2 * 128 * 136 * 2 + 1024
    assert hb.smem_bytes(p, _cfg(128, 64, 2, 6, per=0)) == 6 * 192 * 64 + 1024
    macros = dict(FWD.get_solution(p, _cfg(256, 32, 2, 10)).kernels[0].macros)
    assert macros["TMA"] == "1" and macros["ROW64"] == "1"
    assert "ROW64" not in dict(FWD.get_solution(p, dict(_cfg(128, 64, 2, 4), TMA=1)).kernels[0].macros)
    b = _p("B", **BWD_CASES["b_k48_3x3s2"])
    sol = BWD.get_solution(b, _cfg(128, 64, 2, 8))
    mains = [k for k in sol.kernels if k.name == "igemm_hopper_fwd"]
    assert len(mains) == 4 and all(dict(k.macros)["ROW64"] == "1" and dict(k.macros)["B_MN"] == "1" for k in mains)
    # dy's boxes 32 channels deep (64-byte swizzle); w's MN-major boxes 64 of dx's channels x 32 of dy's, 128-byte rows
    ph = bwd.runs(b)[0]
    dy = bwd.dy_im2col(b, ph, 128, 32).fields
    assert dy[8] == 32 and dy[11] == tma.SWIZZLE_64B
    assert bwd.w_planes(b, 32).fields[5] == [64, 1, 32] and bwd.w_planes(b, 32).fields[11] == tma.SWIZZLE_128B


def test_row64_builds(no_gpu_arch):
    """Every kind compiles for sm_90a (NVRTC, no GPU) on a plain and a padded layer, and the fused and NCHW
    forwards."""
    nvrtc_or_skip()
    builds = []
    for name in ("c32_k32_3x3", "c48_k64_5x5"):
        p = _p("F", **CASES[name])
        builds += [FWD.get_solution(p, c).kernels[0] for c in _kinds(p)]
    builds += [FUSED.get_solution(_p("F", bias=1, activation="relu", **CASES["c48_k64_5x5"]),
                                  _cfg(128, 64, 2, 8)).kernels[0]]
    b = _p("B", **BWD_CASES["b_k48_3x3s2"])
    builds += [k for c in BWD_KINDS for k in BWD.get_solution(b, c).kernels]
    builds += NCHW.get_solution(ProblemDescription.make("F", layout="NCHW", dtype="FP16", **MANY),
                                _cfg(256, 32, 2, 10)).kernels
    assert_cubins(builds)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_fwd_row64(name, dt):
    """Every valid kind against the float64 reference, the output poisoned."""
    p = _p("F", dt, **CASES[name])
    check_configs(FWD, p, _kinds(p))


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
def test_fwd_row64_walks(dt):
    """Persistent and ping-pong blocks walking many tiles through deep pipelines, the fused bias and ReLU, and the
    NCHW wrapper on the transposed copies."""
    p = _p("F", dt, **MANY)
    per = [_cfg(256, 32, 2, 10), _cfg(128, 32, 2, 12), _cfg(128, 64, 2, 6, pp=1)]
    for c in per:
        assert hb.tiles(p, c) >= 2 * FWD.get_solution(p, c).kernels[0].grid[0], c
    check_configs(FWD, p, per)
    check_configs(FUSED, _p("F", dt, bias=1, activation="relu", **MANY), [_cfg(256, 32, 2, 10)])
    check_configs(FUSED, _p("F", dt, bias=1, activation="gelu", **CASES["c48_k64_5x5"]), [_cfg(128, 64, 2, 8)])
    q = ProblemDescription.make("F", layout="NCHW", dtype=dt, **MANY)
    check_configs(NCHW, q, [_cfg(256, 32, 2, 10)])


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(BWD_CASES))
def test_bwd_row64(name, dt):
    """Backward data with 32-deep K tiles over dy's channels, every phase, against the float64 reference."""
    p = _p("B", dt, **BWD_CASES[name])
    check_configs(BWD, p, [c for c in BWD_KINDS if BWD.is_valid_config(p, c)])
