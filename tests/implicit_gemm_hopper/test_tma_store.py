"""The Hopper forward with copy-engine stores (ConvImplicitGemmHopperFwdTmaStore: the forward solver's persistent
copy-engine configs, each output tile handed to the copy engine as 64-channel boxes). CPU: what it claims and rejects,
its configs, the launch it records for a caller to replay (three tensor maps: x, w, y), NVRTC builds of every config
for sm_90a. GPU: tails in pixels (rows past M not written) and output channels (a box of 8 channels; a second box of a
128-wide tile wholly past K, not issued), several tiles per block in both consumer orders, strides, dilation, the dense
1x1 path, every config on one problem, BF16; against the float64 reference with poisoned outputs. The same for 32-deep K
tiles (TMA = 2) and 32-wide tiles, whose output is one box of 32 channels under the 64-byte swizzle."""

import zlib

import pytest

from gpu_helpers import check_configs, check_solver
from nvrtc_check import nvrtc_or_skip
from miofind import tma
from miofind.problem import ProblemDescription
from miofind.registry import get_solver, registry
from miofind.solvers import implicit_gemm_hopper_base as hb
from miofind.solvers import implicit_gemm_hopper_fwd_tma_store as ts

TS = get_solver("ConvImplicitGemmHopperFwdTmaStore")
FWD = get_solver("ConvImplicitGemmHopperFwd")

CASES = {
    # pixels not a multiple of a tile; 72 output channels: a full box and one of 8
    "k72_tail": dict(n=2, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1),
    # 64 output channels in 128-wide tiles: the second box lies past K
    "k64": dict(n=3, c=64, k=64, in_size=(9, 7), filter_size=3, pads=1),
    "1x1_dense": dict(n=4, c=128, k=192, in_size=(14, 13), filter_size=1),
    "1x1_s2": dict(n=2, c=128, k=128, in_size=(14, 13), filter_size=1, strides=2),
    "5x5_dil": dict(n=2, c=64, k=24, in_size=(17, 16), filter_size=5, pads=3, dilations=2),
    # more tiles than blocks: each persistent block takes several, its warpgroups in turn when ping-pong
    "many_tiles": dict(n=10, c=64, k=256, in_size=(64, 64), filter_size=1),
    "k256_28": dict(n=8, c=128, k=256, in_size=(28, 28), filter_size=3, pads=1),
}


def _p(dt="FP16", **kw):
    return ProblemDescription.make("F", layout="NHWC", dtype=dt, **kw)


def test_registered():
    rows = {r.id: r.number for r in registry()}
    assert rows["ConvImplicitGemmHopperFwdTmaStore"] == 49 and TS.family == "implicit_gemm_hopper"


def test_claims(no_gpu_arch):
    p = _p(**CASES["k72_tail"])
    assert TS.applicability(p)
    # the forward solver's persistent copy-engine tiles: its default here, and its alternates, two output tiles where
    # they fit
    d = TS.default_config(p)
    assert ts.base_tile(d) == hb.persistent_tile(p) == FWD.default_config(p) and d["OBUF"] == 2
    tiles = lambda s: [ts.base_tile(c or s.default_config(p)) for c in s.find_configs(p)]  # noqa: E731
    assert tiles(TS) == [c for c in tiles(FWD) if c["PERSIST"] != 2]     # not the forward's resident-B twins
    assert all(c["OBUF"] == 2 or not TS.is_valid_config(p, dict(c, OBUF=2)) for c in TS.find_configs(p) if c)
    space = list(TS.config_space(p))
    assert space and all(c["PERSIST"] == c["TMA"] == c["WSPEC"] == 1 and c["SPLITK"] == 1 for c in space)
    assert {c["PINGPONG"] for c in space} == {0, 1} and {c["OBUF"] for c in space} == {1, 2}
    assert {frozenset(ts.base_tile(c).items()) for c in space} == {
        frozenset(c.items()) for c in FWD.config_space(p) if c["PERSIST"] == 1 and c["TMA"]}


def test_shared_memory(no_gpu_arch):
    """Stages, then (1 + PINGPONG) x OBUF unpadded output tiles; a second output tile only where it fits."""
    p = _p(**CASES["k256_28"])
    c = dict(TS.default_config(p), BM=192, BN=128, WGS=3, STAGES=4, PINGPONG=0, OBUF=1)
    assert ts.smem_bytes(p, c) == 4 * 320 * 128 + 192 * 128 * 2 + 1024 and TS.is_valid_config(p, c)
    assert not TS.is_valid_config(p, dict(c, OBUF=2)) and TS.is_valid_config(p, dict(c, OBUF=2, STAGES=3))
    pp = dict(c, BM=128, WGS=2, PINGPONG=1, OBUF=2)
    assert ts.smem_bytes(p, pp) == 4 * 256 * 128 + 4 * 128 * 128 * 2 + 1024


@pytest.mark.parametrize("kw,dt,why", [
    (dict(c=12, k=64, in_size=(8, 8), filter_size=3, pads=1), "FP16", "multiples of 8"),   # 16-byte chunks
    (dict(c=64, k=64, in_size=(8, 8), filter_size=3, pads=1), "FP32", "FP32"),
    (dict(c=64, k=64, in_size=(8, 8), filter_size=3, pads=1, groups=2), "FP16", "groups"),
])
def test_rejections(no_gpu_arch, kw, dt, why):
    a = TS.applicability(_p(dt, n=2, **kw))
    assert not a and a.reason


def test_rejects_fused_and_other_configs(no_gpu_arch):
    fused = ProblemDescription.make("F", layout="NHWC", dtype="FP16", n=2, c=64, k=64, in_size=(8, 8), filter_size=3,
                                    pads=1, bias=1, activation="relu")
    assert not TS.applicability(fused)
    p = _p(**CASES["k72_tail"])
    base = TS.default_config(p)
    for bad in (dict(base, PERSIST=0), dict(base, TMA=0, WSPEC=0), dict(base, SPLITK=2), dict(base, OBUF=3),
                ts.base_tile(base)):
        assert not TS.is_valid_config(p, bad)


def test_recipe(no_gpu_arch):
    """One launch on (a, b, out) with the maps of a, b and out (miofind.torch's C++ path encodes all three)."""
    from gpu_helpers import FakeKernel
    from miofind.launch import A, B, OUT
    p = _p(**CASES["k72_tail"])
    sol = TS.get_solution(p)
    assert sol.workspace_bytes == 0 and len(sol.kernels) == 1
    steps, _, ws = sol.invoker_factory([FakeKernel()]).recipe
    assert not ws and len(steps) == 1 and steps[0][1] == ((A, 0), (B, 0), (OUT, 0))
    assert [m[:2] for m in steps[0][2]] == [(A, 0), (B, 0), (OUT, 0)]
    ymap = steps[0][2][2][2]
    assert ymap.fields[3] == [72, 2 * 15 * 13] and ymap.fields[5] == [64, sol.config["BM"]]


def test_nvrtc_sm90a_every_config(no_gpu_arch):
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    for dt in ("FP16", "BF16"):
        p = _p(dt, **CASES["k72_tail"])
        for cfg in TS.config_space(p):
            assert nvrtc_compile(TS.get_solution(p, cfg).kernels[0], arch="sm_90")[:4] == b"\x7fELF"


# -- GPU -------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_find_configs(name, dt):
    """The default and the alternates (both consumer orders) of every case."""
    p = _p(dt, **CASES[name])
    for cfg in TS.find_configs(p):
        err, tol = check_solver(TS, p, seed=zlib.crc32(f"{name}{cfg}".encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
def test_every_config():
    """Every persistent copy-engine tile on a problem of several tiles per block and one with a channel tail."""
    for name in ("many_tiles", "k72_tail"):
        p = _p("FP16", **CASES[name])
        for cfg in TS.config_space(p):
            err, tol = check_solver(TS, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
            assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


# -- 32-deep K tiles (TMA = 2) and 32-wide tiles: one output box of 64-byte rows ------------------------------------

# 32 channels (each tap one 32-deep tile), 48 (padded 32-deep taps), 24 (one tile narrower than its box) into 16
# output channels (a 32-wide box past K), a dense 1x1 into 144 (box tails), and a walk of many tiles a block
ROW64_CASES = {
    "c32_k32_3x3": dict(n=3, c=32, k=32, in_size=(15, 13), filter_size=3),
    "c48_k64_5x5": dict(n=2, c=48, k=64, in_size=(13, 12), filter_size=5, pads=2),
    "c24_k16_3x3": dict(n=2, c=24, k=16, in_size=(12, 12), filter_size=3, pads=1),
    "c32_k144_1x1": dict(n=3, c=32, k=144, in_size=(15, 13), filter_size=1),
    "many_c32": dict(n=64, c=32, k=32, in_size=(35, 35), filter_size=3),
}


def _r64(bm, bn, wgs, st, pp=0, obuf=2):
    return {"BM": bm, "BN": bn, "WGS": wgs, "STAGES": st, "PERSIST": 1, "SPLITK": 1, "WSPEC": 1, "TMA": 2,
            "PINGPONG": pp, "OBUF": obuf}


# 256 x 32 (cuDNN's tile for Inception's stem), 128 x 32 at 12 stages, 64 x 32 of one warpgroup, ping-pong, 256 x 64,
# three warpgroups, and 128 wide with one output tile
ROW64_KINDS = (_r64(256, 32, 2, 6), _r64(128, 32, 2, 12), _r64(64, 32, 1, 8), _r64(128, 32, 2, 6, pp=1),
               _r64(256, 64, 2, 8), _r64(192, 64, 3, 4), _r64(128, 128, 2, 6, obuf=1))


def _row64_kinds(p):
    return [c for c in ROW64_KINDS if TS.is_valid_config(p, c)]


def test_row64_claims(no_gpu_arch):
    """Where C % 64 != 0 the tuning space holds persistent 32-deep tiles (a find does not try them); the shared memory
    counts 64-byte rows; a 32-wide tile stores through a map of 32-channel boxes under the 64-byte swizzle."""
    stem = _p(n=32, c=32, k=32, in_size=(149, 149), filter_size=3)
    assert not any(c and c["TMA"] == 2 for c in TS.find_configs(stem))
    deep = [c for c in TS.config_space(stem) if c["TMA"] == 2]
    assert deep and all(c["PERSIST"] == 1 for c in deep) and {c["BN"] for c in deep} >= {32, 64}
    assert not any(c["TMA"] == 2 for c in TS.config_space(_p(**CASES["k72_tail"])))     # C % 64 == 0
    c = _r64(256, 32, 2, 6)
    assert ts.smem_bytes(stem, c) == 6 * 288 * 64 + 2 * 256 * 32 * 2 + 1024 and TS.is_valid_config(stem, c)
    assert not TS.is_valid_config(stem, dict(c, PERSIST=0))
    assert not TS.is_valid_config(stem, dict(c, TMA=1))       # 32 wide with 64-deep K tiles: not offered
    for p in (_p(**ROW64_CASES[n]) for n in ROW64_CASES):
        assert len(_row64_kinds(p)) >= 5, p.key()
    from gpu_helpers import FakeKernel
    p = _p(**ROW64_CASES["c24_k16_3x3"])
    steps = TS.get_solution(p, c).invoker_factory([FakeKernel()]).recipe[0]
    ymap = steps[0][2][2][2]
    assert ymap.fields[5] == [32, 256] and ymap.fields[11] == tma.SWIZZLE_64B
    steps = TS.get_solution(p, _r64(256, 64, 2, 8)).invoker_factory([FakeKernel()]).recipe[0]
    assert steps[0][2][2][2].fields[5] == [64, 256] and steps[0][2][2][2].fields[11] == tma.SWIZZLE_128B


def test_row64_nvrtc(no_gpu_arch):
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    for dt in ("FP16", "BF16"):
        for name in ("c32_k32_3x3", "c48_k64_5x5"):
            p = _p(dt, **ROW64_CASES[name])
            for cfg in _row64_kinds(p):
                assert nvrtc_compile(TS.get_solution(p, cfg).kernels[0], arch="sm_90a")[:4] == b"\x7fELF", cfg


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(ROW64_CASES))
def test_row64_configs(name, dt):
    """Every kind of 32-deep tile against the float64 reference, the output poisoned."""
    p = _p(dt, **ROW64_CASES[name])
    check_configs(TS, p, _row64_kinds(p))
