"""Hopper implicit GEMM (wgmma, sm_90a): what it claims (CPU, pinned), its configs, its NVRTC build
for sm_90a (CPU), and on the GPU every claimed case and sampled tile configs against the float64
reference with poisoned outputs, odd tails in M, N and K included; split-K of the forward kernel (F
and B): its rule, workspace and builds (CPU), and 2, 3 and odd chunk counts on the GPU."""

import math
import zlib

import numpy as np
import pytest

from gpu_helpers import assert_claims_pinned, check_solver, claim_grid, params, accepted, check_claim
from nvrtc_check import assert_cubins, nvrtc_or_skip
from shapes import RESNET50_SMALL_N, SHAPES
from miofind.problem import ProblemDescription
from miofind.registry import registry, solvers
from miofind.solvers import implicit_gemm_hopper_base as hb

HOPPER = [s for s in solvers() if s.family == "implicit_gemm_hopper"]
FWD = next(s for s in HOPPER if s.id == "ConvImplicitGemmHopperFwd")
BWD = next(s for s in HOPPER if s.id == "ConvImplicitGemmHopperBwd")
WRW = next(s for s in HOPPER if s.id == "ConvImplicitGemmHopperWrw")
MODES = (("FP16", "strict"), ("BF16", "strict"))

# tails: M, N (K) and the GEMM K (C*taps) not multiples of any tile; one tap of few channels; strides
TAILS = {
    "tail_mnk": dict(n=2, c=40, k=72, in_size=(15, 13), filter_size=3, pads=1),
    "c8_k8": dict(n=3, c=8, k=8, in_size=(7, 9), filter_size=3, pads=1),
    "wide_c": dict(n=1, c=264, k=200, in_size=(9, 11), filter_size=3, pads=1, strides=2),
    "1x1_s2": dict(n=2, c=96, k=136, in_size=(14, 13), filter_size=1, strides=2),
    "5x5_dil": dict(n=2, c=16, k=24, in_size=(17, 16), filter_size=5, pads=3, dilations=2),
    "k320": dict(n=2, c=64, k=320, in_size=(12, 12), filter_size=3, pads=1),
}
GRID = claim_grid(HOPPER, {**SHAPES, **TAILS}, MODES)
# the fused forward (test_fused_epilogue.py) claims none of these plain problems
# (and the TF32 solvers, FP32 only: test_tf32.py, test_tf32_rn.py, test_wrw_tf32_rn.py)
ACCEPTED = {"ConvImplicitGemmHopperFwd": 18, "ConvImplicitGemmHopperBwd": 18, "ConvImplicitGemmHopperWrw": 18,
            "ConvImplicitGemmHopperFwdBiasActiv": 0, "ConvImplicitGemmHopperBwdTf32": 0,
            "ConvImplicitGemmHopperFwdSwap": 0, "ConvImplicitGemmHopperBwdSwap": 2,
            "ConvImplicitGemmHopperFwdTf32Rn": 0, "ConvImplicitGemmHopperBwdTf32Rn": 0,
            # NCHW: the same cases channels-first but n1_1x1 (1x1 stride 1: the GEMM solvers), test_nchw.py
            "ConvImplicitGemmHopperFwdNchw": 16, "ConvImplicitGemmHopperBwdNchw": 16, "ConvImplicitGemmHopperWrwNchw": 16,
            "ConvImplicitGemmHopperFwdTf32RnNchw": 0, "ConvImplicitGemmHopperBwdTf32RnNchw": 0,
            # the swapped-operand wrappers: as their NHWC solvers (their own claims: test_nchw.py)
            "ConvImplicitGemmHopperFwdSwapNchw": 0, "ConvImplicitGemmHopperBwdSwapNchw": 2,
            "ConvImplicitGemmHopperWrwTf32Rn": 0, "ConvImplicitGemmHopperWrwTf32RnNchw": 0,
            # the copy-engine stores: every 16-bit case the forward takes, C % 64 != 0 with padded K tiles
            # (its own cases: test_tma_store.py, test_tma_padded.py)
            "ConvImplicitGemmHopperFwdTmaStore": 18}
ACCEPTED_DIGEST = "a218b611"


def _nhwc(dt="FP16", **kw):
    return ProblemDescription.make("F", layout="NHWC", dtype=dt, **kw)



def test_registered_after_existing():
    rows = {r.id: r.number for r in registry()}
    assert rows["ConvImplicitGemmHopperFwd"] == 29 and rows["ConvImplicitGemmHopperBwd"] == 30
    assert rows["ConvImplicitGemmHopperWrw"] == 31 and rows["ConvImplicitGemmHopperFwdBiasActiv"] == 32
    assert rows["ConvImplicitGemmHopperBwdTf32"] == 35 and rows["ConvImplicitGemmHopperFwdSwap"] == 36
    assert rows["ConvImplicitGemmHopperBwdSwap"] == 37 and rows["ConvImplicitGemmHopperFwdTf32Rn"] == 38
    assert rows["ConvImplicitGemmHopperBwdTf32Rn"] == 39 and rows["ConvImplicitGemmHopperFwdNchw"] == 40
    assert rows["ConvImplicitGemmHopperBwdNchw"] == 41 and rows["ConvImplicitGemmHopperWrwNchw"] == 42
    assert rows["ConvImplicitGemmHopperFwdTf32RnNchw"] == 43 and rows["ConvImplicitGemmHopperBwdTf32RnNchw"] == 44
    assert rows["ConvImplicitGemmHopperFwdSwapNchw"] == 45 and rows["ConvImplicitGemmHopperBwdSwapNchw"] == 46
    assert rows["ConvImplicitGemmHopperWrwTf32Rn"] == 47 and rows["ConvImplicitGemmHopperWrwTf32RnNchw"] == 48
    assert rows["ConvImplicitGemmHopperFwdTmaStore"] == 49
    assert max(n for i, n in rows.items() if "Hopper" not in i and "SmallC" not in i) == 28
    assert [s.id for s in HOPPER] == ["ConvImplicitGemmHopperFwd", "ConvImplicitGemmHopperBwd",
                                      "ConvImplicitGemmHopperWrw", "ConvImplicitGemmHopperFwdBiasActiv",
                                      "ConvImplicitGemmHopperBwdTf32", "ConvImplicitGemmHopperFwdSwap",
                                      "ConvImplicitGemmHopperBwdSwap", "ConvImplicitGemmHopperFwdTf32Rn",
                                      "ConvImplicitGemmHopperBwdTf32Rn", "ConvImplicitGemmHopperFwdNchw",
                                      "ConvImplicitGemmHopperBwdNchw", "ConvImplicitGemmHopperWrwNchw",
                                      "ConvImplicitGemmHopperFwdTf32RnNchw", "ConvImplicitGemmHopperBwdTf32RnNchw",
                                      "ConvImplicitGemmHopperFwdSwapNchw", "ConvImplicitGemmHopperBwdSwapNchw",
                                      "ConvImplicitGemmHopperWrwTf32Rn", "ConvImplicitGemmHopperWrwTf32RnNchw",
                                      "ConvImplicitGemmHopperFwdTmaStore"]


def test_claims_pinned(no_gpu_arch):
    assert_claims_pinned(GRID, ACCEPTED, ACCEPTED_DIGEST)


@pytest.mark.parametrize("kw,why", [
    (dict(layout="NCHW"), "layouts"),
    (dict(dt="FP32"), "data type"),
    (dict(c=12), "multiples of 8"),
    (dict(k=20), "multiples of 8"),
    (dict(groups=2), "groups"),
])
def test_rejections(no_gpu_arch, kw, why):
    base = dict(n=2, c=16, k=24, in_size=(8, 8), filter_size=3, pads=1)
    lay = kw.pop("layout", "NHWC")
    dt = kw.pop("dt", "FP16")
    p = ProblemDescription.make("F", layout=lay, dtype=dt, **{**base, **kw})
    a = FWD.applicability(p)
    assert not a and why in a.reason


def test_rejected_off_hopper(monkeypatch):
    p = _nhwc(n=2, c=16, k=24, in_size=(8, 8), filter_size=3, pads=1)
    monkeypatch.setattr(hb, "device_arch", lambda: "sm_80")
    a = FWD.applicability(p)
    assert not a and "sm_90a" in a.reason
    monkeypatch.setattr(hb, "device_arch", lambda: "sm_90")
    assert FWD.applicability(p)


def test_configs_valid_and_targeted():
    p = _nhwc(n=32, c=64, k=256, in_size=(56, 56), filter_size=3, pads=1)
    space = list(FWD.config_space(p))
    assert len(space) > 10 and FWD.default_config(p) in space
    for cfg in space:
        assert FWD.is_valid_config(p, cfg) and hb.smem_bytes(p, cfg) <= hb.SMEM_LIMIT
    assert not FWD.is_valid_config(p, dict(space[0], BM=192))
    assert not FWD.is_valid_config(p, dict(space[0], STAGES=2))
    assert not FWD.is_valid_config(p, {"BM": 128, "BN": 256, "WGS": 2, "STAGES": 6, "PERSIST": 0, "SPLITK": 1})  # smem
    assert not FWD.is_valid_config(p, {"BM": 128, "BN": 128, "WGS": 2, "STAGES": 4, "PERSIST": 1, "SPLITK": 1})  # N > BN
    assert not any(c["PERSIST"] and not c["TMA"] for c in space)       # B of 9 K tiles x 256 rows does not fit
    p64 = _nhwc(n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
    assert FWD.is_valid_config(p64, {"BM": 128, "BN": 64, "WGS": 2, "STAGES": 8, "PERSIST": 1, "SPLITK": 1})
    big = _nhwc(n=120, c=64, k=64, in_size=(512, 512), filter_size=3, pads=1)
    per = {"BM": 128, "BN": 64, "WGS": 2, "STAGES": 8, "PERSIST": 1, "SPLITK": 1, "WSPEC": 0, "TMA": 0, "PINGPONG": 0}
    assert FWD.default_config(big) == dict(per, STAGES=4, PERSIST=1, WSPEC=1, TMA=1)   # persistent, the copy engine
    assert FWD.get_solution(big, per).kernels[0].grid[0] <= 2 * 132       # persistent: the blocks that fit
    k = FWD.get_solution(p).kernels[0]
    d = FWD.default_config(p)
    assert "-arch=sm_90a" in k.compile_options() and k.block[0] == (d["WGS"] + d["WSPEC"]) * 128
    with pytest.raises(ValueError, match="config="):
        FWD.get_solution(p, dict(space[0], BN=96))


def test_find_configs_alternates_fwd_bwd():
    """A find of the forward (and of backward data) measures the default (None) at once, then, where the default is a
    persistent copy-engine config, the valid ALTERNATE_TILES other than it; elsewhere the default alone."""
    p = _nhwc(n=32, c=512, k=512, in_size=(14, 14), filter_size=3, pads=1)
    d = FWD.default_config(p)
    cfgs = FWD.find_configs(p)
    alts = cfgs[1:]
    assert (d["PERSIST"], d["TMA"]) == (1, 1) and cfgs[0] is None and FWD.configs_now == 1
    assert 1 <= len(alts) <= len(hb.ALTERNATE_TILES) and d not in alts
    assert all(FWD.is_valid_config(p, c) and (c["PERSIST"], c["TMA"], c["SPLITK"]) == (1, 1, 1) for c in alts)
    assert [(c["BM"], c["BN"], c["WGS"], c["STAGES"], c["PINGPONG"]) for c in alts] == \
        [t for t in hb.ALTERNATE_TILES if t != (d["BM"], d["BN"], d["WGS"], d["STAGES"], d["PINGPONG"])]
    assert any(c["PINGPONG"] for c in alts)          # the ping-pong alternate
    assert any(c["WGS"] == 3 and c["BM"] == 192 for c in alts)      # the three-warpgroup alternate
    assert FWD.find_configs(p, 1) == [None] and FWD.find_configs(p, 2) == cfgs[:2]
    # C % 64 != 0: the default loads by cp.async, the alternates are the padded copy-engine ones (test_tma_padded.py)
    c40 = _nhwc(n=32, c=40, k=64, in_size=(14, 14), filter_size=3, pads=1)
    assert FWD.default_config(c40)["TMA"] == 0 and FWD.find_configs(c40) == [None] + FWD.alternatives(c40)
    assert FWD.alternatives(c40)[0] == hb.persistent_tile(c40)
    pb = ProblemDescription.make("B", layout="NHWC", dtype="FP16", n=32, c=512, k=512, in_size=(14, 14), filter_size=3,
                                 pads=1, strides=2)
    db, bcfgs = BWD.default_config(pb), BWD.find_configs(pb)
    assert (db["PERSIST"], db["TMA"]) == (1, 1) and bcfgs[0] is None and BWD.configs_now == 1 and len(bcfgs) > 1
    assert all(BWD.is_valid_config(pb, c) and c != db for c in bcfgs[1:])


def test_nvrtc_sm90a_configs():
    """Every (BM, BN, WGS) shape of the space builds for sm_90a, FP16 and BF16 (NVRTC, no GPU)."""
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    seen = set()
    for dt, k in (("FP16", 264), ("BF16", 264), ("FP16", 64), ("BF16", 120)):
        p = _nhwc(dt, n=2, c=40, k=k, in_size=(15, 13), filter_size=3, pads=1)
        for cfg in FWD.config_space(p):
            shape = (dt, cfg["BM"], cfg["BN"], cfg["WGS"], cfg["PERSIST"], cfg["WSPEC"])
            if shape in seen:
                continue
            seen.add(shape)
            cubin = nvrtc_compile(FWD.get_solution(p, cfg).kernels[0], arch="sm_90")
            assert cubin[:4] == b"\x7fELF"
    assert len(seen) >= 40 and any(sh[-2] for sh in seen) and any(sh[-2] and sh[-1] for sh in seen)


# -- GPU -------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("claim", params(accepted(GRID)))
def test_hopper_solver(claim):
    check_claim(claim)


def _sample(p, count=8):
    space = list(FWD.config_space(p))
    rng = np.random.default_rng(zlib.crc32(p.key().encode()))
    picks = {0, len(space) - 1, *rng.choice(len(space), size=min(count, len(space)), replace=False).tolist()}
    return [space[i] for i in sorted(picks)]


CFG_CASES = [(name, dt) for name in ("tail_mnk", "k320", "wide_c") for dt in ("FP16", "BF16")]


@pytest.mark.gpu
@pytest.mark.parametrize("name,dt", CFG_CASES, ids=[f"{n}-{d}" for n, d in CFG_CASES])
def test_hopper_config_sample(name, dt):
    p = _nhwc(dt, **TAILS[name])
    for cfg in _sample(p):
        err, tol = check_solver(FWD, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("kw", (dict(n=2, c=64, k=320, in_size=(12, 12), filter_size=3, pads=1),
                                dict(n=4, c=128, k=256, in_size=(14, 14), filter_size=1)), ids=("k320", "1x1"))
def test_hopper_find_configs_fwd_bwd(kw, dt):
    """Every config a find of the forward, and of backward data (stride 2 too), measures (the default and the
    alternates) against the float64 reference."""
    bkw = dict(kw, k=128)          # backward data's copy engine reads dy: its channels a multiple of 64
    for solver, p in ((FWD, _nhwc(dt, **kw)), (BWD, ProblemDescription.make("B", layout="NHWC", dtype=dt, **bkw)),
                      (BWD, ProblemDescription.make("B", layout="NHWC", dtype=dt, **dict(bkw, strides=2)))):
        cfgs = solver.find_configs(p)
        # a small stride-1 backward-data problem defaults to a split: the default alone
        assert len(cfgs) > 1 or (solver is BWD and p.strides == (1, 1)), (solver.id, p.key())
        for cfg in cfgs:
            err, tol = check_solver(solver, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
            assert err <= tol, f"{solver.id} {p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
def test_hopper_multi_wave():
    """A GEMM of many blocks in M and several in N (the pipeline wraps over 9 K tiles)."""
    p = _nhwc("FP16", n=4, c=64, k=384, in_size=(28, 28), filter_size=3, pads=1)
    for cfg in (None, {"BM": 256, "BN": 128, "WGS": 2, "STAGES": 3, "PERSIST": 0, "SPLITK": 1},
                {"BM": 64, "BN": 256, "WGS": 1, "STAGES": 3, "PERSIST": 0, "SPLITK": 1}):
        err, tol = check_solver(FWD, p, seed=7, config=cfg)
        assert err <= tol, f"config={cfg}: relative error {err:.3g} > {tol:.1g}"


PERSIST_CASES = [
    # several M tiles per persistent block (tiles > blocks that fit), tails in M, N and K
    (dict(n=7, c=24, k=40, in_size=(61, 67), filter_size=3, pads=1), {"BM": 64, "BN": 64, "WGS": 1, "STAGES": 8}),
    (dict(n=10, c=64, k=64, in_size=(64, 64), filter_size=3, pads=1), {"BM": 128, "BN": 64, "WGS": 2, "STAGES": 8}),
    (dict(n=10, c=64, k=64, in_size=(64, 64), filter_size=3, pads=1), {"BM": 128, "BN": 64, "WGS": 2, "STAGES": 3}),
    (dict(n=4, c=32, k=120, in_size=(70, 66), filter_size=1), {"BM": 128, "BN": 128, "WGS": 2, "STAGES": 5}),
    (TAILS["tail_mnk"], {"BM": 64, "BN": 128, "WGS": 1, "STAGES": 6}),
]


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("kw,cfg", PERSIST_CASES, ids=[f"persist{i}" for i in range(len(PERSIST_CASES))])
def test_hopper_persistent(kw, cfg, dt):
    p = _nhwc(dt, **kw)
    cfg = dict(cfg, PERSIST=1, SPLITK=1)
    assert FWD.is_valid_config(p, cfg)
    err, tol = check_solver(FWD, p, seed=11, config=cfg)
    assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


# -- the producer warpgroup of the forward kernel (WSPEC = 1; F, and B through its phases) --------------

FWD_WSPEC_TILES = ((64, 64, 1), (64, 128, 1), (64, 256, 1), (128, 64, 2), (128, 128, 2), (128, 256, 2), (256, 128, 2),
                   (128, 128, 1), (256, 64, 2))


def test_fwd_producer_warpgroup_builds(no_gpu_arch):
    """WSPEC = 1: one more warpgroup in the block and the WSPEC macro; two blocks per SM only for 32 accumulators a
    thread (three warpgroups cap a thread at 80 registers); the mbarriers' static shared memory counted; every
    tile shape, persistent, split and a B phase compile for sm_90a (NVRTC, no GPU)."""
    p = _nhwc(**R50_LARGE_3x3)
    for (bm, bn, wgs), per in ((t, 0) for t in FWD_WSPEC_TILES):
        cfg = dict(_cfg(bm, bn, wgs, 4, wspec=1), PERSIST=per)
        k = FWD.get_solution(p, cfg).kernels[0]
        assert k.block == ((wgs + 1) * 128, 1, 1) and dict(k.macros)["WSPEC"] == "1"
        acc = bm // (64 * wgs) * bn // 2
        assert dict(k.macros)["MIN_BLOCKS"] == ("2" if acc <= 32 and 2 * (hb.smem_bytes(p, cfg) + 1024) <= 228 * 1024
                                                else "1")
    per = {"BM": 256, "BN": 64, "WGS": 2, "STAGES": 3, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 0}
    assert FWD.is_valid_config(p, per) and not FWD.is_valid_config(p, dict(per, BM=256, STAGES=4))   # smem
    nvrtc_or_skip()
    builds = [FWD.get_solution(p, per).kernels[0], *FWD.get_solution(_nhwc(**R50_SMALL_3x3), _cfg(128, 128, 2, 4, 3, 1)).kernels,
              *BWD.get_solution(_b("BF16", **BWD_CASES["r50_3x3s2"]), _cfg(128, 64, 2, 3, 1, 1)).kernels]
    for bm, bn, wgs in FWD_WSPEC_TILES:
        builds.append(FWD.get_solution(_nhwc("BF16", **TAILS["k320"]), _cfg(bm, bn, wgs, 3, 1, 1)).kernels[0])
    assert_cubins(builds, "sm_90")


def _wspec_variants(solver, p, tiles, extra=True):
    """WSPEC = 1 configs of ``p``: each tile at 3 and 6 stages (one and four stages of copies in flight),
    unsplit; with ``extra``, two tiles also split in 3 and persistent where valid."""
    out = []
    for bm, bn, wgs in tiles:
        cfgs = [_cfg(bm, bn, wgs, 3, 1, 1), _cfg(bm, bn, wgs, 6, 1, 1)]
        if extra and (bm, bn) in ((64, 128), (128, 64)):
            cfgs += [_cfg(bm, bn, wgs, 4, 3, 1), dict(_cfg(bm, bn, wgs, 5, 1, 1), PERSIST=1)]
        out += [c for c in cfgs if solver.is_valid_config(p, c)]
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(TAILS))
def test_hopper_fwd_producer_warpgroup(name, dt):
    """WSPEC = 1 on every tile shape, against the float64 reference with poisoned outputs."""
    p = _nhwc(dt, **TAILS[name])
    cfgs = _wspec_variants(FWD, p, FWD_WSPEC_TILES)
    assert len(cfgs) >= 8
    for cfg in cfgs:
        err, tol = check_solver(FWD, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("kw,cfg", PERSIST_CASES, ids=[f"persist{i}" for i in range(len(PERSIST_CASES))])
def test_hopper_persistent_producer_warpgroup(kw, cfg, dt):
    """Persistent blocks with the producer warpgroup: several M tiles per block, the stage stream crossing
    tiles, the consumers' own epilogue barriers."""
    p = _nhwc(dt, **kw)
    cfg = dict(cfg, PERSIST=1, SPLITK=1, WSPEC=1)
    assert FWD.is_valid_config(p, cfg)
    err, tol = check_solver(FWD, p, seed=13, config=cfg)
    assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", ("r50_3x3s2", "7x7s2", "5x3_s2x1", "tail_mnk", "1x7", "wide_c_s2"))
def test_hopper_bwd_producer_warpgroup(name, dt):
    """B through its stride phases (w read in place, MN-major) with WSPEC = 1."""
    p = _b(dt, **BWD_CASES[name])
    cfgs = _wspec_variants(BWD, p, ((64, 128, 1), (128, 64, 2), (128, 256, 2), (256, 128, 2)))
    assert cfgs
    for cfg in cfgs:
        err, tol = check_solver(BWD, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


# -- backward data by stride phases: the forward kernel on dy with each phase's reversed sub-filter -----

BWD_CASES = {**{k: v for k, v in TAILS.items() if k != "wide_c"},
             "wide_c_s2": TAILS["wide_c"],
             "r50_3x3": dict(n=2, c=64, k=64, in_size=(14, 14), filter_size=3, pads=1),
             "r50_3x3s2": dict(n=2, c=64, k=64, in_size=(14, 14), filter_size=3, pads=1, strides=2),
             "odd_3x3s2": dict(n=3, c=24, k=40, in_size=(13, 11), filter_size=3, pads=1, strides=2),
             "7x7s2": dict(n=2, c=16, k=64, in_size=(23, 22), filter_size=7, pads=3, strides=2),
             "3x3s3_p0": dict(n=2, c=32, k=16, in_size=(12, 14), filter_size=3, strides=3),
             "1x1_s3": dict(n=2, c=16, k=24, in_size=(10, 11), filter_size=1, strides=3),
             "5x3_s2x1": dict(n=2, c=16, k=32, in_size=(12, 9), filter_size=(5, 3), pads=(2, 1), strides=(2, 1)),
             "1x7": dict(n=2, c=16, k=24, in_size=(9, 17), filter_size=(1, 7), pads=(0, 3)),
             # a filter as wide as its stride over an odd size (wav2vec 2.0's feature encoder): the phase of the
             # first tap has one pixel more than dy (the forward never reads dx's last column), so its 1x1 view is
             # not dy's dense matrix (the copy engine reads dy through the im2col map, zeros past its width)
             "1x2_s2_odd": dict(n=2, c=64, k=64, in_size=(1, 199), filter_size=(1, 2), strides=(1, 2)),
             "2x2_s2_odd": dict(n=2, c=64, k=128, in_size=(15, 13), filter_size=2, strides=2)}


FB_THREE_CASES = {"F": {"r50_1024_14_1x1": dict(n=32, c=1024, k=512, in_size=(14, 14), filter_size=1),
                        "tail_mnk": TAILS["tail_mnk"], "k320": TAILS["k320"],
                        "3x3_c128": dict(n=3, c=128, k=136, in_size=(15, 13), filter_size=3, pads=1)},
                  "B": {"r50_3x3s2": BWD_CASES["r50_3x3s2"], "tail_mnk": TAILS["tail_mnk"],
                        "3x3s2_c128": dict(n=3, c=128, k=64, in_size=(15, 13), filter_size=3, pads=1, strides=2)}}
THREE_IDS = [(d, n) for d in "FB" for n in sorted(FB_THREE_CASES[d])]


def test_three_warpgroup_configs():
    """WGS = 3 (192-row tiles, one m64 block a warpgroup) only with the producer warpgroup, BN <= 128 and no
    ping-pong; in the F and B spaces (the copy engine's and the producer's cp.async loads, persistent and split)."""
    p = _nhwc(**FB_THREE_CASES["F"]["r50_1024_14_1x1"])
    cfg = {"BM": 192, "BN": 128, "WGS": 3, "STAGES": 4, "PERSIST": 0, "SPLITK": 1, "WSPEC": 1, "TMA": 1, "PINGPONG": 0}
    assert FWD.is_valid_config(p, cfg) and hb.tiles(p, cfg) == 132 and hb.threads(cfg) == 512
    assert FWD.is_valid_config(p, dict(cfg, PERSIST=1)) and FWD.is_valid_config(p, dict(cfg, TMA=0))
    for bad in (dict(cfg, WSPEC=0, TMA=0), dict(cfg, BN=256), dict(cfg, BM=128), dict(cfg, PERSIST=1, PINGPONG=1),
                dict(cfg, BM=192, WGS=2)):
        assert not FWD.is_valid_config(p, bad), bad
    for solver, q in ((FWD, p), (BWD, _b(**FB_THREE_CASES["B"]["3x3s2_c128"]))):
        three = [c for c in solver.config_space(q) if c["WGS"] == 3]
        assert three and all(c["BM"] == 192 and c["BN"] <= 128 and c["WSPEC"] and not c["PINGPONG"] for c in three)
        # PERSIST = 2: the filter resident (test_resident_b.py), where its K tiles fit
        assert {c["TMA"] for c in three} == {0, 1} and {0, 1} <= {c["PERSIST"] for c in three} <= {0, 1, 2}


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("direction,name", THREE_IDS, ids=[f"{d}-{n}" for d, n in THREE_IDS])
def test_hopper_three_warpgroups(direction, name, dt):
    """F, and B through its stride phases, on three consumer warpgroups (WGS = 3, BM = 192) against the float64
    reference: the copy engine and the producer's cp.async, persistent (several tiles a block) and split, BN 64 and
    128; M tails of a last tile partly past the output."""
    solver = FWD if direction == "F" else BWD
    p = (_nhwc if direction == "F" else _b)(dt, **FB_THREE_CASES[direction][name])
    base = {"BM": 192, "BN": 128, "WGS": 3, "STAGES": 4, "PERSIST": 0, "SPLITK": 1, "WSPEC": 1, "TMA": 1,
            "PINGPONG": 0}
    ran = 0
    for extra in ({}, {"TMA": 0}, {"BN": 64, "STAGES": 5}, {"PERSIST": 1}, {"PERSIST": 1, "BN": 64, "STAGES": 6},
                  {"SPLITK": 3}, {"SPLITK": 2, "TMA": 0}, {"TMA": 0, "BN": 64, "STAGES": 5}, {"TMA": 0, "PERSIST": 1}):
        cfg = dict(base, **extra)
        if not solver.is_valid_config(p, cfg):
            continue
        err, tol = check_solver(solver, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"
        ran += 1
    assert ran >= 3

def _sub_filter_like_load_b(w, mac):
    """The B operand that kernels_src/implicit_gemm_hopper_fwd.cu's load_b reads in place with B_MN = 1,
    row by row with its index algebra and the phase build's macros, as the view's KYXC filter: row
    kk = (tap, k) of the GEMM, tap = (a, b), is the run of channels at w's flat offset
    k*BW_FY*BW_FX*P_K + (r*BW_FX + s)*P_K, r = BW_R0 + (P_Y-1-a)*BW_SH, s = BW_S0 + (P_X-1-b)*BW_SW."""
    g = {k: int(mac[k]) for k in ("P_Y", "P_X", "P_C", "P_K", "BW_R0", "BW_S0", "BW_SH", "BW_SW", "BW_FY", "BW_FX")}
    assert mac["B_MN"] == "1" and w.shape == (g["P_C"], g["BW_FY"], g["BW_FX"], g["P_K"])
    flat = w.reshape(-1)
    sub = np.full((g["P_K"], g["P_Y"], g["P_X"], g["P_C"]), np.nan)
    for kk in range(g["P_Y"] * g["P_X"] * g["P_C"]):
        tap, k = divmod(kk, g["P_C"])
        a, b = divmod(tap, g["P_X"])
        r, s = g["BW_R0"] + (g["P_Y"] - 1 - a) * g["BW_SH"], g["BW_S0"] + (g["P_X"] - 1 - b) * g["BW_SW"]
        off = k * g["BW_FY"] * g["BW_FX"] * g["P_K"] + (r * g["BW_FX"] + s) * g["P_K"]
        sub[:, a, b, k] = flat[off:off + g["P_K"]]
    return sub


def _phases_like_kernels(p, dy, w):
    """dx as the solution's kernels compute it, in float64: each phase's forward view on the sub-filter
    its build reads from w written to that phase's pixels (dy read at its real size: zero beyond it),
    the rest zero (the zero kernel)."""
    from miofind.reference import conv_reference
    from miofind.solvers.implicit_gemm_hopper_bwd import runs
    builds = [dict(k.macros) for k in BWD.get_solution(p).kernels if k.name == "igemm_hopper_fwd"]
    assert len(builds) == len(runs(p))
    dx = np.full(p.x_shape, np.nan)
    zero = np.ones(p.x_shape, bool)
    for ph, mac in zip(runs(p), builds):
        v = ph.fwd
        sub = _sub_filter_like_load_b(w, mac)
        assert sub.shape == v.w_shape and not np.isnan(sub).any()
        x = np.zeros(v.x_shape)
        x[:, :dy.shape[1], :dy.shape[2], :] = dy
        y = conv_reference(v, x, sub)
        assert y.shape == (p.n, *ph.size, p.c)
        sl = (slice(None), slice(ph.a, None, p.strides[0]), slice(ph.b, None, p.strides[1]), slice(None))
        assert dx[sl].shape == y.shape
        dx[sl] = y
        zero[sl] = False
        off = np.zeros(p.x_shape, bool)
        off.reshape(-1)[ph.y_offset] = True             # the phase's first pixel, channel 0
        assert off[0, ph.a, ph.b, 0]
    hi, wi = np.arange(p.in_size[0]), np.arange(p.in_size[1])        # igemm_hopper_bwd_zero's predicate
    zeroed = ((hi + p.pads[0]) % p.strides[0] >= p.filter_size[0])[:, None] | \
             ((wi + p.pads[1]) % p.strides[1] >= p.filter_size[1])[None, :]
    assert np.array_equal(zero, np.broadcast_to(zeroed[None, :, :, None], zero.shape))
    dx[zero] = 0.0
    return dx


@pytest.mark.parametrize("name", sorted(BWD_CASES))
def test_bwd_phases_match_reference(no_gpu_arch, name):
    """CPU: the stride phases' forward views on the sub-filters their builds read give the float64 dx."""
    from miofind.reference import conv_reference

    p = ProblemDescription.make("B", layout="NHWC", dtype="FP16", **BWD_CASES[name])
    assert BWD.applicability(p), BWD.applicability(p).reason
    rng = np.random.default_rng(3)
    dy, w = (rng.uniform(-1, 1, sh) for sh in p.io_shapes()[:2])
    np.testing.assert_allclose(_phases_like_kernels(p, dy, w), conv_reference(p, dy, w), rtol=1e-12, atol=1e-12)


def test_bwd_phase_geometry(no_gpu_arch):
    """3x3 stride 2 pad 1: four phases of 1, 2, 2 and 4 taps (9 in all, none wasted); 1x1 stride 2: one
    phase of work and a zero kernel for the other three; stride 1: one dense phase, as before phases."""
    from miofind.solvers.implicit_gemm_hopper_bwd import phases, runs
    p = _b(n=2, c=64, k=64, in_size=(14, 14), filter_size=3, pads=1, strides=2)
    ph = phases(p)
    assert [(x.a, x.b, x.taps) for x in ph] == [(1, 1, (2, 2)), (1, 0, (2, 1)), (0, 1, (1, 2)), (0, 0, (1, 1))]
    assert sum(math.prod(x.taps) for x in ph) == 9 and all(x.size == (7, 7) for x in ph)
    assert [(x.r0, x.s0) for x in ph] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [x.fwd.pads for x in ph] == [(0, 0), (0, 0), (0, 0), (0, 0)] and ph[0].fwd.out_size == (7, 7)
    sol = BWD.get_solution(p)
    assert [k.name for k in sol.kernels] == ["igemm_hopper_fwd"] * 4 and sol.workspace_bytes == 0
    mac = dict(sol.kernels[0].macros)
    assert (mac["P_HI"], mac["P_HO"], mac["YS_W"], mac["YS_H"], mac["YS_N"]) == ("7", "7", "128", str(2 * 14 * 64), str(14 * 14 * 64))
    assert [(m["B_MN"], m["BW_R0"], m["BW_S0"], m["BW_SH"], m["BW_FY"]) for m in (dict(k.macros) for k in sol.kernels)] == [
        ("1", "0", "0", "2", "3"), ("1", "0", "1", "2", "3"), ("1", "1", "0", "2", "3"), ("1", "1", "1", "2", "3")]
    one = _b(n=2, c=96, k=136, in_size=(14, 13), filter_size=1, strides=2)
    assert len(runs(one)) == 1 and [k.name for k in BWD.get_solution(one).kernels] == [
        "igemm_hopper_bwd_zero", "igemm_hopper_fwd"]
    s1 = _b(n=2, c=64, k=64, in_size=(14, 14), filter_size=3, pads=1)
    (only,) = phases(s1)
    assert only.fwd.out_size_override is None and only.fwd.pads == (1, 1) and only.fwd.in_size == (14, 14)
    assert [k.name for k in BWD.get_solution(s1).kernels] == ["igemm_hopper_fwd"]


def test_bwd_rejections(no_gpu_arch):
    base = dict(n=2, c=16, k=24, in_size=(9, 9), filter_size=3, pads=1)
    for kw, why in ((dict(strides=2, dilations=2), "dilation"), (dict(filter_size=1), "pads"),
                    (dict(c=12), "multiples of 8"), (dict(strides=9, filter_size=9, in_size=(20, 20)), "strides")):
        a = BWD.applicability(ProblemDescription.make("B", layout="NHWC", dtype="FP16", **{**base, **kw}))
        assert not a and why in a.reason
    assert not BWD.applicability(ProblemDescription.make("F", layout="NHWC", dtype="FP16", **base))
    sol = BWD.get_solution(ProblemDescription.make("B", layout="NHWC", dtype="BF16", **base))
    assert [k.name for k in sol.kernels] == ["igemm_hopper_fwd"] and dict(sol.kernels[0].macros)["B_MN"] == "1"
    assert "-arch=sm_90a" in sol.kernels[0].compile_options()


def test_nvrtc_sm90a_bwd_phases():
    """Every strided case's kernels (zero, each phase's forward build, split too) compile for sm_90a."""
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    for name in ("r50_3x3s2", "1x1_s2", "7x7s2", "5x3_s2x1", "1x2_s2_odd", "2x2_s2_odd"):
        p = _b("BF16" if name == "7x7s2" else "FP16", **BWD_CASES[name])
        for cfg in (None, _cfg(128, 64, 2, 4, 3)):
            if cfg is not None and not BWD.is_valid_config(p, cfg):
                continue
            for k in BWD.get_solution(p, cfg).kernels:
                assert nvrtc_compile(k, arch="sm_90")[:4] == b"\x7fELF", (name, k.name)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(BWD_CASES))
def test_hopper_bwd(name, dt):
    p = ProblemDescription.make("B", layout="NHWC", dtype=dt, **BWD_CASES[name])
    err, tol = check_solver(BWD, p, seed=5)
    assert err <= tol, f"{p.key()}: relative error {err:.3g} > {tol:.1g}"


def test_index_width_at_the_boundary(no_gpu_arch):
    """32-bit offsets while every tensor has fewer than 2^31 - 1 elements, 64-bit from there (F and B)."""
    # largest tensor: n x 256 x 256 x 64 elements (x for F; dy and dx alike for B)
    for d, solver in (("F", FWD), ("B", BWD), ("W", WRW)):
        for n, index_t in ((511, "int"), (512, "long long")):
            p = ProblemDescription.make(d, n=n, c=64, k=64, in_size=(256, 256), filter_size=3, pads=1,
                                        layout="NHWC", dtype="FP16")
            assert solver.applicability(p)
            assert {dict(k.macros)["INDEX_T"] for k in solver.get_solution(p).kernels if "INDEX_T" in dict(k.macros)} == {index_t}


# -- backward weights: MN-major wgmma operands, split-K over the output pixels ------------------------

def _w(dt="FP16", **kw):
    return ProblemDescription.make("W", layout="NHWC", dtype=dt, **kw)


def test_wrw_configs_and_split():
    from miofind.solvers import implicit_gemm_hopper_wrw as hw
    p = _w(n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
    d = WRW.default_config(p)
    assert d == {"BM": 64, "BN": 128, "WGS": 1, "STAGES": 5, "SPLITK": d["SPLITK"], "CLUSTER": 1, "WSPEC": 1, "TMA": 1,
                 "ST16": 0, "RG": 4} and d["SPLITK"] > 8
    # the copy engine needs C % 64: otherwise the cp.async default of the same tile and split
    d40 = WRW.default_config(_w(n=32, c=40, k=64, in_size=(56, 56), filter_size=3, pads=1))
    assert (d40["WSPEC"], d40["TMA"]) == (0, 0)
    space = list(WRW.config_space(p))
    assert len(space) > 20 and d in space and all(WRW.is_valid_config(p, c) for c in space)
    assert {c["SPLITK"] for c in space} >= {1, d["SPLITK"]}
    assert not WRW.is_valid_config(p, dict(d, STAGES=7)) and not WRW.is_valid_config(p, dict(d, BN=96))
    assert not WRW.is_valid_config(p, dict(d, SPLITK=0)) and not WRW.is_valid_config(p, dict(d, PERSIST=0))
    # effective split: every chunk non-empty, chunks x tiles per chunk cover the 64-pixel tiles
    jt = -(-32 * 56 * 56 // 64)
    for sk in (1, 3, 7, 100, 256):
        eff, per = hw.split_geometry(p, sk)
        assert eff <= sk and (eff - 1) * per < jt <= eff * per
    # the measured default rule: 1x1 stride 1 on one warpgroup, 3x3 on two; no split for a 1568-pixel reduction
    d1 = WRW.default_config(_w(n=32, c=512, k=128, in_size=(28, 28), filter_size=1))
    assert (d1["BM"], d1["WGS"]) == (64, 1) and 1 < d1["SPLITK"] <= 392 // hw.MIN_JT_PER_SPLIT
    d3 = WRW.default_config(_w(n=32, c=256, k=256, in_size=(14, 14), filter_size=3, pads=1))
    assert (d3["BM"], d3["BN"], d3["WGS"]) == (128, 128, 2)
    assert WRW.default_config(_w(n=32, c=2048, k=512, in_size=(7, 7), filter_size=1))["SPLITK"] == 1
    # ST16 (dw through shared memory, 16-byte stores): unsplit and without a cluster only, the default there; a config
    # stored before it is read as ST16 = 0
    assert WRW.default_config(_w(n=32, c=2048, k=512, in_size=(7, 7), filter_size=1))["ST16"] == 1
    assert not WRW.is_valid_config(p, dict(d, ST16=1)) and WRW.is_valid_config(p, dict(d, SPLITK=1, ST16=1))
    assert {c["ST16"] for c in space if hw.split_geometry(p, c["SPLITK"])[0] == 1 and c["CLUSTER"] == 1} == {0, 1}
    assert all(not c["ST16"] for c in space if hw.split_geometry(p, c["SPLITK"])[0] > 1 or c["CLUSTER"] > 1)
    old = {k: v for k, v in dict(d, SPLITK=1).items() if k != "ST16"}
    assert WRW.legacy_config(old)["ST16"] == 0 and WRW.is_valid_config(p, old)
    assert "ST16" in dict(WRW.get_solution(p, dict(d, SPLITK=1, ST16=1)).kernels[0].macros)
    sol = WRW.get_solution(p, dict(d, SPLITK=1))
    assert [k.name for k in sol.kernels] == ["igemm_hopper_wrw"] and sol.workspace_bytes == 0
    sol = WRW.get_solution(p, d)
    eff = hw.split_geometry(p, d["SPLITK"])[0]
    assert [k.name for k in sol.kernels] == ["igemm_hopper_wrw", "igemm_hopper_wrw_reduce"]
    assert sol.kernels[0].grid == (1 * 5, eff, 1) and sol.workspace_bytes >= eff * 64 * 576 * 4
    assert "-arch=sm_90a" in sol.kernels[0].compile_options() and WRW.workspace_bytes(p, d) == sol.workspace_bytes


def test_wrw_reduce_groups():
    """RG, the split's reduce groups: derived from the effective split (4 below 64 planes, 8 from 64, 16 from 128), not
    searched,
    the reduce's macro and grid (a block sums 256 / RG float4 columns); a config stored before it reads as RG = 4 and
    builds the reduce it ran; more groups than planes, or other values, are not valid."""
    from miofind.solvers import implicit_gemm_hopper_wrw as hw

    p = _w(n=32, c=64, k=64, in_size=(56, 56), filter_size=1)          # 1568 j tiles
    base = dict(WRW.default_config(p), SPLITK=1, ST16=0)
    # requested splits -> effective: 64 -> 63 planes, 70 -> 69, 127 -> 121, 131 -> 131, 256 -> 224
    assert [hw.split_geometry(p, s)[0] for s in (64, 70, 127, 131, 256)] == [63, 69, 121, 131, 224]
    assert [hw.red_groups(p, dict(base, SPLITK=s)) for s in (1, 33, 64, 70, 127, 131, 256)] == [4, 4, 4, 8, 8, 16, 16]
    space = list(WRW.config_space(p))
    assert all(c["RG"] == hw.red_groups(p, c) for c in space) and {c["RG"] for c in space} >= {4, 8, 16}
    cfg = dict(base, SPLITK=131, RG=16)
    assert WRW.is_valid_config(p, cfg)
    red = WRW.get_solution(p, cfg).kernels[1]
    assert dict(red.macros)["RED_GROUPS"] == "16" and red.grid == (-(-64 * 64 // 4 // 16), 1, 1)
    old = {k: v for k, v in cfg.items() if k != "RG"}
    assert WRW.legacy_config(old)["RG"] == 4 and WRW.is_valid_config(p, old)
    red4 = WRW.get_solution(p, old).kernels[1]
    assert dict(red4.macros)["RED_GROUPS"] == "4" and red4.grid == (-(-64 * 64 // 4 // 64), 1, 1)
    for bad in (dict(cfg, RG=2), dict(cfg, RG=64), dict(cfg, SPLITK=8, RG=16)):
        assert not WRW.is_valid_config(p, bad)
    assert WRW.is_valid_config(p, dict(cfg, SPLITK=1, RG=4))
    # a generic build (cold start) rounds the default split down and keeps the reduce the split's binary was built with
    from miofind.generic import generic_config
    d = WRW.default_config(p)
    g = generic_config(WRW, p, None)
    assert d["RG"] == hw.red_groups(p, d) and g == dict(d, SPLITK=64, RG=4) and WRW.is_valid_config(p, g)


@pytest.mark.gpu
@pytest.mark.parametrize("splitk,rg", [(131, 16), (70, 8), (131, 4)])
def test_wrw_reduce_groups_gpu(splitk, rg):
    """The split's reduce at 16, 8 and 4 thread groups (131 and 69 partial planes) against the float64 reference, on a
    NaN-poisoned output: every element of dw written, within the FP16 tolerance."""
    from miofind.solvers import implicit_gemm_hopper_wrw as hw

    p = _w(n=32, c=64, k=64, in_size=(56, 56), filter_size=1)
    cfg = dict(WRW.default_config(p), SPLITK=splitk, RG=rg, ST16=0)
    assert WRW.is_valid_config(p, cfg) and dict(WRW.get_solution(p, cfg).kernels[1].macros)["RED_GROUPS"] == str(rg)
    assert rg == 4 or hw.red_groups(p, cfg) == rg
    err, tol = check_solver(WRW, p, seed=splitk * 100 + rg, config=cfg)
    assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


def test_wrw_cluster_split():
    """The cluster split: grid.y = each chunk's cluster of blocks, each ceil(chunk's j tiles / CLUSTER) tiles; unsplit
    no workspace and no reduce kernel, with SPLITK > 1 the chunks' partial planes and the reduce; 2 to 8 blocks, 2 j
    tiles a block at least; a config stored before it (no CLUSTER key) is read as CLUSTER = 1."""
    from miofind.solvers import implicit_gemm_hopper_wrw as hw

    p = _w(n=32, c=512, k=512, in_size=(7, 7), filter_size=3, pads=1)        # 1568 pixels: 25 j tiles
    cfg = {"BM": 128, "BN": 128, "WGS": 2, "STAGES": 4, "SPLITK": 1, "CLUSTER": 4}
    assert WRW.is_valid_config(p, cfg)
    sol = WRW.get_solution(p, cfg)
    mac = dict(sol.kernels[0].macros)
    assert [k.name for k in sol.kernels] == ["igemm_hopper_wrw"] and sol.workspace_bytes == 0
    assert sol.kernels[0].grid == (4 * 36, 4, 1)
    assert (mac["CLUSTER"], mac["JT_PER"], mac["JT_R"], mac["SPLITK"]) == ("4", "25", "7", "1")
    assert "CLUSTER" not in dict(WRW.get_solution(p, dict(cfg, CLUSTER=1)).kernels[0].macros)
    assert WRW.is_valid_config(p, dict(cfg, CLUSTER=8))
    assert WRW.is_valid_config(p, dict(cfg, CLUSTER=3)) and WRW.is_valid_config(p, dict(cfg, CLUSTER=7))
    # with a global split: chunks of 13 and 12 j tiles, each over a cluster of 4 (4 and 3 tiles a block)
    both = dict(cfg, SPLITK=2)
    sol = WRW.get_solution(p, both)
    mac = dict(sol.kernels[0].macros)
    assert [k.name for k in sol.kernels] == ["igemm_hopper_wrw", "igemm_hopper_wrw_reduce"]
    assert sol.kernels[0].grid == (4 * 36, 2 * 4, 1) and sol.workspace_bytes >= 2 * 512 * 4608 * 4
    assert (mac["CLUSTER"], mac["JT_PER"], mac["JT_R"], mac["SPLITK"]) == ("4", "13", "4", "2")
    for bad in (dict(cfg, SPLITK=4), dict(cfg, CLUSTER=9), dict(cfg, CLUSTER=16)):    # SPLITK 4: 7 tiles a chunk
        assert not WRW.is_valid_config(p, bad)
    short = _w(n=4, c=64, k=256, in_size=(14, 14), filter_size=1)            # 13 j tiles: not 2 a block over 8
    assert WRW.is_valid_config(short, dict(cfg, CLUSTER=4)) and not WRW.is_valid_config(short, dict(cfg, CLUSTER=8))
    tiny = _w(n=1, c=64, k=64, in_size=(8, 8), filter_size=3, pads=1)         # 1 j tile: no cluster
    assert not WRW.is_valid_config(tiny, dict(cfg, BM=64, BN=64, WGS=1))
    space = list(WRW.config_space(p))
    assert {c["CLUSTER"] for c in space} == set(range(1, 9))
    assert not any(c["CLUSTER"] > 1 and c["SPLITK"] > 1 for c in space)      # 144 tiles of 128 x 128 fill the SMs
    legacy = {k: v for k, v in cfg.items() if k != "CLUSTER"}
    assert WRW.is_valid_config(p, legacy) and WRW.get_solution(p, legacy).config == dict(cfg, CLUSTER=1, WSPEC=0, TMA=0,
                                                                                        ST16=0, RG=4)


def test_wrw_cluster_splits():
    """A cluster's splits: unsplit, and those whose blocks come nearest to filling the SMs from below and above."""
    from miofind.solvers import implicit_gemm_hopper_wrw as hw

    p = _w(n=32, c=128, k=512, in_size=(28, 28), filter_size=1)               # 392 j tiles; 512 x 128 of dw
    cfg = {"BM": 256, "BN": 128, "WGS": 2, "STAGES": 4, "SPLITK": 1, "CLUSTER": 1, "WSPEC": 1, "TMA": 1, "ST16": 0,
           "RG": 4}
    assert hw.tiles(p, cfg) == 2 and hw.blocks_per_sm(cfg) == 1
    assert hw.cluster_splits(p, cfg, 8) == [1, 8, 9]          # 2 tiles x 8 blocks x 8 = 128 of 132 SMs; 9: 144
    assert hw.cluster_splits(p, cfg, 2) == [1, 33]            # 2 x 2 x 33 = 132 exactly
    assert WRW.is_valid_config(p, dict(cfg, CLUSTER=8, SPLITK=8))
    space = list(WRW.config_space(p))
    assert dict(cfg, CLUSTER=8, SPLITK=8) in space and dict(cfg, CLUSTER=2, SPLITK=33) in space


def test_wrw_find_configs_alternates():
    """A find measures the default (None) at once and ALTERNATES configs later: the 4-stage configs of the default's
    loads with the least estimate_us, each valid, none the default, in estimate order; limits give the first ones."""
    import json

    from miofind.solvers import implicit_gemm_hopper_wrw as hw
    p = _w(n=32, c=512, k=512, in_size=(14, 14), filter_size=3, pads=1)       # 144 tiles of 128 x 128: two waves
    d = WRW.default_config(p)
    cfgs = WRW.find_configs(p)
    alts = cfgs[1:]
    assert cfgs[0] is None and len(alts) == hw.ALTERNATES and WRW.configs_now == 1
    assert all(WRW.is_valid_config(p, c) and c != d and c["STAGES"] == 4 and (c["WSPEC"], c["TMA"]) == (1, 1)
               for c in alts)
    assert len({json.dumps(c, sort_keys=True) for c in alts}) == len(alts)
    est = [hw.estimate_us(p, c) for c in alts]
    rest = [hw.estimate_us(p, c) for c in hw.space(p, stages=(4,), loads=((1, 1),)) if c not in alts and c != d]
    assert est == sorted(est) and est[-1] <= min(rest)
    assert WRW.find_configs(p, 1) == [None] and WRW.find_configs(p, 2) == cfgs[:2]
    # the model: a second wave of the same blocks costs more; a global split pays its partial planes and reduce
    one = dict(d, BM=128, BN=256, SPLITK=1, CLUSTER=1, STAGES=4)      # 72 tiles: one wave
    two = dict(one, BM=64, BN=128, WGS=1)                            # 288 tiles: three waves
    assert hw.estimate_terms(p, one)[2] == 1 and hw.estimate_terms(p, two)[2] == 3
    split = dict(one, SPLITK=2)
    t = hw.estimate_terms(p, split)
    assert t[3] == 2 * 512 * 4608 * 8 / 1e6 and t[4] == 1 and hw.estimate_us(p, split) > 0
    # where the copy engine cannot serve x (C % 64 != 0), the producer warpgroup's cp.async configs
    p40 = _w(n=32, c=40, k=64, in_size=(56, 56), filter_size=3, pads=1)
    assert all((c["WSPEC"], c["TMA"]) == (1, 0) and WRW.is_valid_config(p40, c) for c in WRW.find_configs(p40)[1:])
    # the space is the same enumeration as before the alternates (config_space = space(p))
    assert list(WRW.config_space(p)) == list(hw.space(p)) and len(list(hw.space(p))) > 100


def test_wrw_eight_stages(no_gpu_arch):
    """8 stages with the copy engine only (its space holds them where the shared memory fits); 7 or more than 8
    nowhere; an 8-stage 64 x 64 tile builds for sm_90a."""
    p = _w(n=32, c=1024, k=512, in_size=(14, 14), filter_size=1)
    c = {"BM": 64, "BN": 64, "WGS": 1, "STAGES": 8, "SPLITK": 1, "CLUSTER": 1, "WSPEC": 1, "TMA": 1, "ST16": 1, "RG": 4}
    assert WRW.is_valid_config(p, c) and WRW.is_valid_config(p, dict(c, ST16=0, SPLITK=2))
    assert not any(WRW.is_valid_config(p, dict(c, STAGES=s)) for s in (7, 9, 10, 12))
    assert not WRW.is_valid_config(p, dict(c, TMA=0)) and WRW.is_valid_config(p, dict(c, TMA=0, STAGES=6))
    assert not WRW.is_valid_config(p, dict(c, TMA=2)) and not WRW.is_valid_config(p, dict(c, TMA=[1]))   # no KeyError
    assert not WRW.is_valid_config(p, dict(c, BM=256, BN=128, WGS=2, ST16=0))      # 8 x 48 KiB: over the SM
    deep = [x for x in WRW.config_space(p) if x["STAGES"] == 8]
    assert deep and all(x["TMA"] == 1 for x in deep) and {(64, 64), (64, 128), (128, 64)} <= {(x["BM"], x["BN"])
                                                                                            for x in deep}
    assert all(x is None or x["STAGES"] <= 6 for x in WRW.find_configs(p))       # the find's configs: unchanged
    nvrtc_or_skip()
    assert_cubins(WRW.get_solution(p, c).kernels, "sm_90a")


def test_wrw_rejections(no_gpu_arch):
    base = dict(n=2, c=16, k=24, in_size=(9, 9), filter_size=3, pads=1)
    for kw, why in ((dict(c=12), "multiples of 8"), (dict(groups=2), "groups")):
        a = WRW.applicability(_w(**{**base, **kw}))
        assert not a and why in a.reason
    assert not WRW.applicability(ProblemDescription.make("B", layout="NHWC", dtype="FP16", **base))
    assert WRW.applicability(_w(**dict(base, strides=2)))


def test_nvrtc_sm90a_wrw_configs():
    """Every (BM, BN, WGS) shape of the backward-weights space builds for sm_90a (NVRTC, no GPU)."""
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    seen = set()
    for dt in ("FP16", "BF16"):
        p = _w(dt, n=4, c=64, k=256, in_size=(15, 13), filter_size=3, pads=1)
        for cfg in WRW.config_space(p):
            shape = (dt, cfg["BM"], cfg["BN"], cfg["WGS"], cfg["SPLITK"] > 1, cfg["CLUSTER"], cfg["WSPEC"], cfg["ST16"])
            if shape in seen:
                continue
            seen.add(shape)
            for k in WRW.get_solution(p, cfg).kernels:
                assert nvrtc_compile(k, arch="sm_90")[:4] == b"\x7fELF"
    assert len(seen) >= 20


WRW_CASES = {**TAILS, "r50_1x1": dict(n=4, c=64, k=256, in_size=(14, 14), filter_size=1),
             "1x7": dict(n=2, c=16, k=24, in_size=(9, 17), filter_size=(1, 7), pads=(0, 3)),
             # a filter as wide as its stride over an odd size (wav2vec 2.0's feature encoder): the phase of the
             # first tap has one pixel more than dy (the forward never reads dx's last column), so its 1x1 view is
             # not dy's dense matrix (the copy engine reads dy through the im2col map, zeros past its width)
             "1x2_s2_odd": dict(n=2, c=64, k=64, in_size=(1, 199), filter_size=(1, 2), strides=(1, 2)),
             "2x2_s2_odd": dict(n=2, c=64, k=128, in_size=(15, 13), filter_size=2, strides=2)}


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(WRW_CASES))
def test_hopper_wrw(name, dt):
    p = _w(dt, **WRW_CASES[name])
    err, tol = check_solver(WRW, p, seed=9)
    assert err <= tol, f"{p.key()}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", ("tail_mnk", "wide_c", "k320", "r50_1x1"))
def test_hopper_wrw_find_configs(name, dt):
    """Every config a find measures (the default and the alternates) against the float64 reference."""
    p = _w(dt, **WRW_CASES[name])
    for cfg in WRW.find_configs(p):
        err, tol = check_solver(WRW, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("name,dt", CFG_CASES, ids=[f"{n}-{d}" for n, d in CFG_CASES])
def test_hopper_wrw_config_sample(name, dt):
    """Sampled configs, the smallest and largest split of every sampled tile included."""
    p = _w(dt, **TAILS[name])
    space = list(WRW.config_space(p))
    rng = np.random.default_rng(zlib.crc32(p.key().encode()))
    picks = {0, len(space) - 1, *rng.choice(len(space), size=min(8, len(space)), replace=False).tolist()}
    for cfg in [space[i] for i in sorted(picks)]:
        err, tol = check_solver(WRW, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", ("tail_mnk", "wide_c", "k320", "r50_1x1"))
def test_hopper_wrw_eight_stages(name, dt):
    """The copy engine's 8-stage configs of every tile the space holds at 8 stages, unsplit and split, against the
    float64 reference."""
    p = _w(dt, **WRW_CASES[name])
    seen, ran = set(), 0
    for cfg in WRW.config_space(p):
        key = (cfg["BM"], cfg["BN"], cfg["WGS"], cfg["SPLITK"] > 1)
        if cfg["STAGES"] != 8 or key in seen:
            continue
        seen.add(key)
        err, tol = check_solver(WRW, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"
        ran += 1
    assert ran >= 4         # wide_c (C = 264: padded columns) holds 4 such tiles, the others 8


@pytest.mark.gpu
def test_hopper_wrw_long_reduction():
    """A ResNet-sized reduction (25088 pixels), split and unsplit, several N and M tiles."""
    p = _w("FP16", n=8, c=64, k=192, in_size=(56, 56), filter_size=3, pads=1)
    for cfg in (None, {"BM": 128, "BN": 256, "WGS": 2, "STAGES": 3, "SPLITK": 1},
                {"BM": 256, "BN": 128, "WGS": 2, "STAGES": 4, "SPLITK": 64},
                {"BM": 128, "BN": 128, "WGS": 2, "STAGES": 4, "SPLITK": 1, "CLUSTER": 4},
                {"BM": 128, "BN": 256, "WGS": 2, "STAGES": 4, "SPLITK": 1, "CLUSTER": 1, "WSPEC": 1, "TMA": 0},
                {"BM": 64, "BN": 128, "WGS": 1, "STAGES": 3, "SPLITK": 16, "CLUSTER": 1, "WSPEC": 1, "TMA": 0},
                {"BM": 128, "BN": 128, "WGS": 2, "STAGES": 5, "SPLITK": 1, "CLUSTER": 2, "WSPEC": 1, "TMA": 0}):
        err, tol = check_solver(WRW, p, seed=13, config=cfg)
        assert err <= tol, f"config={cfg}: relative error {err:.3g} > {tol:.1g}"


WRW_CLUSTER_CASES = {"r50_512_7_3x3": dict(n=32, c=512, k=512, in_size=(7, 7), filter_size=3, pads=1),
                     "odd_3x3s2": dict(n=8, c=24, k=40, in_size=(27, 25), filter_size=3, pads=1, strides=2),
                     "1x1": dict(n=4, c=64, k=256, in_size=(14, 14), filter_size=1)}


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(WRW_CLUSTER_CASES))
def test_hopper_wrw_cluster(name, dt):
    """The cluster split at 2, 4 and 8 blocks, on every tile shape that allows it (a last block with fewer tiles
    included: the 7x7 layer's 25 tiles over 4 and 8 blocks), against the float64 reference."""
    p = _w(dt, **WRW_CLUSTER_CASES[name])
    seen = set()
    for cfg in WRW.config_space(p):
        shape = (cfg["BM"], cfg["BN"], cfg["WGS"], cfg["CLUSTER"])
        if cfg["CLUSTER"] == 1 or shape in seen:
            continue
        seen.add(shape)
        err, tol = check_solver(WRW, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"
    assert seen


WSPEC_TILES = ((64, 64, 1), (64, 128, 1), (64, 256, 1), (128, 64, 2), (128, 128, 2), (128, 256, 2), (256, 128, 2),
               (128, 128, 1), (128, 64, 1))


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted({**TAILS, **WRW_CLUSTER_CASES}))
def test_hopper_wrw_st16(name, dt):
    """ST16 = 1 (dw staged in shared memory, 16-byte stores, tails in K and Y*X*C) on every tile shape, with each
    load kind that applies (cp.async, the producer warpgroup, the copy engine), unsplit, against the float64
    reference."""
    p = _w(dt, **{**TAILS, **WRW_CLUSTER_CASES}[name])
    ran = 0
    for bm, bn, wgs in WSPEC_TILES:
        for ws, tm, st in ((0, 0, 3), (1, 0, 4), (1, 1, 6)):
            cfg = {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "SPLITK": 1, "CLUSTER": 1, "WSPEC": ws, "TMA": tm,
                   "ST16": 1}
            if not WRW.is_valid_config(p, cfg):
                continue
            err, tol = check_solver(WRW, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
            assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"
            ran += 1
    assert ran >= 8


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted({**TAILS, **WRW_CLUSTER_CASES}))
def test_hopper_wrw_producer_warpgroup(name, dt):
    """WSPEC = 1 (a producer warpgroup, mbarrier hand-over) on every tile shape at 3 and 6 stages (one and four
    stages of copies in flight), unsplit; two tiles also split and over a cluster where valid; against the float64
    reference."""
    p = _w(dt, **{**TAILS, **WRW_CLUSTER_CASES}[name])
    ran = 0
    for bm, bn, wgs in WSPEC_TILES:
        variants = ((3, 1, 1), (6, 1, 1)) + (((4, 3, 1), (4, 1, 2)) if (bm, bn) in ((64, 128), (128, 128)) else ())
        for st, sk, cl in variants:
            cfg = {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "SPLITK": sk, "CLUSTER": cl, "WSPEC": 1, "TMA": 0}
            if not WRW.is_valid_config(p, cfg):
                continue
            err, tol = check_solver(WRW, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
            assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"
            ran += 1
    assert ran >= 8



def test_wrw_three_warpgroups_configs():
    """WGS = 3: 192-row tiles (three m64 blocks, one a warpgroup) through the copy engine only, BN <= 128; in the
    space of a problem the copy engine serves, with its splits and clusters; 512 -> 512 @7 3x3 at N = 32 then runs
    3 x 36 = 108 tiles of 192 x 128 (256 x 128: 72, 128 x 128: 144 on 132 SMs)."""
    from miofind.solvers import implicit_gemm_hopper_wrw as hw
    p = _w(**WRW_CLUSTER_CASES["r50_512_7_3x3"])
    cfg = {"BM": 192, "BN": 128, "WGS": 3, "STAGES": 4, "SPLITK": 1, "CLUSTER": 1, "WSPEC": 1, "TMA": 1, "ST16": 1,
           "RG": 4}
    assert WRW.is_valid_config(p, cfg) and hw.tiles(p, cfg) == 108
    sol = WRW.get_solution(p, cfg)
    assert sol.kernels[0].grid == (108, 1, 1) and sol.kernels[0].block == (512, 1, 1)
    assert WRW.is_valid_config(p, dict(cfg, BN=64, STAGES=5)) and WRW.is_valid_config(p, dict(cfg, ST16=0, CLUSTER=2))
    for bad in (dict(cfg, BN=256), dict(cfg, TMA=0, WSPEC=1), dict(cfg, TMA=0, WSPEC=0), dict(cfg, BM=128),
                dict(cfg, BM=256), dict(cfg, BM=192, WGS=2), dict(cfg, STAGES=6)):
        assert not WRW.is_valid_config(p, bad), bad
    space = list(WRW.config_space(p))
    three = [c for c in space if c["WGS"] == 3]
    assert three and all(c["BM"] == 192 and c["BN"] <= 128 and c["TMA"] for c in three)
    assert {c["CLUSTER"] for c in three} > {1} and cfg in space
    # C % 64 != 0: the copy engine with padded columns (test_tma_padded.py), so three-warpgroup tiles too; C % 8 != 0:
    # no Hopper W at all
    narrow = _w(n=32, c=40, k=512, in_size=(7, 7), filter_size=3, pads=1)
    assert all(c["TMA"] for c in WRW.config_space(narrow) if c["WGS"] == 3)
    assert any(c["WGS"] == 3 for c in WRW.config_space(narrow))


WRW_THREE_CASES = {"r50_512_7_3x3": WRW_CLUSTER_CASES["r50_512_7_3x3"],
                   "k200_s2": dict(n=3, c=128, k=200, in_size=(15, 13), filter_size=3, pads=1, strides=2),
                   "1x1_k1000": dict(n=4, c=64, k=1000, in_size=(14, 14), filter_size=1)}


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(WRW_THREE_CASES))
def test_hopper_wrw_three_warpgroups(name, dt):
    """WGS = 3 (192-row tiles, copy engine) against the float64 reference: ST16 and the plain epilogue, BN 64 and
    128, a split, and clusters of 2 and 3 where valid; K = 200 and 1000 leave a last tile of 8 and 40 rows (the rest
    zero-filled by the copy engine and never stored), the 1x1 case reads x through the dense map."""
    p = _w(dt, **WRW_THREE_CASES[name])
    base = {"BM": 192, "BN": 128, "WGS": 3, "STAGES": 4, "SPLITK": 1, "CLUSTER": 1, "WSPEC": 1, "TMA": 1, "ST16": 0}
    ran = 0
    for extra in ({"ST16": 1}, {}, {"BN": 64, "STAGES": 5, "ST16": 1}, {"SPLITK": 3}, {"CLUSTER": 2},
                  {"CLUSTER": 3, "BN": 64}):
        cfg = dict(base, **extra)
        if not WRW.is_valid_config(p, cfg):
            continue
        err, tol = check_solver(WRW, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"
        ran += 1
    assert ran >= 3

# -- split-K of the forward kernel (F, and B through its forward view) -------------------------------

def _cfg(bm, bn, wgs, st, sk=1, wspec=0):
    return {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": 0, "SPLITK": sk, "WSPEC": wspec, "TMA": 0,
            "PINGPONG": 0}


def _b(dt="FP16", **kw):
    return ProblemDescription.make("B", layout="NHWC", dtype=dt, **kw)


R50_SMALL_3x3 = dict(n=32, c=512, k=512, in_size=(7, 7), filter_size=3, pads=1)     # 104 tiles of 128 x 64, 72 K tiles
R50_LARGE_3x3 = dict(n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)     # 784 tiles


def test_split_configs_valid():
    p = _nhwc(**R50_SMALL_3x3)
    base = _cfg(128, 64, 2, 4)
    for sk in (1, 2, 3, 17, hb.MAX_SPLITK):
        assert FWD.is_valid_config(p, dict(base, SPLITK=sk))
    for sk in (0, -1, hb.MAX_SPLITK + 1, True):
        assert not FWD.is_valid_config(p, dict(base, SPLITK=sk))
    p64 = _nhwc(**R50_LARGE_3x3)
    per = {"BM": 128, "BN": 64, "WGS": 2, "STAGES": 8, "PERSIST": 1}
    assert FWD.is_valid_config(p64, dict(per, SPLITK=1)) and not FWD.is_valid_config(p64, dict(per, SPLITK=2))
    # a config written before split-K or the producer warpgroup (stored records, tuned PerfDB entries) reads as
    # the unsplit kernel without a producer that it ran
    for legacy in ({k: v for k, v in base.items() if k != "SPLITK"},
                   {k: v for k, v in base.items() if k not in ("SPLITK", "WSPEC")}):
        assert FWD.is_valid_config(p, legacy) and BWD.is_valid_config(_b(**R50_SMALL_3x3), legacy)
        sol = FWD.get_solution(p, legacy)
        assert sol.config == base and len(sol.kernels) == 1 and FWD.workspace_bytes(p, legacy) == 0
        assert sol.kernels[0].block == (256, 1, 1) and "WSPEC" not in dict(sol.kernels[0].macros)
    assert FWD.is_valid_config(p, dict(base, SPLITK=3, WSPEC=1)) and not FWD.is_valid_config(p, dict(base, WSPEC=2))
    assert not FWD.is_valid_config(p, {k: v for k, v in base.items() if k != "PERSIST"})
    assert not WRW.is_valid_config(_w(**R50_SMALL_3x3), {"BM": 64, "BN": 128, "WGS": 1, "STAGES": 5})   # W's own keys
    # effective chunks: none empty, together they cover the 72 K tiles; odd counts where asked
    for sk in (1, 2, 3, 5, 7, 50, 72, 128):
        eff, per_ = hb.split_geometry(p, sk)
        assert eff <= sk and (eff - 1) * per_ < 72 <= eff * per_
    assert hb.split_geometry(p, 5) == (5, 15) and hb.split_geometry(p, 7) == (7, 11) and hb.split_geometry(p, 50) == (36, 2)
    # partial planes of 2^40 floats or more are refused (chunks x M x N)
    huge = _nhwc(n=1024, c=8, k=4096, in_size=(512, 512), filter_size=1)
    assert FWD.is_valid_config(huge, dict(base, SPLITK=1)) and not FWD.is_valid_config(huge, dict(base, SPLITK=2))


def test_default_split_rule(no_gpu_arch):
    """Small grid with a long reduction: split (the estimate beats the unsplit one); a grid that fills
    the GPU, or a reduction too short for two chunks of MIN_KT_PER_SPLIT K tiles: unsplit."""
    small = _nhwc(**R50_SMALL_3x3)
    d = hb.default_tile(small, copy_engine=False)
    assert (d["BM"], d["BN"], d["PERSIST"]) == (128, 64, 0) and d["SPLITK"] > 1
    # with the copy engine: its 100 persistent 64 x 128 tiles give over half the SMs one, so no split; at
    # batch 1 (8 such tiles) the split stays
    assert FWD.default_config(small) == hb.persistent_tile(small) and hb.tiles(small, hb.persistent_tile(small)) == 100
    one = _nhwc(**dict(R50_SMALL_3x3, n=1))
    assert FWD.default_config(one) == dict(hb.default_tile(one, copy_engine=False), WSPEC=1, TMA=1)
    assert FWD.default_config(one)["SPLITK"] > 1 and not FWD.default_config(one)["PERSIST"]
    tile = dict(d, SPLITK=1)
    assert hb.small_grid(small, tile)
    assert hb.split_estimate_us(small, tile, d["SPLITK"]) < hb.split_estimate_us(small, tile, 1)
    assert hb.split_geometry(small, d["SPLITK"])[1] >= hb.MIN_KT_PER_SPLIT
    large = _nhwc(**R50_LARGE_3x3)
    assert not hb.small_grid(large, dict(FWD.default_config(large), SPLITK=1))
    assert FWD.default_config(large)["SPLITK"] == 1
    assert {c["SPLITK"] for c in FWD.config_space(large)} == {1}          # no split variants for a full grid
    short = _nhwc(n=2, c=64, k=64, in_size=(7, 7), filter_size=1)         # one K tile
    assert hb.small_grid(short, _cfg(128, 64, 2, 4)) is False and FWD.default_config(short)["SPLITK"] == 1
    # the space holds the unsplit tile, the default split, half and twice it (one config per effective split)
    space = list(FWD.config_space(small))
    assert d in space and all(FWD.is_valid_config(small, c) for c in space)
    mine = {c["SPLITK"] for c in space if {k: c[k] for k in ("BM", "BN", "WGS", "STAGES", "WSPEC")} ==
            {k: d[k] for k in ("BM", "BN", "WGS", "STAGES", "WSPEC")} and not c["PERSIST"]}
    assert mine == {1, max(1, d["SPLITK"] // 2), d["SPLITK"], 2 * d["SPLITK"]}
    assert not any(c["PERSIST"] and c["SPLITK"] != 1 for c in space)
    # B: its forward view decides (dy 7x7 x 512 channels, filter 512 -> 512), by the forward's rule: persistent
    # copy-engine tiles where the copy engine serves every phase (K = 520: padded K tiles, hb.padded_default), and
    # without it where padding would add over a third to the reduction (K = 136: 20 K tiles, too few to split)
    db = BWD.default_config(_b(**R50_SMALL_3x3))
    assert db == hb.persistent_tile(small) and BWD.is_valid_config(_b(**R50_SMALL_3x3), db)
    b520 = _b(**dict(R50_SMALL_3x3, k=520))
    assert BWD.default_config(b520) == hb.persistent_tile(BWD.forward_problem(b520))
    b136 = _b(**dict(R50_SMALL_3x3, k=136))
    db136 = BWD.default_config(b136)
    assert db136 == hb.default_tile(BWD.forward_problem(b136), copy_engine=False) and db136["TMA"] == 0
    assert BWD.is_valid_config(b136, db136)


def test_split_solution_and_workspace(no_gpu_arch):
    p = _nhwc(**R50_SMALL_3x3)
    m, n = 32 * 49, 512
    cfg = _cfg(128, 64, 2, 4, 5)
    sol = FWD.get_solution(p, cfg)
    assert [k.name for k in sol.kernels] == ["igemm_hopper_fwd", "igemm_hopper_fwd_reduce"]
    main, red = sol.kernels
    assert main.grid == (13 * 8, 5, 1) and red.grid[0] * red.block[0] * 8 >= m * n > (red.grid[0] - 1) * red.block[0] * 8
    assert dict(main.macros)["SPLITK"] == "5" and dict(main.macros)["KT_PER"] == "15" and red.macros == main.macros
    assert sol.workspace_bytes == FWD.workspace_bytes(p, cfg) == -(-5 * m * n * 4 // 256) * 256
    unsplit = FWD.get_solution(p, dict(cfg, SPLITK=1))
    assert [k.name for k in unsplit.kernels] == ["igemm_hopper_fwd"] and unsplit.workspace_bytes == 0
    assert unsplit.kernels[0].grid == (13 * 8, 1, 1) and "KT_PER" not in dict(unsplit.kernels[0].macros)
    one = _nhwc(**dict(R50_SMALL_3x3, n=1))
    assert FWD.workspace_bytes(one) == FWD.get_solution(one).workspace_bytes > 0            # the default splits
    # B: w read in place, so only a split config's partial planes
    b = _b(dt="BF16", n=2, c=40, k=72, in_size=(15, 13), filter_size=3, pads=1)
    pf = BWD.forward_problem(b)
    cfg = _cfg(128, 64, 2, 4, 3)
    eff = hb.split_geometry(pf, 3)[0]
    assert eff == 3
    sol = BWD.get_solution(b, cfg)
    assert [k.name for k in sol.kernels] == ["igemm_hopper_fwd", "igemm_hopper_fwd_reduce"]
    assert sol.workspace_bytes == BWD.workspace_bytes(b, cfg) == -(-3 * 2 * 15 * 13 * 40 * 4 // 256) * 256
    assert BWD.workspace_bytes(b, dict(cfg, SPLITK=1)) == 0
    assert [k.name for k in BWD.get_solution(b, dict(cfg, SPLITK=1)).kernels] == ["igemm_hopper_fwd"]


def test_nvrtc_sm90a_split_configs():
    """Split builds (GEMM and reduce) of every (BM, BN, WGS) tile, FP16 and BF16, odd chunk counts and a
    problem with 64-bit tensor offsets included, compile for sm_90a (NVRTC, no GPU)."""
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    seen = set()
    for dt in ("FP16", "BF16"):
        p = _nhwc(dt, **RESNET50_SMALL_N["r50_512to512_7_3x3s1"])
        for cfg in FWD.config_space(p):
            shape = (dt, cfg["BM"], cfg["BN"], cfg["WGS"])
            if cfg["PERSIST"] or shape in seen:
                continue
            seen.add(shape)
            sk = 3 if len(seen) % 2 else 2
            sol = FWD.get_solution(p, dict(cfg, SPLITK=sk))
            assert len(sol.kernels) == 2 and sol.kernels[0].grid[1] == sk
            for k in sol.kernels:
                assert nvrtc_compile(k, arch="sm_90")[:4] == b"\x7fELF", (k.name, cfg)
    assert len(seen) >= 10
    wide = _nhwc("FP16", n=512, c=64, k=64, in_size=(256, 256), filter_size=3, pads=1)    # y of 2^31 elements
    sol = FWD.get_solution(wide, _cfg(128, 64, 2, 4, 2))
    assert dict(sol.kernels[0].macros)["INDEX_T"] == "long long" and sol.workspace_bytes >= 2 * 2**31 * 4
    for k in sol.kernels:
        assert nvrtc_compile(k, arch="sm_90")[:4] == b"\x7fELF"
    b = _b("BF16", **BWD_CASES["r50_3x3"])
    for k in BWD.get_solution(b, _cfg(64, 128, 1, 4, 5)).kernels:
        assert nvrtc_compile(k, arch="sm_90")[:4] == b"\x7fELF"


# (problem keywords, tile (BM, BN, WGS, STAGES), effective chunk counts): each count is exact for the
# problem's K tiles (asserted), the last chunk shorter where the count does not divide them
SPLIT_F = [
    (TAILS["k320"], (128, 64, 2, 4), (2, 3, 5)),                                 # 9 K tiles: 5+4, 3x3, 2+2+2+2+1
    (TAILS["wide_c"], (64, 128, 1, 4), (3, 7)),                                  # 38: 13+13+12, 6x6+2
    (TAILS["tail_mnk"], (256, 128, 2, 3), (3,)),                                 # 6, BM = 256: 139 KiB FP32 tile
    (RESNET50_SMALL_N["r50_512to512_7_3x3s1"], (128, 128, 2, 3), (2, 5, 9)),      # 72
    (RESNET50_SMALL_N["r50_1024to256_14_1x1s1"], (128, 256, 2, 3), (3,)),         # 16: 6+6+4, BN = 256
]
SPLIT_B = [
    (BWD_CASES["r50_3x3"], (128, 64, 2, 4), (2, 3, 5)),                          # 9 K tiles
    (BWD_CASES["k320"], (64, 128, 1, 4), (3, 7)),                                # 45: 15x3, 7x6+3
    (BWD_CASES["tail_mnk"], (256, 128, 2, 3), (3,)),                             # 11: 4+4+3
    (RESNET50_SMALL_N["r50_512to2048_7_1x1s1"], (128, 64, 2, 4), (3, 5)),         # 32: 11+11+10, 7x4+4
]


def _split_cases(cases, direction):
    out = []
    for i, (kw, tile, splits) in enumerate(cases):
        for dt in ("FP16", "BF16"):
            out.append(pytest.param(kw, tile, splits, dt, id=f"{direction}{i}-{dt}"))
    return out


@pytest.mark.parametrize("direction,cases", [("F", SPLIT_F), ("B", SPLIT_B)])
def test_split_cases_exact(no_gpu_arch, direction, cases):
    """CPU: every GPU split case is applicable, valid, and runs exactly the chunk count it names."""
    solver = FWD if direction == "F" else BWD
    for kw, tile, splits in cases:
        p = ProblemDescription.make(direction, layout="NHWC", dtype="BF16", **kw)
        assert solver.applicability(p), p.key()
        pf = p if direction == "F" else BWD.forward_problem(p)
        for sk in splits:
            assert solver.is_valid_config(p, _cfg(*tile, sk)) and hb.split_geometry(pf, sk)[0] == sk, (p.key(), tile, sk)
            assert solver.get_solution(p, _cfg(*tile, sk)).kernels[-1].name == "igemm_hopper_fwd_reduce"
    for d, name in SPLIT_DEFAULT:
        solver = FWD if d == "F" else BWD
        assert solver.default_config(ProblemDescription.make(d, layout="NHWC", dtype="BF16", **RESNET50_SMALL_N[name]))["SPLITK"] > 1


def _check_splits(solver, p, tile, splits):
    pf = p if p.direction == "F" else BWD.forward_problem(p)
    for sk in splits:
        cfg = _cfg(*tile, sk)
        assert solver.is_valid_config(p, cfg) and hb.split_geometry(pf, sk)[0] == sk, cfg
        err, tol = check_solver(solver, p, seed=zlib.crc32(repr((p.key(), cfg)).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("kw,tile,splits,dt", _split_cases(SPLIT_F, "F"))
def test_hopper_fwd_split(kw, tile, splits, dt):
    _check_splits(FWD, _nhwc(dt, **kw), tile, splits)


@pytest.mark.gpu
@pytest.mark.parametrize("kw,tile,splits,dt", _split_cases(SPLIT_B, "B"))
def test_hopper_bwd_split(kw, tile, splits, dt):
    _check_splits(BWD, _b(dt, **kw), tile, splits)


SPLIT_DEFAULT = [("F", "r50_512to512_7_3x3s1"), ("F", "r50_2048to512_7_1x1s1"), ("B", "r50_512to512_7_3x3s1"),
                 ("B", "r50_512to2048_7_1x1s1")]


@pytest.mark.gpu
@pytest.mark.parametrize("d,name", SPLIT_DEFAULT, ids=[f"{d}-{n}" for d, n in SPLIT_DEFAULT])
def test_hopper_split_default_deterministic(d, name):
    """The default config of a small-grid ResNet-50 layer (n=2) splits, verifies, and gives bitwise-equal
    outputs on a second run (the reduce sums the chunks in a fixed order)."""
    import cupy

    from miofind.api import Solution, run_solution
    from miofind.verify import poison, random_array

    solver = FWD if d == "F" else BWD
    p = ProblemDescription.make(d, layout="NHWC", dtype="BF16", **RESNET50_SMALL_N[name])
    cfg = solver.default_config(p)
    assert cfg["SPLITK"] > 1
    err, tol = check_solver(solver, p, seed=21)
    assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"
    rng = cupy.random.default_rng(22)
    sa, sb, so = p.io_shapes()
    a, b = random_array(sa, p.dtype, rng), random_array(sb, p.dtype, rng)
    sol = Solution(solver.id, solver.algorithm, 0.0, solver.workspace_bytes(p), cfg, False, p)
    outs = []
    for _ in range(2):
        out = cupy.empty(so, dtype=a.dtype)
        poison(out, p.dtype)
        run_solution(sol, a, b, out)
        outs.append(cupy.asnumpy(out.view(cupy.uint16)))
    assert np.array_equal(outs[0], outs[1])
