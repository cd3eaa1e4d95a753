"""The Hopper forward's copy-engine loads where C is not a multiple of 64 (``hb.tma_padded``): each tap's K tiles
padded to whole 64-channel tiles, the channels past C read as zeros from x's im2col (or dense) map and from w's
3-D map. Claims and builds on the CPU; against the float64 reference on the GPU."""

from __future__ import annotations

import pytest

from gpu_helpers import check_configs
from nvrtc_check import assert_cubins, nvrtc_or_skip
from miofind.problem import ProblemDescription
from miofind.registry import solvers
from miofind.solvers import implicit_gemm_hopper_base as hb
from miofind.solvers import implicit_gemm_hopper_wrw as wrw

HOPPER = {s.id: s for s in solvers() if s.family == "implicit_gemm_hopper"}
FWD, BWD, WRW, TSTORE, FUSED = (HOPPER[f"ConvImplicitGemmHopper{d}"] for d in
                                ("Fwd", "Bwd", "Wrw", "FwdTmaStore", "FwdBiasActiv"))

# C % 64 != 0: the last K tile of each tap partly past C (96, 160, 288: Inception and DenseNet widths; 48 and 24, a
# single tile narrower than its box; 8, the narrowest); tails of M and N, padding, strides, dilation, a 1x7 filter,
# a 1x1 stride-1 filter (x as a dense matrix) and a 1x1 stride-2 one (im2col)
CASES = {
    "c96_3x3": dict(n=3, c=96, k=72, in_size=(15, 13), filter_size=3, pads=1),
    "c288_3x3s2": dict(n=2, c=288, k=136, in_size=(17, 17), filter_size=3, strides=2),
    "c160_1x7": dict(n=2, c=160, k=64, in_size=(17, 17), filter_size=(1, 7), pads=(0, 3)),
    "c48_5x5": dict(n=2, c=48, k=64, in_size=(13, 12), filter_size=5, pads=2),
    "c40_dil2": dict(n=2, c=40, k=40, in_size=(17, 16), filter_size=3, pads=2, dilations=2),
    "c24_1x1": dict(n=3, c=24, k=144, in_size=(15, 13), filter_size=1),
    "c144_1x1s2": dict(n=2, c=144, k=64, in_size=(14, 13), filter_size=1, strides=2),
    "c8_3x3": dict(n=2, c=8, k=64, in_size=(12, 12), filter_size=3, pads=1),
}
# backward data, dy's channels K % 64 != 0 (the reduction's): stride 1 with tails, stride 2 (four phases), a 1x1
# stride-1 filter (dy as a dense matrix), a 1x1 stride-2 one (three phases no tap reaches), a 5x5 of 48 channels
BWD_CASES = {
    "b_k96_3x3": dict(n=3, c=72, k=96, in_size=(15, 13), filter_size=3, pads=1),
    "b_k160_3x3s2": dict(n=2, c=136, k=160, in_size=(14, 15), filter_size=3, pads=1, strides=2),
    "b_k144_1x1": dict(n=3, c=24, k=144, in_size=(15, 13), filter_size=1),
    "b_k288_1x1s2": dict(n=2, c=64, k=288, in_size=(14, 13), filter_size=1, strides=2),
    "b_k48_5x5": dict(n=2, c=64, k=48, in_size=(13, 12), filter_size=5, pads=2),
}
# a persistent walk over many tiles with padded K tiles: 7 taps of 3 tiles (160 channels) each
MANY_TILES = dict(n=32, c=160, k=80, in_size=(33, 35), filter_size=(1, 7), pads=(0, 3))


def _p(d, dt="FP16", **kw):
    return ProblemDescription.make(d, layout="NHWC", dtype=dt, **kw)


def _fcfg(bm, bn, wgs, st, sk=1, per=0, pp=0):
    return {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": per, "SPLITK": sk, "WSPEC": 1, "TMA": 1,
            "PINGPONG": pp}


def test_which_configs_are_padded(no_gpu_arch):
    """16-bit forward configs on the copy engine, unsplit, wherever C % 8 == 0; not FP32 (TF32 tiles), not a split,
    not backward data whose dy channels K % 64 != 0, not W; the default where the padding pays, else the find's
    alternates; w becomes a 3-D map of one tap's channels."""
    p = _p("F", **CASES["c96_3x3"])
    assert hb.tma_padded(p) and not hb.tma_fits(p)
    assert FWD.is_valid_config(p, _fcfg(128, 64, 2, 4)) and FWD.is_valid_config(p, _fcfg(128, 64, 2, 4, per=1))
    assert FWD.is_valid_config(p, _fcfg(128, 128, 2, 4, per=1, pp=1))
    assert not FWD.is_valid_config(p, _fcfg(128, 64, 2, 4, sk=2))          # a split counts unpadded K tiles
    assert not hb.tma_padded(_p("F", "FP32", math="tf32", **CASES["c96_3x3"]))
    assert not hb.tma_padded(_p("F", **dict(CASES["c96_3x3"], c=128)))       # C % 64 == 0: tma_fits' unpadded tiles
    # the default: padded persistent copy-engine tiles from C = 96 padded by at most a third (hb.padded_default),
    # else cp.async loads with the padded configs as the find's alternates
    big = _p("F", n=32, c=96, k=128, in_size=(28, 28), filter_size=3, pads=1)
    assert hb.padded_default(big) and FWD.default_config(big) == hb.persistent_tile(big)
    # (then the 32-deep ones, TMA = 2: test_row64.py)
    assert all(c["TMA"] == 2 or (c["TMA"] and c["PERSIST"]) for c in FWD.alternatives(big))
    assert FWD.find_configs(big)[0] is None
    assert not FWD.default_config(p)["TMA"]      # a small grid keeps its split (default_tile), which padding cannot
    for c, default in ((48, False), (80, False), (96, True), (144, True), (160, True), (136, False), (200, True),
                       (288, True)):
        q = _p("F", n=32, c=c, k=128, in_size=(28, 28), filter_size=3, pads=1)
        assert hb.padded_default(q) == default and FWD.default_config(q)["TMA"] == default, c
    narrow = _p("F", **CASES["c48_5x5"])
    alts = FWD.alternatives(narrow)
    assert FWD.default_config(narrow)["TMA"] == 0 and alts[0] == hb.persistent_tile(narrow)
    assert FWD.find_configs(narrow) == [None] + alts

    def padded(q):      # the 64-deep padded alternates (the 32-deep ones, TMA = 2, follow them: test_row64.py)
        return [c for c in FWD.alternatives(q) if c["TMA"] != 2]
    assert all(c["TMA"] and c["PERSIST"] for c in padded(narrow))
    # not where padding at least doubles a 3x3 layer's K tiles; a 1x1 layer over dense pixels tries them
    assert padded(_p("F", **CASES["c8_3x3"])) == []
    assert padded(_p("F", **dict(CASES["c8_3x3"], c=32))) == []
    dense = _p("F", **CASES["c24_1x1"])
    assert hb.dense_pixels(dense) and FWD.alternatives(dense)[0] == hb.persistent_tile(dense)
    assert FUSED.alternatives(_p("F", bias=1, activation="relu", **CASES["c96_3x3"]))
    # backward data: dy's channels K are the reduction's (each phase's forward view), padded the same way
    b = _p("B", **dict(CASES["c96_3x3"], c=64, k=96))
    assert BWD.is_valid_config(b, _fcfg(128, 64, 2, 4)) and BWD.is_valid_config(b, _fcfg(128, 64, 2, 4, per=1))
    assert not BWD.is_valid_config(b, _fcfg(128, 64, 2, 4, sk=2))
    assert any(c["TMA"] and c["PERSIST"] for c in BWD.config_space(b))
    assert not BWD.is_valid_config(_p("B", "FP32", math="tf32", **dict(CASES["c96_3x3"], c=64, k=72)),
                                   _fcfg(128, 64, 2, 4))      # TF32: 32-deep tiles, never padded
    bbig = _p("B", n=32, c=128, k=160, in_size=(28, 28), filter_size=3, pads=1, strides=2)
    assert BWD.default_config(bbig) == hb.persistent_tile(BWD.forward_problem(bbig))
    assert BWD.default_config(_p("B", n=32, c=128, k=80, in_size=(28, 28), filter_size=3, pads=1))["TMA"] == 0
    # W: each tap's columns padded to 64-wide blocks (the kernel's W_PAD), split, clustered or not
    w = _p("W", **CASES["c96_3x3"])
    assert any(c["TMA"] and c["SPLITK"] > 1 for c in WRW.config_space(w))
    assert any(c["TMA"] and c["CLUSTER"] > 1 for c in WRW.config_space(w))
    wc = dict(WRW.default_config(w), TMA=1, WSPEC=1, SPLITK=1, CLUSTER=1)
    assert WRW.is_valid_config(w, wc) and wrw.gemm_cols(w, wc) == 9 * 128
    assert wrw.gemm_cols(w, dict(wc, TMA=0)) == 9 * 96
    assert WRW.get_solution(w, wc).kernels[0].grid[0] == wrw.tiles(w, wc) == 1 * 9
    split = dict(wc, SPLITK=3)
    assert WRW.workspace_bytes(w, split) == -(-3 * 72 * 9 * 128 * 4 // 256) * 256
    assert WRW.default_config(_p("W", n=32, c=160, k=128, in_size=(28, 28), filter_size=3, pads=1))["TMA"] == 1
    assert WRW.default_config(_p("W", n=32, c=80, k=128, in_size=(28, 28), filter_size=3, pads=1))["TMA"] == 0
    # 1x1: padded by default from 224 channels (wrw.padded_columns)
    for c, default in ((96, False), (160, False), (224, True), (480, True)):
        q = _p("W", n=32, c=c, k=128, in_size=(28, 28), filter_size=1)
        assert WRW.default_config(q)["TMA"] == default == wrw.padded_columns(q), c
    assert TSTORE.applicability(p) and TSTORE.is_valid_config(p, TSTORE.default_config(p))
    w_map = hb.forward_maps(p, _fcfg(128, 64, 2, 4, per=1))[1].spec
    assert w_map.fields[3:6] == ([96, 9, 72], [192, 9 * 192], [64, 1, 64])
    # C % 64 == 0 keeps the 2-D map of w (K x C*Y*X rows) and the default on the copy engine
    q = _p("F", **dict(CASES["c96_3x3"], c=128))
    assert hb.forward_maps(q, _fcfg(128, 64, 2, 4, per=1))[1].spec.fields[3:6] == ([1152, 72], [2304], [64, 64])
    assert FWD.default_config(q)["TMA"] == 1


def test_padded_builds(no_gpu_arch):
    """Every padded kind compiles for sm_90a (NVRTC, no GPU): non-persistent, persistent, ping-pong, dense pixels,
    the copy-engine store and the fused epilogue."""
    nvrtc_or_skip()
    p = _p("F", **CASES["c96_3x3"])
    d = _p("F", "BF16", **CASES["c24_1x1"])
    assert dict(FWD.get_solution(d, _fcfg(128, 64, 2, 4, per=1)).kernels[0].macros)["A_DENSE"] == "1"
    builds = [FWD.get_solution(p, c).kernels[0] for c in (_fcfg(128, 64, 2, 4), _fcfg(128, 128, 2, 4, per=1),
                                                             _fcfg(128, 128, 2, 4, per=1, pp=1))]
    builds += [FWD.get_solution(d, _fcfg(128, 64, 2, 4, per=1)).kernels[0], TSTORE.get_solution(p).kernels[0]]
    for name in ("b_k96_3x3", "b_k160_3x3s2", "b_k144_1x1"):
        builds += BWD.get_solution(_p("B", **BWD_CASES[name]), _fcfg(128, 64, 2, 4, per=1)).kernels
    w = _p("W", **CASES["c96_3x3"])
    for c in (_wcfg(128, 128, 2, 4), _wcfg(128, 128, 2, 4, sk=3), _wcfg(128, 128, 2, 4, cl=2),
              _wcfg(128, 128, 2, 4, sk=2, cl=2), dict(_wcfg(64, 128, 1, 4), ST16=1)):
        builds += WRW.get_solution(w, c).kernels
    builds += WRW.get_solution(_p("W", **CASES["c24_1x1"]), _wcfg(64, 128, 1, 4, sk=2)).kernels
    f = _p("F", bias=1, activation="relu", **CASES["c96_3x3"])
    builds += [FUSED.get_solution(f, _fcfg(128, 64, 2, 4, per=1)).kernels[0]]
    assert_cubins(builds)


def _wcfg(bm, bn, wgs, st, sk=1, cl=1):
    return {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "SPLITK": sk, "CLUSTER": cl, "WSPEC": 1, "TMA": 1, "ST16": 0,
            "RG": 4}


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_fwd_padded(name, dt):
    """Padded copy-engine F (non-persistent, persistent, ping-pong, the find's alternates) and the copy-engine store
    against the float64 reference, the output poisoned."""
    p = _p("F", dt, **CASES[name])
    cfgs = [c for c in (_fcfg(128, 64, 2, 4), _fcfg(64, 128, 1, 6), _fcfg(128, 128, 2, 4, per=1),
                        _fcfg(64, 64, 1, 5, per=1), _fcfg(128, 64, 2, 5, per=1, pp=1)) if FWD.is_valid_config(p, c)]
    check_configs(FWD, p, cfgs + [c for c in FWD.alternatives(p) if c not in cfgs])
    check_configs(TSTORE, p, [TSTORE.default_config(p)] + TSTORE.alternatives(p)[:2])


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
def test_fwd_padded_walks_tiles(dt):
    """Persistent and ping-pong padded F where every block walks several output tiles and the stream of padded K
    tiles wraps the stages many times; the fused bias and ReLU on it."""
    p = _p("F", dt, **MANY_TILES)
    cfgs = [_fcfg(128, 64, 2, 3, per=1), _fcfg(64, 128, 1, 5, per=1), _fcfg(128, 128, 2, 4, per=1, pp=1)]
    for c in cfgs:
        assert hb.tiles(p, c) >= 2 * FWD.get_solution(p, c).kernels[0].grid[0], c
    check_configs(FWD, p, cfgs)
    f = _p("F", dt, bias=1, activation="relu", **MANY_TILES)
    check_configs(FUSED, f, [_fcfg(128, 64, 2, 4, per=1)])


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(BWD_CASES))
def test_bwd_padded(name, dt):
    """Padded copy-engine backward data (non-persistent, persistent, ping-pong) against the float64 reference, the
    output poisoned."""
    p = _p("B", dt, **BWD_CASES[name])
    cfgs = [c for c in (_fcfg(128, 64, 2, 4), _fcfg(64, 128, 1, 6), _fcfg(128, 128, 2, 4, per=1),
                        _fcfg(64, 64, 1, 5, per=1), _fcfg(128, 64, 2, 5, per=1, pp=1)) if BWD.is_valid_config(p, c)]
    check_configs(BWD, p, cfgs)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_wrw_padded(name, dt):
    """Padded copy-engine W (each tap's columns padded to 64-wide blocks, dw written for a tap's first C): unsplit,
    split (the partial planes of padded columns and their reduce), over a cluster, both, 16-byte stores, against the
    float64 reference with a poisoned dw."""
    p = _p("W", dt, **CASES[name])
    cfgs = [_wcfg(128, 128, 2, 4), _wcfg(64, 128, 1, 5, sk=3), _wcfg(128, 64, 2, 4, cl=2),
            _wcfg(64, 64, 1, 4, sk=2, cl=2), dict(_wcfg(64, 128, 1, 4), ST16=1)]
    cfgs = [dict(c, RG=wrw.red_groups(p, c)) for c in cfgs]
    check_configs(WRW, p, [c for c in cfgs if WRW.is_valid_config(p, c)] + [WRW.default_config(p)])
