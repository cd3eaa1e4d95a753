"""The Hopper stream-K forward (ConvImplicitGemmHopperFwdStreamK: the persistent copy-engine tiles, the (tile, K tile)
iterations cut into one equal range per block, shared tiles summed through workspace slots by their last contributor).
CPU: what it claims and rejects, its configs and workspace, the two launches it records for a caller to replay, the
partition's index algebra, NVRTC builds for sm_90a. GPU: tiles shared by up to nine blocks, tails in pixels and output
channels, blocks with whole and partial tiles, strides, dilation, the dense 1x1 path, ResNet-50's 1x1 layers at 14 x 14
and 7 x 7, every config on one problem, BF16; against the float64 reference with poisoned outputs; run to run bit for
bit on a workspace filled with garbage each time (its counters are cleared by the solution itself)."""

import random
import zlib

import numpy as np
import pytest

from gpu_helpers import check_solver
from nvrtc_check import nvrtc_or_skip
from miofind.problem import ProblemDescription
from miofind.registry import get_solver, registry
from miofind.solvers import implicit_gemm_hopper_base as hb
from miofind.solvers import implicit_gemm_hopper_fwd_stream_k as sk

SK = get_solver("ConvImplicitGemmHopperFwdStreamK")
FWD = get_solver("ConvImplicitGemmHopperFwd")

CASES = {
    # 4 tiles x 9 K tiles = 36 iterations on 36 blocks: every tile shared by 9 blocks; 72 channels: a tail
    "shared9_k72": dict(n=2, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1),
    "1x1_dense": dict(n=4, c=128, k=192, in_size=(14, 13), filter_size=1),
    "1x1_s2": dict(n=2, c=128, k=128, in_size=(14, 13), filter_size=1, strides=2),
    "5x5_dil": dict(n=2, c=64, k=24, in_size=(17, 16), filter_size=5, pads=3, dilations=2),
    # 64 tiles x 4 K tiles on 132 blocks: about two iterations a block, most tiles shared by three
    "1x1_256_32": dict(n=4, c=256, k=256, in_size=(32, 32), filter_size=1),
    # 98 tiles x 18 K tiles: blocks of whole tiles and of partial ones
    "k256_28": dict(n=8, c=128, k=256, in_size=(28, 28), filter_size=3, pads=1),
    # ResNet-50's long 1x1 reductions at N = 32, where the persistent forward's last wave is half idle
    "r50_1024to512_14": dict(n=32, c=1024, k=512, in_size=(14, 14), filter_size=1),
    "r50_2048to512_7": dict(n=32, c=2048, k=512, in_size=(7, 7), filter_size=1),
}


def _p(dt="FP16", **kw):
    return ProblemDescription.make("F", layout="NHWC", dtype=dt, **kw)


def test_registered():
    rows = {r.id: r.number for r in registry()}
    assert rows["ConvImplicitGemmHopperFwdStreamK"] == 50 and SK.family == "implicit_gemm_hopper"


def test_claims(no_gpu_arch):
    p = _p(**CASES["shared9_k72"])
    assert SK.applicability(p)
    d = SK.default_config(p)
    assert d == dict(hb.persistent_tile(p), BM=128, WGS=2) and d["PINGPONG"] == 0
    space = list(SK.config_space(p))
    assert space and all(c["PERSIST"] == c["TMA"] == c["WSPEC"] == 1 and c["SPLITK"] == 1 and c["PINGPONG"] == 0
                         for c in space)
    assert {frozenset(c.items()) for c in space} == {
        frozenset(c.items()) for c in FWD.config_space(p) if c["PERSIST"] and c["TMA"] and not c["PINGPONG"]}
    alts = SK.find_configs(p)
    assert alts[0] is None and len(alts) > 1 and all(SK.is_valid_config(p, c) for c in alts[1:])


@pytest.mark.parametrize("kw,dt", [
    (dict(c=32, k=64, in_size=(8, 8), filter_size=3, pads=1), "FP16"),     # C % 64: copy-engine loads
    (dict(c=64, k=64, in_size=(8, 8), filter_size=3, pads=1), "FP32"),
    (dict(c=64, k=64, in_size=(8, 8), filter_size=3, pads=1, groups=2), "FP16"),
])
def test_rejections(no_gpu_arch, kw, dt):
    a = SK.applicability(_p(dt, n=2, **kw))
    assert not a and a.reason


def test_rejects_fused_and_other_configs(no_gpu_arch):
    fused = _p(n=2, c=64, k=64, in_size=(8, 8), filter_size=3, pads=1, bias=1, activation="relu")
    assert not SK.applicability(fused)
    p = _p(**CASES["shared9_k72"])
    base = SK.default_config(p)
    for bad in (dict(base, PERSIST=0), dict(base, TMA=0, WSPEC=0), dict(base, SPLITK=2), dict(base, PINGPONG=1),
                dict(base, OBUF=1)):
        assert not SK.is_valid_config(p, bad)


def test_workspace_and_recipe(no_gpu_arch):
    """Two FP32 slots of a tile per block, then a counter per block; the counters cleared by a first launch on the
    workspace, then the main kernel on (a, b, out, workspace) with the maps of a and b (miofind.torch's C++ path)."""
    from gpu_helpers import FakeKernel
    from miofind.launch import A, B, OUT, WS
    p = _p(**CASES["shared9_k72"])
    sol = SK.get_solution(p)
    cfg = sol.config
    g = sk.blocks(p, cfg)
    assert g == 4 * 9 and sol.kernels[1].grid == (g, 1, 1)      # 4 tiles of 128 x 128, 9 K tiles: one each
    assert sk.counters_at(p, cfg) == 2 * g * 128 * 128 * 4
    assert sol.workspace_bytes == SK.workspace_bytes(p) >= sk.counters_at(p, cfg) + 4 * g
    assert sol.workspace_bytes % 256 == 0
    steps, align, ws = sol.invoker_factory([FakeKernel(), FakeKernel()]).recipe
    assert ws and len(steps) == 2 and align[3] == 256
    assert steps[0][1] == ((WS, sk.counters_at(p, cfg)),) and not steps[0][0].pdl
    assert steps[1][1] == ((A, 0), (B, 0), (OUT, 0), (WS, 0)) and steps[1][0].pdl
    assert [m[:2] for m in steps[1][2]] == [(A, 0), (B, 0)]
    big = _p(**CASES["r50_1024to512_14"])
    assert sk.blocks(big, SK.default_config(big)) == hb.sm_count()


def test_partition_algebra():
    """The kernel's split of I iterations over G blocks (block b: [floor(bI/G), floor((b+1)I/G))) and its owner
    formula (the block of iteration q: floor(((q+1)G - 1)/I)), the slot a partial segment writes, and the
    contributors of a tile, on random sizes; mirrored here in Python from kernels_src/...stream_k.cu."""
    rng = random.Random(7)
    for _ in range(300):
        kt = rng.randint(1, 40)
        tiles = rng.randint(1, 300)
        iters = tiles * kt
        g = rng.randint(1, min(iters, 264))
        begin = [b * iters // g for b in range(g + 1)]
        owner = np.repeat(np.arange(g), np.diff(begin))
        assert len(owner) == iters and all(begin[b + 1] > begin[b] for b in range(g))
        q = np.arange(iters)
        assert np.array_equal(((q + 1) * g - 1) // iters, owner)
        for t in range(tiles):
            ts = t * kt
            bf, bl = owner[ts], owner[ts + kt - 1]
            segs = [(max(begin[b], ts), min(begin[b + 1], ts + kt)) for b in range(bf, bl + 1)]
            assert segs[0][0] == ts and segs[-1][1] == ts + kt
            assert all(segs[i][1] == segs[i + 1][0] for i in range(len(segs) - 1))
            if bf != bl:                    # shared: two slots of one block never serve one tile
                slots = [(b, 0 if begin[b] > ts else 1) for b in range(bf, bl + 1)]
                assert len(set(slots)) == len(slots)


def test_nvrtc_sm90a_find_configs(no_gpu_arch):
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    for dt in ("FP16", "BF16"):
        for name in ("shared9_k72", "r50_2048to512_7"):
            p = _p(dt, **CASES[name])
            for cfg in SK.find_configs(p):
                for k in SK.get_solution(p, cfg).kernels:
                    assert nvrtc_compile(k, arch="sm_90")[:4] == b"\x7fELF"


# -- GPU -------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_find_configs(name, dt):
    """The default and the alternates of every case."""
    p = _p(dt, **CASES[name])
    for cfg in SK.find_configs(p):
        err, tol = check_solver(SK, p, seed=zlib.crc32(f"{name}{cfg}".encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
def test_every_config():
    """Every tile of the space on a problem of shared and whole tiles."""
    p = _p("FP16", **CASES["1x1_256_32"])
    for cfg in SK.config_space(p):
        err, tol = check_solver(SK, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
@pytest.mark.parametrize("name", ("shared9_k72", "k256_28", "r50_2048to512_7"))
def test_bitwise_reproducible_on_a_garbage_workspace(name):
    """Three runs on the same inputs, each with the workspace (slots and counters) filled with different garbage
    and the output poisoned: every element written, the same bits each time, and within tolerance of the float64
    reference. Without the counters' clearing launch a tile's count would start from garbage and never come out
    last: its elements would stay NaN."""
    import cupy

    from miofind.api import Solution, run_solution
    from miofind.reference import conv_reference
    from miofind.verify import poison, random_array, rel_error, to_float64, tolerance

    p = _p("FP16", **CASES[name])
    rng = cupy.random.default_rng(zlib.crc32(name.encode()))
    sa, sb, so = p.io_shapes()
    a, b = random_array(sa, "FP16", rng), random_array(sb, "FP16", rng)
    nbytes = SK.workspace_bytes(p)
    sol = Solution(SK.id, SK.algorithm, 0.0, nbytes, SK.default_config(p), False, p)
    outs = []
    for fill in (0xFF, 0x7F, 0x01):
        ws = cupy.full(nbytes, fill, dtype=cupy.uint8)
        out = cupy.empty(so, dtype=a.dtype)
        poison(out, "FP16")
        run_solution(sol, a, b, out, workspace=ws)
        cupy.cuda.get_current_stream().synchronize()
        assert not bool(cupy.isnan(out).any()), f"fill {fill:#x}: elements left unwritten"
        outs.append(out)
    assert all(bool((o.view(cupy.uint16) == outs[0].view(cupy.uint16)).all()) for o in outs[1:])
    ref = conv_reference(p, cupy.asnumpy(to_float64(a, "FP16")), cupy.asnumpy(to_float64(b, "FP16")))
    err = rel_error(to_float64(outs[0], "FP16"), cupy.asarray(ref))
    assert err <= tolerance("FP16", SK.family, "F", p.math)
