"""Multicast B on the copy engine (PERSIST = 3, the Hopper forward kernel's B_MC): the two blocks of a cluster take a
pair of M tiles of one N tile, each copying half of every filter tile to both. Claims, grid, maps and builds on the
CPU; against the float64 reference on the GPU: 64-deep and 32-deep K tiles, padded taps, a dense 1x1, 32- to 256-wide
tiles, an odd count of M tiles (the pair's second tile past M), tails of M and N, persistent walks, the fused epilogue
and the NCHW wrapper."""

from __future__ import annotations

import pytest

from gpu_helpers import check_configs
from nvrtc_check import nvrtc_or_skip
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.solvers import implicit_gemm_hopper_base as hb

FWD, BWD, TSTORE, FUSED, NCHW = (get_solver(f"ConvImplicitGemmHopper{d}") for d in
                                 ("Fwd", "Bwd", "FwdTmaStore", "FwdBiasActiv", "FwdNchw"))

# C a multiple of 64 (3x3, M = 3 x 15 x 13 = 585: five 128-row tiles, the last pair half past M), padded taps (48),
# a dense 1x1 with an N tail (40 of 64), 192 output channels, a stride with two N tiles of 128
CASES = {
    "c64_k64_3x3": dict(n=3, c=64, k=64, in_size=(15, 13), filter_size=3, pads=1),
    "c48_k96_3x3": dict(n=2, c=48, k=96, in_size=(13, 12), filter_size=3, pads=1),
    "c256_k40_1x1": dict(n=3, c=256, k=40, in_size=(15, 13), filter_size=1),
    "c80_k192_3x3": dict(n=2, c=80, k=192, in_size=(13, 12), filter_size=3),
    "c128_k256_3x3s2": dict(n=4, c=128, k=256, in_size=(17, 16), filter_size=3, pads=1, strides=2),
}
# a persistent walk: many tile pairs a cluster
MANY = dict(n=48, c=128, k=128, in_size=(35, 35), filter_size=3, pads=1)


def _p(d, dt="FP16", **kw):
    return ProblemDescription.make(d, layout="NHWC", dtype=dt, **kw)


def _cfg(bm, bn, wgs, st, tm=1, per=3):
    return {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": per, "SPLITK": 1, "WSPEC": 1, "TMA": tm,
            "PINGPONG": 0}


# 64-deep: 128 x 128 of two warpgroups, 64 x 64 of one at 8 stages, 192 x 64 of three, 128 x 256, 128 x 192, 64 x 32;
# 32-deep: 128 x 64 at 8 stages, 256 x 128 at 4
KINDS = (_cfg(128, 128, 2, 4), _cfg(64, 64, 1, 8), _cfg(192, 64, 3, 4), _cfg(128, 256, 2, 4), _cfg(128, 192, 2, 4),
         _cfg(64, 32, 1, 6), _cfg(128, 64, 2, 8, tm=2), _cfg(256, 128, 2, 4, tm=2))


def _kinds(p, solver=FWD):
    return [c for c in KINDS if solver.is_valid_config(p, c)]


def test_which_configs_multicast_b(no_gpu_arch):
    """The persistent copy-engine configs of a 16-bit forward (the fused and NCHW ones too), not ping-pong; never
    backward data, TF32, cp.async or the copy-engine store. The tuning space holds them."""
    p = _p("F", **CASES["c64_k64_3x3"])
    assert FWD.is_valid_config(p, _cfg(128, 128, 2, 4)) and FWD.is_valid_config(p, _cfg(64, 64, 1, 8))
    assert not FWD.is_valid_config(p, dict(_cfg(128, 128, 2, 4), PINGPONG=1))
    assert not FWD.is_valid_config(p, dict(_cfg(128, 128, 2, 4), TMA=0, WSPEC=0))
    assert not FWD.is_valid_config(p, dict(_cfg(128, 128, 2, 4), SPLITK=2))
    assert not FWD.is_valid_config(_p("F", "FP32", math="tf32", **CASES["c64_k64_3x3"]), _cfg(64, 64, 1, 4))
    assert not BWD.is_valid_config(_p("B", **CASES["c64_k64_3x3"]), _cfg(128, 64, 2, 4))
    assert not TSTORE.is_valid_config(p, dict(_cfg(128, 128, 2, 4), OBUF=1))
    assert FUSED.is_valid_config(_p("F", bias=1, activation="relu", **CASES["c64_k64_3x3"]), _cfg(128, 128, 2, 4))
    space = list(FWD.config_space(p))
    mc = [c for c in space if c["PERSIST"] == 3]
    assert mc and all(c["TMA"] and not c["PINGPONG"] and c["SPLITK"] == 1 for c in mc)
    assert not any(c["PERSIST"] == 3 for c in BWD.config_space(_p("B", **CASES["c64_k64_3x3"])))


def test_multicast_b_grid_and_maps(no_gpu_arch):
    """Two blocks for each pair of M tiles of an N tile, at most the blocks that run at once, in whole clusters; the
    filter's box half the tile's rows (each block copies half); shared memory as the persistent copy engine's."""
    p = _p("F", **CASES["c64_k64_3x3"])                 # M = 585: 5 tiles of 128, 3 pairs; N = 64: one tile
    sol = FWD.get_solution(p, _cfg(128, 64, 2, 4))
    main = sol.kernels[0]
    assert dict(main.macros)["PERSIST"] == "3" and main.grid == (6, 1, 1)
    big = _p("F", **MANY)
    g = FWD.get_solution(big, _cfg(128, 128, 2, 4)).kernels[0].grid[0]
    assert g % 2 == 0 and g <= hb.SM_COUNT * hb.blocks_per_sm(big, _cfg(128, 128, 2, 4))
    _, w = hb.forward_maps(p, _cfg(128, 64, 2, 4))
    assert "box=[64, 32]" in w.spec.desc
    _, w = hb.forward_maps(_p("F", **CASES["c48_k96_3x3"]), _cfg(128, 64, 2, 8, tm=2))
    assert "box=[32, 1, 32]" in w.spec.desc
    assert hb.smem_bytes(p, _cfg(128, 64, 2, 4)) == hb.smem_bytes(p, _cfg(128, 64, 2, 4, per=1))


def test_find_tries_multicast_twins_last(no_gpu_arch):
    """A 16-bit forward's find (the fused and NCHW ones too) measures, last, the multicast twin of each persistent
    copy-engine config that is not ping-pong and has two M tiles or more; backward data's does not."""
    for solver, q in ((FWD, _p("F", **MANY)), (FUSED, _p("F", bias=1, activation="relu", **MANY)),
                      (NCHW, ProblemDescription.make("F", layout="NCHW", dtype="BF16", **MANY))):
        cfgs = [c or solver.default_config(q) for c in solver.find_configs(q)]
        twins = [c for c in cfgs if c["PERSIST"] == 3]
        rest = cfgs[:len(cfgs) - len(twins)]
        want = [dict(c, PERSIST=3) for c in rest if c["PERSIST"] == 1 and c["TMA"] and not c["PINGPONG"]]
        want = [c for i, c in enumerate(want) if c not in want[:i] and solver.is_valid_config(q, c)]
        assert twins and twins == want, solver.id
    assert not any(c and c["PERSIST"] == 3 for c in BWD.find_configs(_p("B", **MANY)))
    one = _p("F", **dict(MANY, n=1, in_size=(8, 8)))       # 64 pixels: one M tile
    assert not any(c and c["PERSIST"] == 3 for c in FWD.find_configs(one))


def test_multicast_b_builds(no_gpu_arch):
    """Every kind compiles for sm_90a (NVRTC, no GPU) on each case, fused and NCHW."""
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    builds = []
    for name in sorted(CASES):
        p = _p("F", **CASES[name])
        builds += [FWD.get_solution(p, c).kernels[0] for c in _kinds(p)]
    builds.append(FUSED.get_solution(_p("F", bias=1, activation="gelu", **CASES["c48_k96_3x3"]),
                                     _cfg(128, 128, 2, 4)).kernels[0])
    builds += NCHW.get_solution(ProblemDescription.make("F", layout="NCHW", dtype="FP16", **MANY),
                                _cfg(128, 128, 2, 4)).kernels
    assert len(builds) >= 25
    for kern in builds:
        assert nvrtc_compile(kern, "sm_90a")[:4] == b"\x7fELF", (kern.name, dict(kern.macros))


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_fwd_multicast_b(name, dt):
    """Every valid kind against the float64 reference, the output poisoned."""
    p = _p("F", dt, **CASES[name])
    check_configs(FWD, p, _kinds(p))


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
def test_fwd_multicast_b_walks_fused_nchw(dt):
    """Clusters walking many tile pairs, the find's twins, the fused bias and ReLU, and the NCHW wrapper."""
    p = _p("F", dt, **MANY)
    per = [_cfg(128, 128, 2, 4), _cfg(64, 64, 1, 8), _cfg(128, 64, 2, 8, tm=2)]
    for c in per:
        assert hb.tiles(p, c) >= 2 * FWD.get_solution(p, c).kernels[0].grid[0], c
    check_configs(FWD, p, [c for c in per if FWD.is_valid_config(p, c)])
    check_configs(FWD, p, [c for c in FWD.find_configs(p) if c and c["PERSIST"] == 3])
    check_configs(FUSED, _p("F", dt, bias=1, activation="relu", **MANY), [_cfg(128, 128, 2, 4)])
    check_configs(NCHW, ProblemDescription.make("F", layout="NCHW", dtype=dt, **MANY), [_cfg(128, 128, 2, 4)])
