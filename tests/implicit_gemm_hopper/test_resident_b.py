"""Resident B on the copy engine (PERSIST = 2, the Hopper forward kernel's B_RES): every K tile of the filter lands in
shared memory once, with a block's first A box, and the stages carry A boxes only; the forward's K-major tiles and
backward data's MN-major ones. Claims, memory and builds on the CPU; against the float64 reference on the GPU, every
kind of copy-engine tile it takes: 64-deep and 32-deep K tiles, padded taps, dense 1x1 pixels, TF32, 32- to 256-wide
tiles, three warpgroups, many tiles a block, tails of M and N, the fused epilogue, the NCHW wrapper and backward data's
stride phases."""

from __future__ import annotations

import pytest

from gpu_helpers import check_configs
from nvrtc_check import assert_cubins, nvrtc_or_skip
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.solvers import implicit_gemm_hopper_base as hb

FWD, BWD, TSTORE, FUSED, NCHW, BWD_TF32, BWD_NCHW = (get_solver(f"ConvImplicitGemmHopper{d}") for d in
                                                     ("Fwd", "Bwd", "FwdTmaStore", "FwdBiasActiv", "FwdNchw", "BwdTf32",
                                                      "BwdNchw"))

# C a multiple of 64 (one 64-deep tile a tap: 64; two: 128), padded taps (48: 64-deep tiles half live, 32-deep ones
# 1.5 a tap), C = 32 (one 32-deep tile a tap), a dense 1x1, a K tail narrower than the tile (40 of 64), a stride and
# a dilation
CASES = {
    "c64_k64_3x3": dict(n=3, c=64, k=64, in_size=(15, 13), filter_size=3, pads=1),
    "c128_k40_3x3s2": dict(n=2, c=128, k=40, in_size=(17, 16), filter_size=3, pads=1, strides=2),
    "c48_k64_3x3": dict(n=2, c=48, k=64, in_size=(13, 12), filter_size=3, pads=1),
    "c32_k32_3x3_dil2": dict(n=3, c=32, k=32, in_size=(15, 13), filter_size=3, pads=2, dilations=2),
    "c256_k64_1x1": dict(n=3, c=256, k=64, in_size=(15, 13), filter_size=1),
    "c64_k128_1x1": dict(n=2, c=64, k=128, in_size=(14, 13), filter_size=1),
}
# a persistent walk: many tiles a block (over twice the grid at one block per SM), B loaded once by each block
MANY = dict(n=64, c=64, k=64, in_size=(35, 35), filter_size=3, pads=1)


def _p(d, dt="FP16", **kw):
    return ProblemDescription.make(d, layout="NHWC", dtype=dt, **kw)


def _cfg(bm, bn, wgs, st, tm=1, per=2):
    return {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": per, "SPLITK": 1, "WSPEC": 1, "TMA": tm,
            "PINGPONG": 0}


# 64-deep (TMA = 1): 128 x 64 of two warpgroups, 64 x 64 of one at 8 stages, 192 x 64 of three, 128 x 128, 256 x 32;
# 32-deep (TMA = 2): 256 x 32 at 8 stages (Inception's stem tile), 128 x 64 at 12; 64 x 64 at 4 stages (TF32's
# 32-deep tiles of FP32 leave room for little more)
KINDS = (_cfg(128, 64, 2, 4), _cfg(64, 64, 1, 8), _cfg(192, 64, 3, 4), _cfg(128, 128, 2, 4), _cfg(256, 32, 2, 4),
         _cfg(256, 32, 2, 8, tm=2), _cfg(128, 64, 2, 12, tm=2), _cfg(64, 64, 1, 4))


def _kinds(p, solver=FWD):
    return [c for c in KINDS if solver.is_valid_config(p, c)]


def test_which_configs_keep_b_resident(no_gpu_arch):
    """The copy-engine persistent configs whose tile covers all of N (the fused and NCHW forwards too, and backward
    data over dx's channels), not ping-pong, within the shared memory with all K tiles of B; never the copy-engine store
    or cp.async configs. The tuning space holds them."""
    p = _p("F", **CASES["c64_k64_3x3"])
    assert _kinds(p) == [KINDS[i] for i in (0, 1, 2, 6, 7)]
    assert not FWD.is_valid_config(p, _cfg(128, 128, 2, 4))     # 9 K tiles of 128 x 128 B and 4 stages: 243 KiB
    assert not FWD.is_valid_config(p, _cfg(128, 32, 2, 4))      # N = 64 over two 32-wide tiles
    assert not FWD.is_valid_config(p, dict(_cfg(128, 64, 2, 4), PINGPONG=1))
    assert not FWD.is_valid_config(p, _cfg(128, 64, 2, 4, tm=0))
    assert not FWD.is_valid_config(p, dict(_cfg(128, 64, 2, 4), WSPEC=0, TMA=0))
    assert not FWD.is_valid_config(p, _cfg(128, 64, 2, 4, per=3))
    assert not FWD.is_valid_config(_p("F", **dict(CASES["c64_k64_3x3"], c=512)), _cfg(128, 64, 2, 4))   # 72 K tiles
    t = _p("F", "FP32", math="tf32", **CASES["c64_k64_3x3"])       # 18 K tiles 32 deep
    assert FWD.is_valid_config(t, _cfg(64, 64, 1, 4)) and not FWD.is_valid_config(t, _cfg(128, 64, 2, 4))
    assert FUSED.is_valid_config(_p("F", bias=1, activation="relu", **CASES["c64_k64_3x3"]), _cfg(128, 64, 2, 4))
    b = _p("B", **CASES["c64_k64_3x3"])          # dx's 64 channels are the GEMM's N
    assert BWD.is_valid_config(b, _cfg(128, 64, 2, 4)) and not BWD.is_valid_config(b, _cfg(128, 32, 2, 4))
    assert any(c["PERSIST"] == 2 for c in BWD.config_space(b))
    assert not any(c["PERSIST"] == 2 for c in BWD.config_space(_p("B", **dict(CASES["c64_k64_3x3"], c=512))))
    assert not TSTORE.is_valid_config(p, dict(_cfg(128, 64, 2, 4), OBUF=1))
    space = list(FWD.config_space(p))
    res = [c for c in space if c["PERSIST"] == 2]
    assert res and all(c["TMA"] and not c["PINGPONG"] and c["BN"] >= 64 for c in res)
    assert len(space) == len({repr(c) for c in space})
    assert not any(c["PERSIST"] == 2 for c in FWD.config_space(_p("F", **dict(CASES["c64_k64_3x3"], k=512))))


def test_find_tries_resident_twins_last(no_gpu_arch):
    """A 16-bit find (F, the fused F, the NCHW F, B) measures, after its other configs, the resident-B twin of each
    persistent copy-engine one that is not ping-pong (the default's too), where valid, each once; none for TF32 or
    where no tile covers N."""
    for kw in (MANY, dict(MANY, c=32, k=32), dict(MANY, c=256, filter_size=1, pads=0)):
        for solver, q in ((FWD, _p("F", **kw)), (FUSED, _p("F", bias=1, activation="relu", **kw)),
                          (NCHW, ProblemDescription.make("F", layout="NCHW", dtype="BF16", **kw)),
                          (BWD, _p("B", **dict(kw, c=kw["k"], k=kw["c"])))):
            cfgs = [c or solver.default_config(q) for c in solver.find_configs(q)]
            twins = [c for c in cfgs if c["PERSIST"] == 2]
            rest = cfgs[:len(cfgs) - len(twins)]
            want = [dict(c, PERSIST=2) for c in rest if c["PERSIST"] == 1 and c["TMA"] and not c["PINGPONG"]]
            want = [c for i, c in enumerate(want) if c not in want[:i] and solver.is_valid_config(q, c)]
            assert twins and twins == want and all(solver.is_valid_config(q, c) for c in twins), (solver.id, kw)
            assert not any(c["PERSIST"] == 2 for c in rest)
    assert not any(c and c["PERSIST"] == 2 for c in FWD.find_configs(_p("F", "FP32", math="tf32", **MANY)))
    assert not any(c and c["PERSIST"] == 2 for c in BWD.find_configs(_p("B", **dict(MANY, c=512))))
    assert not any(c and c["PERSIST"] == 2 for c in FWD.find_configs(_p("F", **dict(MANY, k=512))))


def test_resident_b_memory(no_gpu_arch):
    """Shared memory: all K tiles of B (padded taps: whole tiles a tap), STAGES A buffers, the output tile and the
    1 KiB alignment; the kernel gets PERSIST = 2 and the persistent grid."""
    p = _p("F", **CASES["c64_k64_3x3"])
    assert hb.config_ktiles(p, _cfg(128, 64, 2, 4)) == 9
    assert hb.smem_bytes(p, _cfg(128, 64, 2, 4)) == (9 * 64 + 4 * 128) * 128 + 128 * 72 * 2 + 1024
    q = _p("F", **CASES["c48_k64_3x3"])
    assert hb.config_ktiles(q, _cfg(128, 64, 2, 4)) == 9 and hb.config_ktiles(q, _cfg(128, 64, 2, 4, tm=2)) == 18
    assert hb.smem_bytes(q, _cfg(128, 64, 2, 12, tm=2)) == (18 * 64 + 12 * 128) * 64 + 128 * 72 * 2 + 1024
    # the 5x5's 25 taps of 48 channels: 50 tiles of 64 x 32 (200 KiB) leave no room for the stages
    assert not FWD.is_valid_config(_p("F", **dict(CASES["c48_k64_3x3"], filter_size=5, pads=2)),
                                   _cfg(128, 64, 2, 4, tm=2))
    t = _p("F", "FP32", math="tf32", **CASES["c64_k64_3x3"])
    assert hb.smem_bytes(t, _cfg(64, 64, 1, 4)) == (18 * 64 + 4 * 64) * 128 + 64 * 72 * 4 + 1024
    sol = FWD.get_solution(_p("F", **MANY), _cfg(128, 64, 2, 4))
    main = sol.kernels[0]
    assert dict(main.macros)["PERSIST"] == "2" and main.grid[0] <= hb.SM_COUNT * 2


def test_resident_b_builds(no_gpu_arch):
    """Every kind compiles for sm_90a (NVRTC, no GPU) on a plain, a padded and a dense layer, TF32, the fused and the
    NCHW forwards, and backward data's phases."""
    nvrtc_or_skip()
    builds = []
    for name in ("c64_k64_3x3", "c48_k64_3x3", "c256_k64_1x1"):
        p = _p("F", **CASES[name])
        builds += [FWD.get_solution(p, c).kernels[0] for c in _kinds(p)]
    builds.append(FWD.get_solution(_p("F", "FP32", math="tf32", **CASES["c64_k64_3x3"]), _cfg(64, 64, 1, 4)).kernels[0])
    builds.append(FUSED.get_solution(_p("F", bias=1, activation="gelu", **CASES["c48_k64_3x3"]),
                                     _cfg(128, 64, 2, 4)).kernels[0])
    builds += NCHW.get_solution(ProblemDescription.make("F", layout="NCHW", dtype="FP16", **MANY),
                                _cfg(128, 64, 2, 4)).kernels
    for name in ("b_c40_k48_3x3s2", "b_c64_k256_1x1"):       # backward data's phases (MN-major filter tiles)
        builds += [k for k in BWD.get_solution(_p("B", **BWD_CASES[name]), _cfg(64, 64, 1, 8, tm=2)).kernels
                   if k.name == "igemm_hopper_fwd"]
    assert len(builds) >= 25
    assert_cubins(builds)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_fwd_resident_b(name, dt):
    """Every valid kind against the float64 reference, the output poisoned."""
    p = _p("F", dt, **CASES[name])
    check_configs(FWD, p, _kinds(p))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ("c64_k64_3x3", "c256_k64_1x1", "c64_k128_1x1"))
def test_fwd_resident_b_tf32(name):
    p = _p("F", "FP32", math="tf32", **CASES[name])
    check_configs(FWD, p, _kinds(p))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ("c64_k64_3x3", "c48_k64_3x3", "c256_k64_1x1"))
def test_fwd_resident_b_find_configs(name):
    """Every resident-B twin a find measures."""
    p = _p("F", **CASES[name])
    twins = [c for c in FWD.find_configs(p) if c and c["PERSIST"] == 2]
    check_configs(FWD, p, twins)


# backward data (dx's channels the GEMM's N): stride 1 (one phase), stride 2 (four phases, 48 of dy's channels: padded
# taps), a dilated 3x3, a 1x1 (dy as a dense matrix), a 1x1 stride 2 (phases no tap reaches)
BWD_CASES = {
    "b_c64_k64_3x3": dict(n=3, c=64, k=64, in_size=(15, 13), filter_size=3, pads=1),
    "b_c40_k48_3x3s2": dict(n=2, c=40, k=48, in_size=(17, 16), filter_size=3, pads=1, strides=2),
    "b_c32_k96_3x3_dil2": dict(n=2, c=32, k=96, in_size=(16, 15), filter_size=3, pads=2, dilations=2),
    "b_c64_k256_1x1": dict(n=3, c=64, k=256, in_size=(15, 13), filter_size=1),
    "b_c128_k64_1x1s2": dict(n=2, c=128, k=64, in_size=(14, 13), filter_size=1, strides=2),
}


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(BWD_CASES))
def test_bwd_resident_b(name, dt):
    """Backward data with the filter's MN-major tiles resident, every phase, against the float64 reference."""
    p = _p("B", dt, **BWD_CASES[name])
    cfgs = [c for c in KINDS + (_cfg(128, 128, 2, 4, tm=2), _cfg(64, 32, 1, 8, tm=2)) if BWD.is_valid_config(p, c)]
    check_configs(BWD, p, cfgs + [c for c in BWD.find_configs(p) if c and c["PERSIST"] == 2 and c not in cfgs])


@pytest.mark.gpu
@pytest.mark.parametrize("name", ("b_c64_k64_3x3", "b_c128_k64_1x1s2"))
def test_bwd_resident_b_tf32_and_nchw(name, monkeypatch):
    """The TF32 backward data (the filter flipped into the workspace, K-major, then resident) in its tuning space, and
    the NCHW backward data's resident twins on the transposed copies."""
    monkeypatch.setenv("MIOFIND_HOPPER_TF32", "1")
    p = _p("B", "FP32", math="tf32", **BWD_CASES[name])
    res = [c for c in BWD_TF32.config_space(p) if c["PERSIST"] == 2]
    check_configs(BWD_TF32, p, res[:2] + res[-1:])
    q = ProblemDescription.make("B", layout="NCHW", dtype="FP16", **BWD_CASES[name])
    check_configs(BWD_NCHW, q, [c for c in BWD_NCHW.find_configs(q) if c and c["PERSIST"] == 2])


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
def test_fwd_resident_b_walks(dt):
    """Persistent blocks walking many tiles with B loaded once each, the fused bias and ReLU, and the NCHW wrapper on
    the transposed copies."""
    p = _p("F", dt, **MANY)
    per = [_cfg(128, 64, 2, 4), _cfg(64, 64, 1, 8), _cfg(256, 64, 2, 4, tm=2)]
    for c in per:
        assert hb.tiles(p, c) >= 2 * FWD.get_solution(p, c).kernels[0].grid[0], c
    check_configs(FWD, p, per)
    check_configs(FUSED, _p("F", dt, bias=1, activation="relu", **MANY), [_cfg(128, 64, 2, 4)])
    q = ProblemDescription.make("F", layout="NCHW", dtype=dt, **MANY)
    check_configs(NCHW, q, [_cfg(128, 64, 2, 4)])
    b = _p("B", dt, **dict(MANY, strides=2))         # four phases, each walking more tiles than blocks
    check_configs(BWD, b, [_cfg(128, 64, 2, 4), _cfg(64, 64, 1, 8, tm=2)])
