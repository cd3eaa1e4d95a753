"""The Hopper forward's 32-wide tiles (BN = 32: m64n32k16 wgmma) for 16-bit forwards of at most 32 output channels
(DenseNet's 3x3 layers of 32, Inception's stem, MobileNetV2's narrow 1x1 layers). Claims and builds on the CPU;
against the float64 reference on the GPU, every kind of config: cp.async loads, resident B, the producer warpgroup,
the copy engine (plain and with padded K tiles), persistent and ping-pong, three warpgroups, split-K, the fused
epilogue and the NCHW wrapper."""

from __future__ import annotations

import pytest

from gpu_helpers import check_configs
from nvrtc_check import assert_cubins, nvrtc_or_skip
from miofind import tma
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.solvers import implicit_gemm_hopper_base as hb
from miofind.solvers import implicit_gemm_hopper_bwd as bwd

FWD, BWD, TSTORE, FUSED = (get_solver(f"ConvImplicitGemmHopper{d}") for d in ("Fwd", "Bwd", "FwdTmaStore",
                                                                             "FwdBiasActiv"))
NCHW = get_solver("ConvImplicitGemmHopperFwdNchw")

# K <= 32 output channels: 32 (one full tile), 24 and 8 (a tile's tail), 16 over a dense 1x1; C a multiple of 64 (the
# copy engine's plain tiles), 96 (padded K tiles), 24 (cp.async's cross-tap K tiles); a strided and a dilated layer
CASES = {
    "c128_k32_3x3": dict(n=3, c=128, k=32, in_size=(15, 13), filter_size=3, pads=1),
    "c96_k24_3x3s2": dict(n=2, c=96, k=24, in_size=(17, 17), filter_size=3, pads=1, strides=2),
    "c64_k16_1x1": dict(n=3, c=64, k=16, in_size=(14, 13), filter_size=1),
    "c24_k8_dil": dict(n=2, c=24, k=8, in_size=(16, 15), filter_size=3, pads=2, dilations=2),
}
# a long walk: many tiles a persistent block (588 tiles of 128 rows: over twice the blocks of the grid at 2 blocks per
# SM), a K loop of 18 tiles, a reduction long enough to split
MANY = dict(n=96, c=128, k=32, in_size=(28, 28), filter_size=3, pads=1)


def _p(d, dt="FP16", **kw):
    return ProblemDescription.make(d, layout="NHWC", dtype=dt, **kw)


def _cfg(bm, wgs, st, per=0, wsp=0, tma=0, pp=0, sk=1):
    return {"BM": bm, "BN": 32, "WGS": wgs, "STAGES": st, "PERSIST": per, "SPLITK": sk, "WSPEC": wsp, "TMA": tma,
            "PINGPONG": pp}


KINDS = (_cfg(128, 2, 4), _cfg(64, 1, 5), _cfg(128, 2, 4, per=1), _cfg(128, 2, 4, wsp=1), _cfg(128, 2, 4, wsp=1, tma=1),
         _cfg(128, 2, 4, per=1, wsp=1, tma=1), _cfg(256, 2, 5, per=1, wsp=1, tma=1),
         _cfg(128, 2, 6, per=1, wsp=1, tma=1, pp=1), _cfg(192, 3, 5, per=1, wsp=1, tma=1))


def test_which_problems_take_bn32(no_gpu_arch):
    """16-bit forwards of at most 32 output channels (in the space; any K is valid, the tile's tail masked), and
    backward data of at most 32 of dx's channels on the copy engine only (its MN-major filter tile then one 64-byte-
    swizzled box of 32 n); not TF32, not the copy-engine store (64-wide boxes of y)."""
    p = _p("F", **CASES["c128_k32_3x3"])
    assert all(FWD.is_valid_config(p, c) for c in KINDS if c["WGS"] < 3 or c["TMA"])
    assert any(c["BN"] == 32 for c in FWD.config_space(p))
    assert not any(c["BN"] == 32 for c in FWD.config_space(_p("F", **dict(CASES["c128_k32_3x3"], k=40))))
    assert FWD.is_valid_config(_p("F", "BF16", **CASES["c64_k16_1x1"]), _cfg(128, 2, 4, per=1, wsp=1, tma=1))
    assert not FWD.is_valid_config(_p("F", "FP32", math="tf32", **CASES["c128_k32_3x3"]), _cfg(128, 2, 4))
    b = _p("B", **dict(CASES["c128_k32_3x3"], c=32, k=128))
    assert not BWD.is_valid_config(b, _cfg(128, 2, 4)) and not BWD.is_valid_config(b, _cfg(128, 2, 4, wsp=1))
    assert BWD.is_valid_config(b, _cfg(128, 2, 4, per=1, wsp=1, tma=1))
    narrow = [c for c in BWD.config_space(b) if c["BN"] == 32]
    assert narrow and all(c["TMA"] for c in narrow)
    box32, box64 = (bwd.w_planes(b, 64, bn).fields for bn in (32, 64))
    assert (box32[5], box32[11], box64[5], box64[11]) == ([32, 1, 64], tma.SWIZZLE_64B, [64, 1, 64], tma.SWIZZLE_128B)
    d, alts = BWD.default_config(b), BWD.alternatives(b)
    assert d["TMA"] and dict(d, BN=32) in alts and all(BWD.is_valid_config(b, c) for c in alts)
    assert not any(c["BN"] == 32 for c in TSTORE.config_space(p))
    assert not TSTORE.is_valid_config(p, dict(_cfg(128, 2, 4, per=1, wsp=1, tma=1), OBUF=1))
    assert hb.forward_maps(p, _cfg(128, 2, 4, per=1, wsp=1, tma=1))[1].spec.fields[5] == [64, 32]
    # the find: the default (64 wide or more, unchanged), its alternates, then each of those and the default 32 wide
    for kw in (MANY, dict(MANY, c=32, k=16, in_size=(56, 56), filter_size=1), dict(MANY, c=32, in_size=(35, 35))):
        q = _p("F", **kw)
        d, alts = FWD.default_config(q), [c for c in FWD.alternatives(q) if c["TMA"] != 2]   # test_row64.py: TMA 2
        assert d["BN"] >= 64 and dict(d, BN=32) in alts and all(FWD.is_valid_config(q, c) for c in alts)
        wide = [c for c in alts if c["BN"] > 32]
        assert alts == wide + [c for c in alts if c["BN"] == 32] and len(alts) == len({repr(c) for c in alts})
        assert all(dict(c, BN=32) in alts for c in wide if FWD.is_valid_config(q, dict(c, BN=32)))
    assert all(c["BN"] == 32 for c in FUSED.alternatives(_p("F", bias=1, activation="relu", **MANY))[-3:])
    assert not any(c["BN"] == 32 for c in FWD.alternatives(_p("F", **dict(MANY, k=40))))
    assert not any(c["BN"] == 32 for c in FWD.alternatives(_p("F", "FP32", math="tf32", **MANY)))


def test_bn32_builds(no_gpu_arch):
    """Every kind compiles for sm_90a (NVRTC, no GPU), with the 16-accumulator wgmma."""
    nvrtc_or_skip()
    p = _p("F", **CASES["c128_k32_3x3"])
    builds = [FWD.get_solution(p, c).kernels[0] for c in KINDS if FWD.is_valid_config(p, c)]
    builds += FWD.get_solution(_p("F", **MANY), _cfg(128, 2, 4, sk=3)).kernels
    builds += [FUSED.get_solution(_p("F", bias=1, activation="relu", **CASES["c128_k32_3x3"]),
                                  _cfg(128, 2, 4, per=1, wsp=1, tma=1)).kernels[0]]
    builds += [FWD.get_solution(_p("F", **CASES["c96_k24_3x3s2"]), _cfg(128, 2, 4, per=1, wsp=1, tma=1)).kernels[0]]
    b = _p("B", **BWD_CASES["b_c24_k48_3x3s2"])
    builds += [k for c in BWD_KINDS if BWD.is_valid_config(b, c) for k in BWD.get_solution(b, c).kernels]
    assert_cubins(builds)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_fwd_bn32(name, dt):
    """Every valid kind of 32-wide config against the float64 reference, the output poisoned."""
    p = _p("F", dt, **CASES[name])
    check_configs(FWD, p, [c for c in KINDS if FWD.is_valid_config(p, c)])


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
def test_fwd_bn32_walks_and_splits(dt):
    """Persistent and ping-pong blocks walking many tiles, split-K (the partial planes' 32-wide tiles and their
    reduce), the fused bias and ReLU, and the NCHW wrapper on the transposed copies."""
    p = _p("F", dt, **MANY)
    per = [_cfg(128, 2, 3, per=1, wsp=1, tma=1), _cfg(64, 1, 5, per=1, wsp=1, tma=1),
           _cfg(128, 2, 4, per=1, wsp=1, tma=1, pp=1)]
    for c in per:
        assert hb.tiles(p, c) >= 2 * FWD.get_solution(p, c).kernels[0].grid[0], c
    split = [_cfg(128, 2, 4, sk=3), _cfg(64, 1, 4, wsp=1, tma=1, sk=2)]
    assert all(hb.split_geometry(p, c["SPLITK"])[0] > 1 for c in split)
    check_configs(FWD, p, per + split)
    check_configs(FUSED, _p("F", dt, bias=1, activation="relu", **MANY), [_cfg(128, 2, 4, per=1, wsp=1, tma=1)])
    q = ProblemDescription.make("F", layout="NCHW", dtype=dt, **MANY)
    check_configs(NCHW, q, [_cfg(128, 2, 4, per=1, wsp=1, tma=1)])


# backward data of at most 32 of dx's channels: stride 1 over 128 of dy's channels (64-deep copy-engine tiles), stride 2
# (four phases) over 48 (padded 64-deep, or 32-deep), a 1x1 over 64 (dy as a dense matrix)
BWD_CASES = {
    "b_c32_k128_3x3": dict(n=3, c=32, k=128, in_size=(15, 13), filter_size=3, pads=1),
    "b_c24_k48_3x3s2": dict(n=2, c=24, k=48, in_size=(17, 16), filter_size=3, pads=1, strides=2),
    "b_c16_k64_1x1": dict(n=3, c=16, k=64, in_size=(14, 13), filter_size=1),
}
BWD_KINDS = (_cfg(128, 2, 4, per=1, wsp=1, tma=1), _cfg(128, 2, 4, wsp=1, tma=1),
             _cfg(128, 2, 6, per=1, wsp=1, tma=1, pp=1), _cfg(192, 3, 5, per=1, wsp=1, tma=1),
             dict(_cfg(256, 2, 6, per=1, wsp=1), TMA=2))


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(BWD_CASES))
def test_bwd_bn32(name, dt):
    """Backward data with 32-wide tiles (the filter's 64-byte-swizzled MN-major box), every phase, 64- and 32-deep K
    tiles, against the float64 reference."""
    p = _p("B", dt, **BWD_CASES[name])
    check_configs(BWD, p, [c for c in BWD_KINDS if BWD.is_valid_config(p, c)])
