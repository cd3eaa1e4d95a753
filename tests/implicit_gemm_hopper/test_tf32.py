"""The Hopper forward with FP32 data and TF32 math (math="tf32": m64nNk8 TF32 wgmma, 32-deep K tiles, FP32 output),
and the TF32 backward data (ConvImplicitGemmHopperBwdTf32: stride phases run by that build on each phase's filter,
rewritten first). CPU: what they claim and reject (strict FP32, the 16-bit solvers, channel counts), tile geometry,
maps, macros, the rewritten filters' layout, and NVRTC builds for sm_90a. GPU: the claimed tails, sampled configs of
every kind (cp.async, producer warpgroup, copy engine, persistent, ping-pong, three warpgroups, split-K), the find's
configs, the fused epilogue, and backward data at strides 1 and 2 (phases no tap reaches included), against the
float64 reference at the TF32 tolerance, with poisoned outputs. Both are offered only with MIOFIND_HOPPER_TF32=1
(their wgmma truncates the FP32 operands to TF32, where cuDNN rounds them): this module turns it on for every test
but the one that checks they are off by default."""

import zlib

import numpy as np
import pytest

from gpu_helpers import FakeKernel, check_solver
from nvrtc_check import nvrtc_or_skip
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.solvers import implicit_gemm_hopper_base as hb

FWD = get_solver("ConvImplicitGemmHopperFwd")
BWD = get_solver("ConvImplicitGemmHopperBwd")
WRW = get_solver("ConvImplicitGemmHopperWrw")
FUSED = get_solver("ConvImplicitGemmHopperFwdBiasActiv")
BWD_TF32 = get_solver("ConvImplicitGemmHopperBwdTf32")

# tails in M, N and K; C a multiple of 4 but not 8; C a multiple of 32 (the copy engine: x as im2col boxes, or a dense
# 1x1 as tiled boxes); a stride-2 1x1; a dilated 5x5; a small grid with a long reduction (split by default)
CASES = {
    "tail_mnk": dict(n=2, c=40, k=72, in_size=(15, 13), filter_size=3, pads=1),
    "c12_k20": dict(n=3, c=12, k=20, in_size=(7, 9), filter_size=3, pads=1),
    "k320": dict(n=2, c=64, k=320, in_size=(12, 12), filter_size=3, pads=1),
    "1x1_dense": dict(n=4, c=96, k=128, in_size=(14, 14), filter_size=1),
    "1x1_s2": dict(n=2, c=96, k=136, in_size=(14, 13), filter_size=1, strides=2),
    "5x5_dil": dict(n=2, c=32, k=24, in_size=(17, 16), filter_size=5, pads=3, dilations=2),
    "r50_7x7": dict(n=1, c=512, k=512, in_size=(7, 7), filter_size=3, pads=1),
}


def _p(direction="F", **kw):
    return ProblemDescription.make(direction, layout="NHWC", dtype="FP32", math="tf32", **kw)



@pytest.fixture(autouse=True)
def hopper_tf32_on(monkeypatch):
    monkeypatch.setenv("MIOFIND_HOPPER_TF32", "1")


def test_off_by_default(no_gpu_arch, monkeypatch):
    """Without MIOFIND_HOPPER_TF32=1 neither solver claims a TF32 problem, and says why; a bad value is named."""
    monkeypatch.delenv("MIOFIND_HOPPER_TF32")
    for solver, d in ((FWD, "F"), (BWD_TF32, "B")):
        a = solver.applicability(_p(d, **CASES["k320"]))
        assert not a and "MIOFIND_HOPPER_TF32=1" in a.reason and "truncates" in a.reason
    assert FWD.applicability(ProblemDescription.make("F", layout="NHWC", dtype="FP16", **CASES["k320"]))
    monkeypatch.setenv("MIOFIND_HOPPER_TF32", "yes")
    with pytest.raises(ValueError, match="MIOFIND_HOPPER_TF32"):
        FWD.applicability(_p(**CASES["k320"]))


def test_claims(no_gpu_arch):
    for name, kw in CASES.items():
        assert FWD.applicability(_p(**kw)), name
    strict = ProblemDescription.make("F", layout="NHWC", dtype="FP32", **CASES["tail_mnk"])
    a = FWD.applicability(strict)
    assert not a and "math=tf32" in a.reason
    a = FWD.applicability(_p(**dict(CASES["c12_k20"], c=6)))
    assert not a and "multiples of 4" in a.reason
    for solver, d in ((BWD, "B"), (WRW, "W")):
        a = solver.applicability(_p(d, **CASES["tail_mnk"]))
        assert not a and "data type FP32" in a.reason
    for name, kw in BWD_CASES.items():
        assert BWD_TF32.applicability(_p("B", **kw)), name
    a = BWD_TF32.applicability(ProblemDescription.make("B", layout="NHWC", dtype="FP32", **CASES["tail_mnk"]))
    assert not a and "math=tf32" in a.reason
    a = BWD_TF32.applicability(ProblemDescription.make("B", layout="NHWC", dtype="FP16", **CASES["tail_mnk"]))
    assert not a and "data type FP16" in a.reason
    fused = ProblemDescription.make("F", layout="NHWC", dtype="FP32", math="tf32", bias=1, activation="relu",
                                    **CASES["tail_mnk"])
    assert FUSED.applicability(fused) and not FWD.applicability(fused)


def test_geometry_and_macros(no_gpu_arch):
    p = _p(**CASES["k320"])
    assert (hb.esize(p), hb.kdepth(p), hb.ktiles(p)) == (4, 32, 18)          # 576 deep: 18 tiles of 32
    p16 = ProblemDescription.make("F", layout="NHWC", dtype="FP16", **CASES["k320"])
    assert (hb.esize(p16), hb.kdepth(p16), hb.ktiles(p16)) == (2, 64, 9)
    assert hb.tma_fits(p) and not hb.tma_fits(_p(**CASES["tail_mnk"]))      # C = 64 / 40 channels
    cfg = {"BM": 128, "BN": 64, "WGS": 2, "STAGES": 4, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 1, "PINGPONG": 1}
    assert hb.smem_bytes(p, cfg) == 4 * 192 * 128 + 2 * 128 * 72 * 4 + 1024            # two FP32 output tiles
    assert hb.smem_bytes(p16, cfg) == 4 * 192 * 128 + 2 * 128 * 72 * 2 + 1024
    assert not FWD.is_valid_config(p, dict(cfg, BN=128)) and FWD.is_valid_config(p16, dict(cfg, BN=128))   # 265 KiB
    mac = dict(FWD.get_solution(p, cfg).kernels[0].macros)
    assert (mac["IS_TF32"], mac["DATA_T"], mac["IS_BF16"]) == ("1", "float", "0")
    assert dict(FWD.get_solution(p16, cfg).kernels[0].macros)["IS_TF32"] == "0"
    x = hb.x_im2col(p, 128)
    assert x.channels == 32 and x.pixels == 128
    d = hb.x_dense(_p(**CASES["1x1_dense"]), 64)
    assert "box=[32, 64]" in d.desc and f"strides=[{96 * 4}]" in d.desc
    for c in FWD.config_space(p):         # every config's staged output tile fits its buffers
        assert FWD.is_valid_config(p, c) and hb.smem_bytes(p, c) <= hb.SMEM_LIMIT
        if not c["PERSIST"]:
            assert c["BM"] * (c["BN"] + 8) * 4 <= c["STAGES"] * (c["BM"] + c["BN"]) * 128


def test_index_width(no_gpu_arch):
    """64-bit offsets from 2^31 elements of the largest tensor, FP32 as 16-bit."""
    for n, index_t in ((511, "int"), (512, "long long")):
        p = _p(n=n, c=64, k=64, in_size=(256, 256), filter_size=3, pads=1)
        assert dict(FWD.get_solution(p).kernels[0].macros)["INDEX_T"] == index_t


def test_nvrtc_sm90a_tf32_configs(no_gpu_arch):
    """One config of every kind in the space builds for sm_90a: tile shape, warpgroups, persistence, producer
    warpgroup, copy engine, ping-pong, split (its reduce kernel too), and the fused epilogue (NVRTC, no GPU)."""
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    seen = set()
    for name in ("k320", "tail_mnk"):
        p = _p(**CASES[name])
        for cfg in FWD.config_space(p):
            kind = tuple(cfg[k] for k in ("BN", "WGS", "PERSIST", "WSPEC", "TMA", "PINGPONG")) + (cfg["SPLITK"] > 1,)
            if kind in seen:
                continue
            seen.add(kind)
            for k in FWD.get_solution(p, cfg).kernels:
                assert nvrtc_compile(k, arch="sm_90")[:4] == b"\x7fELF", (p.key(), cfg, k.name)
    assert len(seen) >= 40 and any(k[4] and k[2] for k in seen) and any(k[-1] for k in seen)
    fused = ProblemDescription.make("F", layout="NHWC", dtype="FP32", math="tf32", bias=1, activation="gelu",
                                    **CASES["r50_7x7"])
    for k in FUSED.get_solution(fused).kernels:           # split by default: the epilogue in the reduce
        assert nvrtc_compile(k, arch="sm_90")[:4] == b"\x7fELF"


# backward data: stride 1 (one phase, all taps), stride 2 (four phases), a 1x1 at stride 2 (phases no tap reaches:
# zeroed), a dilated 5x5, tails (C multiple of 4 only: cp.async loads), a small grid split by default
BWD_CASES = {
    "3x3_s1": dict(n=2, c=64, k=96, in_size=(14, 13), filter_size=3, pads=1),
    "3x3_s2": dict(n=2, c=64, k=96, in_size=(15, 14), filter_size=3, pads=1, strides=2),
    "1x1_s2": dict(n=2, c=36, k=64, in_size=(9, 8), filter_size=1, strides=2),
    "5x5_dil": dict(n=2, c=32, k=64, in_size=(17, 16), filter_size=5, pads=3, dilations=2),
    "tail_mnk": dict(n=3, c=12, k=20, in_size=(9, 7), filter_size=3, pads=1),
    "r50_7x7": dict(n=1, c=512, k=512, in_size=(7, 7), filter_size=3, pads=1),
}


def test_bwd_rewritten_filters(no_gpu_arch):
    """One FP32 element of rewritten filter per element of w, each phase at its offset; the phases read their own
    filter (no B_MN), the kernels the flip first and the zeroing where a phase has no tap; the workspace is the split's
    partial planes (256-byte aligned) then the filters."""
    from miofind.solvers import implicit_gemm_hopper_bwd as hbwd
    from miofind.solvers import implicit_gemm_hopper_bwd_tf32 as ht
    for name, kw in BWD_CASES.items():
        p = _p("B", **kw)
        offs = ht.phase_filter_offsets(p)
        (sh, sw), (fy, fx) = p.strides, p.filter_size
        assert len(offs) == sh * sw and sorted(offs.values())[0] == 0
        assert sum(-(-(fy - r0) // sh) * -(-(fx - s0) // sw) for r0, s0 in offs) == fy * fx
        cfg = BWD_TF32.default_config(p)
        sol = BWD_TF32.get_solution(p, cfg)
        names = [k.name for k in sol.kernels]
        assert names[0] == "igemm_hopper_bwd_flip" and dict(sol.kernels[0].macros)["FK"] == str(p.k)
        assert ("igemm_hopper_bwd_tf32_zero" in names) == (name == "1x1_s2"), names
        mains = [k for k in sol.kernels if k.name == "igemm_hopper_fwd"]
        assert len(mains) == len(hbwd.runs(p)) and all("B_MN" not in dict(k.macros) for k in mains)
        assert all(dict(k.macros)["IS_TF32"] == "1" for k in mains)
        part = -(-BWD_TF32.partials_bytes(p, cfg) // 256) * 256
        assert sol.workspace_bytes == part + ht.flipped_bytes(p) and ht.flipped_bytes(p) >= 4 * p.c * p.k * fy * fx
        assert BWD_TF32.workspace_bytes(p) == sol.workspace_bytes


@pytest.mark.parametrize("name", ("3x3_s1", "3x3_s2", "1x1_s2", "r50_7x7"))
def test_bwd_recipe_reads_the_rewritten_filters(no_gpu_arch, name):
    """The launches a caller replays (miofind.torch's C++ path): the flip first, from the invoker's b into the
    workspace after the partial planes; then (after the zeroing where there is one) every phase reading its own filter
    there, its tensor map of the same address; the first phase right after the flip waits for it in stream order."""
    from miofind.launch import B, WS
    from miofind.solvers import implicit_gemm_hopper_bwd as hbwd
    from miofind.solvers import implicit_gemm_hopper_bwd_tf32 as ht
    p = _p("B", **BWD_CASES[name])
    for cfg in BWD_TF32.find_configs(p):
        cfg = cfg or BWD_TF32.default_config(p)
        sol = BWD_TF32.get_solution(p, cfg)
        steps, _, needs_ws = sol.invoker_factory([FakeKernel() for _ in sol.kernels]).recipe
        part = BWD_TF32.partials_bytes(p, cfg)
        assert needs_ws and steps[0][1] == ((B, 0), (WS, part))
        mains = [s for s in steps if len(s[1]) == 4]
        offs = ht.phase_filter_offsets(p)
        want = [(WS, part + 4 * offs[(ph.r0, ph.s0)]) for ph in hbwd.runs(p)]
        assert [s[1][1] for s in mains] == want, (cfg, [s[1] for s in mains])
        if cfg["TMA"]:
            assert [s[2][1][:2] for s in mains] == want
        zero = any(len(s[1]) == 1 for s in steps)
        if not zero:
            assert steps[1][0].pdl is False          # the phase right after the flip


def test_nvrtc_sm90a_bwd_tf32(no_gpu_arch):
    """The flip, zeroing and phase kernels of every backward case's default and find configs build for sm_90a."""
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    seen = set()
    for kw in BWD_CASES.values():
        p = _p("B", **kw)
        for cfg in BWD_TF32.find_configs(p):
            for k in BWD_TF32.get_solution(p, cfg).kernels:
                key = (k.source, k.name, k.macros)
                if key not in seen:
                    seen.add(key)
                    assert nvrtc_compile(k, arch="sm_90")[:4] == b"\x7fELF", (p.key(), cfg, k.name)


# -- GPU -------------------------------------------------------------------------------------------


def _check(solver, p, cfg):
    err, tol = check_solver(solver, p, seed=zlib.crc32(repr((p.key(), cfg)).encode()) & 0xFFFF, config=cfg)
    assert err <= tol, f"{solver.id} {p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"
    return err


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CASES))
def test_hopper_tf32_default(name):
    p = _p(**CASES[name])
    _check(FWD, p, FWD.default_config(p))


def _sample(p, count=10):
    space = list(FWD.config_space(p))
    rng = np.random.default_rng(zlib.crc32(p.key().encode()))
    picks = {0, len(space) - 1, *rng.choice(len(space), size=min(count, len(space)), replace=False).tolist()}
    # one of each kind the sample may have missed: persistent copy engine, ping-pong, three warpgroups, split
    for want in (lambda c: c["PERSIST"] and c["TMA"], lambda c: c["PINGPONG"], lambda c: c["WGS"] == 3,
                 lambda c: c["SPLITK"] > 1, lambda c: c["WSPEC"] and not c["TMA"]):
        hit = [i for i, c in enumerate(space) if want(c)]
        if hit and not picks & set(hit):
            picks.add(hit[int(rng.integers(len(hit)))])
    return [space[i] for i in sorted(picks)]


@pytest.mark.gpu
@pytest.mark.parametrize("name", ("tail_mnk", "k320", "1x1_dense", "1x1_s2", "r50_7x7"))
def test_hopper_tf32_config_sample(name):
    p = _p(**CASES[name])
    for cfg in _sample(p):
        _check(FWD, p, cfg)


# problems whose default is a persistent copy-engine config (the small ones above default to a split)
FIND_CASES = {"3x3": dict(n=8, c=64, k=320, in_size=(28, 28), filter_size=3, pads=1),
              "1x1_dense": dict(n=8, c=96, k=128, in_size=(28, 28), filter_size=1)}


def test_find_configs_tf32_alternates(no_gpu_arch):
    """A TF32 find measures the default, then the valid ALTERNATE_TILES_TF32 other than it (those of the 16-bit
    kernels that fit)."""
    for kw in FIND_CASES.values():
        p = _p(**kw)
        d, cfgs = FWD.default_config(p), FWD.find_configs(p)
        assert (d["PERSIST"], d["TMA"]) == (1, 1) and cfgs[0] is None and len(cfgs) >= 3
        assert [(c["BM"], c["BN"], c["WGS"], c["STAGES"], c["PINGPONG"]) for c in cfgs[1:]] == \
            [t for t in hb.ALTERNATE_TILES_TF32 if t != (d["BM"], d["BN"], d["WGS"], d["STAGES"], d["PINGPONG"])
             and FWD.is_valid_config(p, dict(d, BM=t[0], BN=t[1], WGS=t[2], STAGES=t[3], PINGPONG=t[4]))]


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(FIND_CASES))
def test_hopper_tf32_find_configs(name):
    """Every config a find measures (the default, then the persistent copy-engine alternates)."""
    p = _p(**FIND_CASES[name])
    cfgs = FWD.find_configs(p)
    assert len(cfgs) >= 3
    for cfg in cfgs:
        _check(FWD, p, cfg if cfg is not None else FWD.default_config(p))


@pytest.mark.gpu
@pytest.mark.parametrize("bias,act", ((1, "none"), (1, "relu"), (0, "gelu"), (1, "gelu")))
@pytest.mark.parametrize("name", ("tail_mnk", "r50_7x7"))
def test_hopper_tf32_fused(name, bias, act):
    """The fused epilogue on FP32 sums stored as FP32: unsplit (tails) and in the split's reduce (7x7)."""
    p = ProblemDescription.make("F", layout="NHWC", dtype="FP32", math="tf32", bias=bias, activation=act,
                                **CASES[name])
    _check(FUSED, p, FUSED.default_config(p))


@pytest.mark.gpu
def test_hopper_tf32_split_odd_chunks():
    """Split-K into 2, 3 and 5 chunks (partial planes summed and stored as FP32 float4s), and an odd M x K."""
    p = _p(n=1, c=256, k=36, in_size=(7, 7), filter_size=3, pads=1)     # 49 x 36: an odd count of float4s
    base = {"BM": 64, "BN": 64, "WGS": 1, "STAGES": 4, "PERSIST": 0, "WSPEC": 1, "TMA": 1, "PINGPONG": 0}
    for sk in (2, 3, 5):
        cfg = dict(base, SPLITK=sk)
        assert FWD.is_valid_config(p, cfg) and hb.split_geometry(p, sk)[0] == sk
        _check(FWD, p, cfg)


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(BWD_CASES))
def test_hopper_tf32_bwd_default(name):
    p = _p("B", **BWD_CASES[name])
    _check(BWD_TF32, p, BWD_TF32.default_config(p))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ("3x3_s1", "3x3_s2", "r50_7x7"))
def test_hopper_tf32_bwd_config_sample(name):
    p = _p("B", **BWD_CASES[name])
    space = list(BWD_TF32.config_space(p))
    rng = np.random.default_rng(zlib.crc32(p.key().encode()))
    picks = {0, len(space) - 1, *rng.choice(len(space), size=min(6, len(space)), replace=False).tolist()}
    for want in (lambda c: c["PERSIST"] and c["TMA"], lambda c: c["PINGPONG"], lambda c: c["SPLITK"] > 1):
        hit = [i for i, c in enumerate(space) if want(c)]
        if hit and not picks & set(hit):
            picks.add(hit[int(rng.integers(len(hit)))])
    for i in sorted(picks):
        _check(BWD_TF32, p, space[i])


@pytest.mark.gpu
@pytest.mark.parametrize("strides", (1, 2))
def test_hopper_tf32_bwd_find_configs(strides):
    """Every config a find measures, where the default is a persistent copy-engine config (its alternates too)."""
    p = _p("B", n=16, c=128, k=128, in_size=(56, 56), filter_size=3, pads=1, strides=strides)
    cfgs = BWD_TF32.find_configs(p)
    assert len(cfgs) >= 3
    for cfg in cfgs:
        _check(BWD_TF32, p, cfg if cfg is not None else BWD_TF32.default_config(p))
