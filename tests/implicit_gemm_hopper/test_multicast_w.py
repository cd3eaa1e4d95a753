"""The Hopper W kernel's multicast pairs (MC = 2): the blocks of two adjacent N tiles of one M tile as a cluster, each
copying half of the shared dy tile's pixels to both. Its config rules and builds (CPU), and on the GPU every tile shape
against the float64 reference: dense 1x1 and im2col x, padded columns (C % 64 != 0), a reduction whose last j tile is
partly or wholly past J for the second rank's half, unsplit, ST16, split with the reduce, 4 to 12 stages."""

import zlib

import pytest

from gpu_helpers import check_solver
from nvrtc_check import assert_cubins, nvrtc_or_skip
from miofind.problem import ProblemDescription
from miofind.registry import get_solver

WRW = get_solver("ConvImplicitGemmHopperWrw")
TILES = ((64, 64, 1), (64, 128, 1), (128, 64, 1), (128, 64, 2), (128, 128, 2), (64, 256, 1), (256, 64, 2),
         (192, 64, 3))
# J = N*Ho*Wo of 147 (the last j tile's 19 pixels: rank 1's half wholly past J), 6272, 200 (K = 72: an M tile partly
# past K), 675 (C = 96: padded columns)
CASES = {
    "1x1_j147": dict(n=3, c=128, k=192, in_size=(7, 7), filter_size=1),
    "r50_1024to512_14": dict(n=32, c=1024, k=512, in_size=(14, 14), filter_size=1),
    "3x3_pad": dict(n=2, c=128, k=72, in_size=(10, 10), filter_size=3, pads=1),
    "3x3_s2_cpad": dict(n=3, c=96, k=128, in_size=(30, 30), filter_size=3, pads=1, strides=2),
}


def _w(dt="FP16", **kw):
    return ProblemDescription.make("W", layout="NHWC", dtype=dt, **kw)


def _cfg(bm, bn, wgs, st, sk=1, s16=0, mc=2):
    return {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "SPLITK": sk, "CLUSTER": 1, "WSPEC": 1, "TMA": 1,
            "ST16": s16, "RG": 4, "MC": mc}


def _variants(p):
    """MC = 2 configs of ``p``: every valid tile at 4 stages unsplit, with ST16, and split in 3 (its reduce); the 64-wide
    tiles at 8 and 12 stages too."""
    out = []
    for bm, bn, wgs in TILES:
        cands = [_cfg(bm, bn, wgs, 4), _cfg(bm, bn, wgs, 4, s16=1), _cfg(bm, bn, wgs, 4, sk=3)]
        if bm == 64 and bn == 64:
            cands += [_cfg(bm, bn, wgs, 8), _cfg(bm, bn, wgs, 12, s16=1)]
        out += [c for c in cands if WRW.is_valid_config(p, c)]
    return out


def test_multicast_config_rules(no_gpu_arch):
    """MC = 2 needs the copy engine, no cluster split and an even count of N tiles; more than 6 stages the copy engine;
    MC reaches the kernel as a macro only when 2, and dy's map then boxes 32 pixels; a config stored before MC reads
    as MC = 1."""
    p = _w(**CASES["r50_1024to512_14"])
    c = _cfg(64, 64, 1, 8)
    assert WRW.is_valid_config(p, c) and WRW.is_valid_config(p, dict(c, SPLITK=2))
    assert not WRW.is_valid_config(p, dict(c, TMA=0, STAGES=6))           # cp.async loads: no multicast
    assert WRW.is_valid_config(p, dict(c, TMA=0, STAGES=6, MC=1))
    assert not WRW.is_valid_config(p, dict(c, CLUSTER=2))
    assert not WRW.is_valid_config(p, dict(c, MC=4)) and not WRW.is_valid_config(p, dict(c, MC=0))
    assert not WRW.is_valid_config(p, dict(c, TMA=0, WSPEC=1, MC=1, STAGES=8))    # 7-12 stages: copy engine only
    assert WRW.is_valid_config(p, dict(c, STAGES=12)) and not WRW.is_valid_config(p, dict(c, STAGES=13))
    odd = _w(n=2, c=192, k=64, in_size=(8, 8), filter_size=1)              # 3 N tiles of 64
    assert not WRW.is_valid_config(odd, c) and WRW.is_valid_config(odd, dict(c, BN=128, MC=1))
    assert WRW.is_valid_config(odd, dict(c, BN=128))                       # 2 N tiles of 128 (the second half empty)
    sol = WRW.get_solution(p, c)
    assert dict(sol.kernels[0].macros)["MC"] == "2" and sol.kernels[0].grid == (128, 1, 1)
    assert "MC" not in dict(WRW.get_solution(p, dict(c, MC=1)).kernels[0].macros)
    old = {k: v for k, v in c.items() if k != "MC"}
    assert WRW.legacy_config(old)["MC"] == 1 and WRW.get_solution(p, old).config["MC"] == 1
    assert WRW.default_config(p)["MC"] == 1


def test_multicast_builds(no_gpu_arch):
    """Every MC = 2 variant of the GPU cases compiles for sm_90a (NVRTC, no GPU)."""
    nvrtc_or_skip()
    kernels = []
    for kw in CASES.values():
        p = _w(**kw)
        for c in _variants(p):
            kernels += WRW.get_solution(p, c).kernels
    assert kernels
    assert_cubins(kernels, "sm_90a")


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_multicast_w(name, dt):
    p = _w(dt, **CASES[name])
    cfgs = _variants(p)
    assert len(cfgs) >= 6
    for cfg in cfgs:
        err, tol = check_solver(WRW, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"
