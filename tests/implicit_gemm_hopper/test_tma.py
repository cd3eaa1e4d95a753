"""Copy-engine (TMA) loads of the Hopper implicit GEMM (TMA = 1; F, B and W): which configs may use them (CPU),
the im2col corners (CPU, the PTX ISA's examples), the NVRTC builds for sm_90a (CPU), and on the GPU every
tile shape, split, cluster and (F, B) persistent config against the float64 reference with poisoned outputs, on
problems whose tensor-map boxes cross image rows, images, padding and the ends of M, N and J (B: every stride
phase, phases no tap reaches, dilation), and ones whose persistent blocks each walk several output tiles."""

import zlib

import pytest

from gpu_helpers import check_solver
from nvrtc_check import assert_cubins, nvrtc_or_skip
from miofind import tma
from miofind.problem import ProblemDescription
from miofind.registry import solvers
from miofind.solvers import implicit_gemm_hopper_base as hb
from miofind.solvers.implicit_gemm_hopper_bwd import runs

HOPPER = {s.id: s for s in solvers() if s.family == "implicit_gemm_hopper"}
FWD, BWD, WRW = (HOPPER[f"ConvImplicitGemmHopper{d}"] for d in ("Fwd", "Bwd", "Wrw"))

# C % 64 == 0 (a K tile is one tap's 64 channels); boxes past the last image (M, J tails), K and the
# filter columns past a tile (N tails), padding on every side, strides, dilation, a 7x7 image under 128-pixel
# boxes (several images a box), a 1x1 stride-2 filter and a filter larger than the image's padding
CASES = {
    "tail_mn": dict(n=3, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1),
    "s2": dict(n=2, c=128, k=64, in_size=(14, 14), filter_size=3, pads=1, strides=2),
    "1x1_s2": dict(n=2, c=64, k=136, in_size=(14, 13), filter_size=1, strides=2),
    "1x1_tail": dict(n=3, c=64, k=72, in_size=(15, 13), filter_size=1),       # dense pixels: x by a tiled map
    "dil2": dict(n=2, c=64, k=40, in_size=(17, 16), filter_size=3, pads=2, dilations=2),
    "7x7img": dict(n=5, c=192, k=128, in_size=(7, 7), filter_size=3, pads=1),
    "7x7s2": dict(n=2, c=64, k=64, in_size=(23, 21), filter_size=7, pads=3, strides=2),
    "5x3_s2x1": dict(n=2, c=64, k=96, in_size=(12, 17), filter_size=(5, 3), pads=(2, 0), strides=(2, 1)),
}
# B (dy's channels K % 64 == 0; dx's channels C the GEMM's N, with tails): stride-1 tails, 3x3 and 7x7 stride 2
# (four phases, unequal sizes), a 1x1 stride-2 filter (three phases no tap reaches, zeroed), strides (2, 1),
# dilation 2, a 7x7 image under 128-pixel boxes
BWD_CASES = {
    "b_tail_mn": dict(n=3, c=72, k=64, in_size=(15, 13), filter_size=3, pads=1),
    "b_s2": dict(n=2, c=136, k=128, in_size=(14, 15), filter_size=3, pads=1, strides=2),
    "b_1x1_s2": dict(n=2, c=64, k=64, in_size=(14, 13), filter_size=1, strides=2),
    "b_1x1": dict(n=3, c=72, k=64, in_size=(15, 13), filter_size=1),          # dense pixels: dy by a tiled map
    "b_7x7s2": dict(n=2, c=64, k=64, in_size=(23, 21), filter_size=7, pads=3, strides=2),
    "b_5x3_s2x1": dict(n=2, c=96, k=64, in_size=(12, 17), filter_size=(5, 3), pads=(2, 0), strides=(2, 1)),
    "b_dil2": dict(n=2, c=40, k=64, in_size=(17, 16), filter_size=3, pads=2, dilations=2),
    "b_7x7img": dict(n=5, c=128, k=192, in_size=(7, 7), filter_size=3, pads=1),
}
# persistent F: 512 M tiles of 128 (the last short) x 2 N tiles (K = 80), over a grid of at most 2 x 132 blocks
MANY_TILES = dict(n=16, c=64, k=80, in_size=(63, 65), filter_size=3, pads=1)
# dense pixels (1x1, stride 1, unpadded) over many tiles: 65520 pixels, 512 M tiles of 128 (the last short)
MANY_TILES_1X1 = dict(n=16, c=64, k=80, in_size=(63, 65), filter_size=1)
# persistent B: the same as dx (N = 80 channels), and at stride 2 four phases of 310-330 M tiles of 128 each
BWD_MANY_TILES = {"s1": dict(n=16, c=80, k=64, in_size=(63, 65), filter_size=3, pads=1),
                  "s2": dict(n=40, c=80, k=64, in_size=(63, 65), filter_size=3, pads=1, strides=2)}
FWD_TILES = ((64, 64, 1), (64, 128, 1), (64, 256, 1), (128, 64, 2), (128, 128, 2), (128, 256, 2), (256, 128, 2),
             (128, 128, 1), (256, 64, 2))
WRW_TILES = ((64, 64, 1), (64, 128, 1), (128, 128, 2), (128, 256, 2), (256, 64, 2), (64, 256, 1))
# W over clusters and a global split at once: 117 j tiles in chunks of 39, 30, 59, 24 and 9 over clusters of 8, 3, 4,
# 4 and 4 blocks (chunks of 9 over 4: 3, 3, 3 and a rank with none); K = 200, a partial M tile
WRW_CLUSTER_SPLIT = dict(n=8, c=64, k=200, in_size=(30, 31), filter_size=3, pads=1)


def _p(d, dt="FP16", **kw):
    return ProblemDescription.make(d, layout="NHWC", dtype=dt, **kw)


def _fcfg(bm, bn, wgs, st, sk=1, tm=1, per=0, pp=0):
    return {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": per, "SPLITK": sk, "WSPEC": 1, "TMA": tm,
            "PINGPONG": pp}


# ping-pong tiles (BM, BN, STAGES): each of the two consumer warpgroups multiplies a whole BM x BN tile
PINGPONG_TILES = ((128, 128, 4), (64, 128, 6), (128, 64, 5), (64, 64, 3), (64, 256, 3))


def _wcfg(bm, bn, wgs, st, sk=1, cl=1, tm=1):
    return {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "SPLITK": sk, "CLUSTER": cl, "WSPEC": 1, "TMA": tm}



def test_corners_match_the_ptx_examples():
    """PTX ISA 5.5.4.1: 9 x 14 image, 3x3 filter: padding 1 gives corners -1/-1, no padding 0/-2."""
    assert tma.im2col_corners((14, 9), (14, 9), (1, 1), (1, 1)) == ([-1, -1], [-1, -1])
    assert tma.im2col_corners((14, 9), (12, 7), (0, 0), (1, 1)) == ([0, 0], [-2, -2])
    # stride 2: the last base is (out - 1) * 2 - pad, whatever the stride leaves of the image
    assert tma.im2col_corners((14, 14), (7, 7), (1, 1), (2, 2)) == ([-1, -1], [-2, -2])
    assert not tma.im2col_fits((300, 300), (300, 300), (130, 130), (1, 1), (261, 261), (1, 1))


def test_which_configs_may_use_tma(no_gpu_arch):
    p = _p("F", **CASES["s2"])
    assert FWD.is_valid_config(p, _fcfg(128, 64, 2, 4))
    assert not FWD.is_valid_config(p, dict(_fcfg(128, 64, 2, 4), WSPEC=0))       # the producer issues the copies
    # persistent with TMA: B streams with A, so any N (without TMA, PERSIST keeps all of B and needs N <= BN)
    assert FWD.is_valid_config(p, _fcfg(128, 64, 2, 4, per=1))
    wide = _p("F", **CASES["tail_mn"])          # N = 72 > BN = 64
    assert FWD.is_valid_config(wide, _fcfg(128, 64, 2, 4, per=1))
    assert not FWD.is_valid_config(wide, _fcfg(128, 64, 2, 4, per=1, tm=0))
    assert not FWD.is_valid_config(p, _fcfg(128, 64, 2, 4, sk=2, per=1))               # no split when persistent
    assert hb.smem_bytes(p, _fcfg(128, 64, 2, 4, per=1)) == 4 * 192 * 128 + 128 * 72 * 2 + 1024
    assert FWD.get_solution(wide, _fcfg(128, 64, 2, 3, per=1)).kernels[0].grid == (hb.tiles(wide, _fcfg(128, 64, 2, 3)), 1, 1)
    # C % 64: a K tile is one tap's, padded past C (test_tma_padded.py), which a split does not count
    assert not FWD.is_valid_config(_p("F", n=2, c=96, k=64, in_size=(9, 9), filter_size=3, pads=1),
                                   _fcfg(128, 64, 2, 4, sk=2))
    # B: the copy engine serves every phase where dy's channels K % 64 == 0 (a K tile is one tap's 64 of them)
    b = _p("B", **CASES["s2"])
    assert BWD.is_valid_config(b, _fcfg(128, 64, 2, 4)) and BWD.is_valid_config(b, _fcfg(128, 64, 2, 4, per=1))
    assert not BWD.is_valid_config(b, dict(_fcfg(128, 64, 2, 4), WSPEC=0))
    # K = 72: padded K tiles, unsplit (test_tma_padded.py)
    assert BWD.is_valid_config(_p("B", **CASES["tail_mn"]), _fcfg(128, 64, 2, 4))
    assert not BWD.is_valid_config(_p("B", **CASES["tail_mn"]), _fcfg(128, 64, 2, 4, sk=2))
    w = _p("W", **CASES["s2"])
    assert WRW.is_valid_config(w, WRW.default_config(w))
    assert WRW.is_valid_config(w, _wcfg(128, 128, 2, 5))
    assert not WRW.is_valid_config(w, dict(_wcfg(128, 128, 2, 5), WSPEC=0))
    # the configs stored before TMA run without it; defaults take it wherever it applies (F and B persistent,
    # W); tuning reaches it through the spaces
    old = {k: v for k, v in FWD.default_config(p).items() if k not in ("TMA", "WSPEC")}
    assert FWD.legacy_config(old)["TMA"] == 0 and (FWD.default_config(p)["TMA"], FWD.default_config(p)["WSPEC"]) == (1, 1)
    # since the persistent copy-engine configs (bench/results/session-ptma/), 1x1 filters take them too
    assert FWD.default_config(_p("F", **CASES["1x1_s2"])) == hb.persistent_tile(_p("F", **CASES["1x1_s2"]))
    assert hb.persistent_tile(p)["TMA"] == hb.persistent_tile(p)["PERSIST"] == 1 and WRW.default_config(w)["TMA"] == 1
    assert BWD.default_config(b) == hb.persistent_tile(BWD.forward_problem(b))
    assert BWD.default_config(_p("B", **CASES["tail_mn"]))["TMA"] == 0
    assert any(c["TMA"] for c in FWD.config_space(p)) and any(c["TMA"] and c["PERSIST"] for c in BWD.config_space(b))
    assert not any(c["TMA"] and c["SPLITK"] > 1 for c in BWD.config_space(_p("B", **CASES["tail_mn"])))
    assert any(c["TMA"] and c["PERSIST"] for c in FWD.config_space(p))
    assert any(c["TMA"] for c in WRW.config_space(w))


def test_tma_builds(no_gpu_arch):
    """TMA = 1: the macro, the same block and shared memory; every tile, a split and a cluster compile for
    sm_90a (NVRTC, no GPU), and the TMA = 0 build of the same config stays the build without maps."""
    p = _p("F", **CASES["tail_mn"])
    k = FWD.get_solution(p, _fcfg(128, 128, 2, 4)).kernels[0]
    k0 = FWD.get_solution(p, _fcfg(128, 128, 2, 4, tm=0)).kernels[0]
    assert dict(k.macros)["TMA"] == "1" and "TMA" not in dict(k0.macros) and k.block == k0.block == (384, 1, 1)
    nvrtc_or_skip()
    builds = [FWD.get_solution(p, _fcfg(bm, bn, wgs, 3)).kernels[0] for bm, bn, wgs in FWD_TILES]
    builds += FWD.get_solution(_p("F", "BF16", **CASES["7x7img"]), _fcfg(128, 64, 2, 4, sk=3)).kernels
    builds += [FWD.get_solution(p, _fcfg(bm, bn, wgs, 3, per=1)).kernels[0] for bm, bn, wgs in FWD_TILES]
    w = _p("W", **CASES["tail_mn"])
    builds += [WRW.get_solution(w, _wcfg(bm, bn, wgs, 4)).kernels[0] for bm, bn, wgs in WRW_TILES]
    builds += WRW.get_solution(w, _wcfg(128, 128, 2, 4, sk=3)).kernels
    builds += WRW.get_solution(w, _wcfg(128, 128, 2, 4, cl=2)).kernels
    builds += WRW.get_solution(w, _wcfg(128, 128, 2, 4, sk=2, cl=2)).kernels
    builds += WRW.get_solution(_p("W", **MANY_TILES), _wcfg(64, 128, 1, 4, cl=8)).kernels
    b = _p("B", **BWD_CASES["b_s2"])
    builds += [k for bm, bn, wgs in FWD_TILES for per in (0, 1)
               for k in BWD.get_solution(b, _fcfg(bm, bn, wgs, 3, per=per)).kernels]
    builds += BWD.get_solution(b, _fcfg(128, 64, 2, 4, sk=3)).kernels
    builds += [k for bm, bn, st in PINGPONG_TILES for k in (FWD.get_solution(p, _fcfg(bm, bn, 2, st, per=1, pp=1)).kernels +
                                                           BWD.get_solution(b, _fcfg(bm, bn, 2, st, per=1, pp=1)).kernels)]
    assert_cubins(builds, "sm_90")


def test_pingpong_configs(no_gpu_arch):
    """PINGPONG = 1: persistent copy-engine configs of two consumer warpgroups only, each warpgroup a whole BM x BN
    tile of 64 or 128 rows (at most 128 accumulators a thread), one output tile per warpgroup in shared memory,
    the macro only when set; the spaces of F and B hold such configs; a config stored before it reads as 0."""
    p = _p("F", **MANY_TILES)
    for bm, bn, st in PINGPONG_TILES:
        c = _fcfg(bm, bn, 2, st, per=1, pp=1)
        assert FWD.is_valid_config(p, c), c
        assert hb.smem_bytes(p, c) == st * (bm + bn) * 128 + 2 * bm * (bn + 8) * 2 + 1024
        k = FWD.get_solution(p, c).kernels[0]
        assert dict(k.macros)["PINGPONG"] == "1" and k.block == (384, 1, 1)
    # a warpgroup holds the whole tile: 64 x 64 (32 accumulators a thread) may run two blocks per SM, 128 x 128 not
    assert [hb.blocks_per_sm(p, _fcfg(bm, bn, 2, st, per=1, pp=1)) for bm, bn, st in PINGPONG_TILES] == [1, 1, 1, 2, 1]
    for bad in (_fcfg(128, 128, 2, 4, pp=1), _fcfg(128, 128, 2, 4, per=1, tm=0, pp=1),      # persistent copy engine
                _fcfg(64, 128, 1, 4, per=1, pp=1),                                           # two consumer warpgroups
                _fcfg(256, 128, 2, 3, per=1, pp=1), _fcfg(128, 256, 2, 3, per=1, pp=1),      # 64 or 128 rows, <= 128 acc
                _fcfg(128, 128, 2, 5, per=1, pp=1), _fcfg(128, 128, 2, 4, per=1, pp=2)):     # shared memory; 0 or 1
        assert not FWD.is_valid_config(p, bad), bad
    assert "PINGPONG" not in dict(FWD.get_solution(p, _fcfg(128, 128, 2, 4, per=1)).kernels[0].macros)
    assert any(c["PINGPONG"] for c in FWD.config_space(p))
    b = _p("B", **BWD_MANY_TILES["s2"])
    assert any(c["PINGPONG"] for c in BWD.config_space(b))
    assert BWD.is_valid_config(b, _fcfg(128, 128, 2, 4, per=1, pp=1))
    old = {k: v for k, v in _fcfg(128, 128, 2, 4, per=1).items() if k != "PINGPONG"}
    assert FWD.legacy_config(old)["PINGPONG"] == 0 and FWD.get_solution(p, old).config == _fcfg(128, 128, 2, 4, per=1)


def _check_all(solver, p, cfgs):
    assert cfgs
    for cfg in cfgs:
        assert solver.is_valid_config(p, cfg), cfg
        err, tol = check_solver(solver, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_fwd_tma(name, dt):
    """F with TMA loads on every tile shape at 3 and 6 stages, and split in 3, against the float64 reference."""
    p = _p("F", dt, **CASES[name])
    cfgs = [c for bm, bn, wgs in FWD_TILES for c in (_fcfg(bm, bn, wgs, 3), _fcfg(bm, bn, wgs, 6))
            if FWD.is_valid_config(p, c)]
    cfgs += [c for c in (_fcfg(128, 64, 2, 4, sk=3), _fcfg(64, 128, 1, 4, sk=2)) if FWD.is_valid_config(p, c)]
    cfgs += [c for bm, bn, wgs in FWD_TILES for c in (_fcfg(bm, bn, wgs, 3, per=1),) if FWD.is_valid_config(p, c)]
    _check_all(FWD, p, cfgs)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
def test_fwd_tma_persistent_walks_tiles(dt):
    """Persistent F with TMA where every block walks several output tiles (N tiles fastest, an M tail and an N
    tail), one and two blocks per SM, the stream wrapping the stages many times, against the float64 reference."""
    p = _p("F", dt, **MANY_TILES)
    cfgs = [_fcfg(128, 64, 2, 3, per=1), _fcfg(128, 64, 2, 4, per=1), _fcfg(64, 128, 1, 5, per=1),
            _fcfg(256, 64, 2, 4, per=1), _fcfg(128, 128, 2, 4, per=1)]
    for c in cfgs:
        assert hb.tiles(p, c) >= 2 * FWD.get_solution(p, c).kernels[0].grid[0], c
    _check_all(FWD, p, cfgs)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
def test_fwd_pingpong(dt):
    """Ping-pong F (the two consumer warpgroups on alternate tiles of their block) on every ping-pong tile: blocks
    walking an odd and an even number of tiles (the last one either warpgroup's), M and N tails, the stream
    wrapping the stages many times; and on the small cases (a block of one tile: the second warpgroup idle)."""
    p = _p("F", dt, **MANY_TILES)
    cfgs = [_fcfg(bm, bn, 2, st, per=1, pp=1) for bm, bn, st in PINGPONG_TILES]
    for c in cfgs:
        assert hb.tiles(p, c) >= 2 * FWD.get_solution(p, c).kernels[0].grid[0], c
    _check_all(FWD, p, cfgs)
    for name in ("tail_mn", "7x7img", "5x3_s2x1"):
        q = _p("F", dt, **CASES[name])
        _check_all(FWD, q, [c for c in cfgs if FWD.is_valid_config(q, c)])


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(BWD_MANY_TILES))
def test_bwd_pingpong(name, dt):
    """Ping-pong B through its stride phases (each phase its own persistent grid), on every ping-pong tile."""
    p = _p("B", dt, **BWD_MANY_TILES[name])
    _check_all(BWD, p, [_fcfg(bm, bn, 2, st, per=1, pp=1) for bm, bn, st in PINGPONG_TILES])


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(BWD_CASES))
def test_bwd_tma(name, dt):
    """B with TMA loads (each stride phase's dy as im2col boxes, w's reversed taps as MN-major boxes) on every
    tile shape at 3 and 6 stages, persistent, and split in 3, against the float64 reference."""
    p = _p("B", dt, **BWD_CASES[name])
    cfgs = [c for bm, bn, wgs in FWD_TILES for c in (_fcfg(bm, bn, wgs, 3), _fcfg(bm, bn, wgs, 6),
                                                     _fcfg(bm, bn, wgs, 4, per=1))]
    cfgs += [_fcfg(128, 64, 2, 4, sk=3), _fcfg(64, 128, 1, 4, sk=2), BWD.default_config(p)]
    _check_all(BWD, p, [c for c in cfgs if BWD.is_valid_config(p, c) and c["TMA"]])


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(BWD_MANY_TILES))
def test_bwd_tma_persistent_walks_tiles(name, dt):
    """Persistent B with TMA where every block walks several output tiles of its phase, one and two blocks per
    SM, against the float64 reference."""
    p = _p("B", dt, **BWD_MANY_TILES[name])
    cfgs = [_fcfg(128, 64, 2, 3, per=1), _fcfg(128, 128, 2, 4, per=1), _fcfg(64, 128, 1, 5, per=1)]
    for c in cfgs:
        mains = [k for k in BWD.get_solution(p, c).kernels if k.name == "igemm_hopper_fwd"]
        assert len(mains) == len(runs(p)) and all(hb.tiles(ph.fwd, c) >= 2 * k.grid[0] for ph, k in zip(runs(p), mains)), c
    _check_all(BWD, p, cfgs)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_wrw_tma(name, dt):
    """W with TMA loads on every tile shape, split in 3 and as a cluster of 2, against the float64 reference."""
    p = _p("W", dt, **CASES[name])
    cfgs = [c for bm, bn, wgs in WRW_TILES for c in (_wcfg(bm, bn, wgs, 3), _wcfg(bm, bn, wgs, 6))]
    cfgs += [_wcfg(128, 128, 2, 4, sk=3), _wcfg(64, 128, 1, 5, cl=2)]
    _check_all(WRW, p, [c for c in cfgs if WRW.is_valid_config(p, c)])


def test_dense_pixels_builds(no_gpu_arch):
    """A 1x1 stride-1 unpadded problem with the copy engine reads x (dy for backward data's phase) through a tiled
    map of the dense pixels x channels matrix (A_DENSE, B_DENSE); padding, a stride or a larger filter keep the
    im2col map; every such build compiles for sm_90a (NVRTC)."""
    p = _p("F", **CASES["1x1_tail"])
    assert hb.dense_pixels(p) and not hb.dense_pixels(_p("F", **CASES["1x1_s2"]))
    assert not hb.dense_pixels(_p("F", **CASES["tail_mn"]))
    assert not hb.dense_pixels(_p("F", n=3, c=64, k=72, in_size=(15, 13), filter_size=1, pads=1))
    k = FWD.get_solution(p, _fcfg(128, 64, 2, 4, per=1)).kernels[0]
    assert dict(k.macros)["A_DENSE"] == "1"
    assert "A_DENSE" not in dict(FWD.get_solution(p, _fcfg(128, 64, 2, 4, tm=0)).kernels[0].macros)
    assert "A_DENSE" not in dict(FWD.get_solution(_p("F", **CASES["tail_mn"]), _fcfg(128, 64, 2, 4)).kernels[0].macros)
    b = _p("B", **BWD_CASES["b_1x1_s2"])            # the one phase taps reach: dy's pixels, 1x1, unpadded
    bk = [k for k in BWD.get_solution(b, _fcfg(128, 64, 2, 4, per=1)).kernels if k.name == "igemm_hopper_fwd"]
    assert [dict(k.macros).get("A_DENSE") for k in bk] == ["1"]
    w = _p("W", **CASES["1x1_tail"])
    assert dict(WRW.get_solution(w, _wcfg(64, 128, 1, 4)).kernels[0].macros)["B_DENSE"] == "1"
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    builds = [k, *bk, *FWD.get_solution(p, _fcfg(128, 128, 2, 4, per=1, pp=1)).kernels,
              *FWD.get_solution(p, _fcfg(64, 128, 1, 4, sk=2)).kernels,
              *WRW.get_solution(w, _wcfg(64, 128, 1, 4, sk=2, cl=2)).kernels]
    for kern in builds:
        assert nvrtc_compile(kern, "sm_90a"), kern.name


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
def test_dense_pixels_walk(dt):
    """Dense-pixel loads (tiled maps of x, dy) over many tiles: persistent and ping-pong F, persistent B at stride 1
    and 2, W split and over clusters, against the float64 reference."""
    p = _p("F", dt, **MANY_TILES_1X1)
    assert hb.dense_pixels(p)
    _check_all(FWD, p, [_fcfg(128, 64, 2, 4, per=1), _fcfg(64, 128, 1, 5, per=1), _fcfg(128, 128, 2, 4, per=1, pp=1),
                        _fcfg(64, 64, 2, 4, per=1, pp=1), _fcfg(128, 128, 2, 4)])
    for b in (_p("B", dt, **dict(MANY_TILES_1X1, c=80, k=64)), _p("B", dt, **dict(MANY_TILES_1X1, c=80, k=64, strides=2))):
        _check_all(BWD, b, [_fcfg(128, 64, 2, 4, per=1), _fcfg(128, 128, 2, 4, per=1, pp=1)])
    w = _p("W", dt, **MANY_TILES_1X1)
    _check_all(WRW, w, [_wcfg(64, 128, 1, 4, sk=8), _wcfg(128, 64, 2, 4, sk=4, cl=4), _wcfg(64, 64, 1, 5)])


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
def test_wrw_cluster_and_split(dt):
    """W split into chunks, each chunk over a cluster whose sum is the chunk's partial tile, against the float64
    reference."""
    p = _p("W", dt, **WRW_CLUSTER_SPLIT)
    cfgs = [_wcfg(256, 128, 2, 4, sk=3, cl=8), _wcfg(128, 128, 2, 4, sk=4, cl=3), _wcfg(64, 128, 1, 5, sk=2, cl=4),
            _wcfg(128, 64, 2, 4, sk=5, cl=4), _wcfg(128, 64, 2, 4, sk=13, cl=4)]
    for c in cfgs:
        assert WRW.is_valid_config(p, c), c
        assert len(WRW.get_solution(p, c).kernels) == 2, c
    _check_all(WRW, p, cfgs)


@pytest.mark.gpu
def test_tma_maps_follow_the_pointers():
    """One prepared TMA invoker on two sets of buffers (a map per pointer), then captured in a CUDA graph and
    replayed on new data written into the captured buffers: each output against the float64 reference."""
    import cupy

    from miofind.api import Solution
    from miofind.reference import conv_reference
    from miofind.verify import poison, random_array, rel_error, to_float64, tolerance

    p = _p("F", **CASES["s2"])
    cfg = _fcfg(128, 64, 2, 4)
    run = Solution(FWD.id, FWD.algorithm, 0.0, 0, cfg, False, p).prepare()
    rng = cupy.random.default_rng(5)
    sa, sb, so = p.io_shapes()
    tol = tolerance("FP16", FWD.family, "F", p.math)

    def check(a, b, out):
        ref = conv_reference(p, cupy.asnumpy(to_float64(a, "FP16")), cupy.asnumpy(to_float64(b, "FP16")))
        assert rel_error(to_float64(out, "FP16"), cupy.asarray(ref)) <= tol

    sets = [(random_array(sa, "FP16", rng), random_array(sb, "FP16", rng), cupy.empty(so, cupy.float16))
            for _ in range(2)]
    for a, b, out in sets:
        poison(out, "FP16")
        run(a, b, out)
        cupy.cuda.get_current_stream().synchronize()
        check(a, b, out)
    a, b, out = sets[0]
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        run(a, b, out)
        graph = stream.end_capture()
    a[...] = random_array(sa, "FP16", rng)
    b[...] = random_array(sb, "FP16", rng)
    poison(out, "FP16")
    cupy.cuda.get_current_stream().synchronize()     # the writes (CuPy's stream) before the replay (``stream``)
    graph.launch(stream)
    stream.synchronize()
    check(a, b, out)
