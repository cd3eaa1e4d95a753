"""Hopper backward weights, stream-K (ConvImplicitGemmHopperWrwStreamK): what it claims (CPU, pinned), its configs
and workspace (CPU), the schedule's arithmetic against a Python model of the kernel's (CPU: every unit once, the
fix-up's slots the ones written), its NVRTC build for sm_90a (CPU), and on the GPU every claimed case, every tile
of the space and the find's configs against the float64 reference with poisoned outputs: tiles split over 2 to
132 blocks, fewer units than SMs, tails in K, Y*X*C and the reduction; bitwise-deterministic weights."""

import zlib

import pytest

from gpu_helpers import accepted, assert_claims_pinned, check_claim, check_solver, claim_grid, params
from nvrtc_check import nvrtc_or_skip
from shapes import SHAPES
from miofind.problem import ProblemDescription
from miofind.registry import get_solver, registry
from miofind.solvers import implicit_gemm_hopper_base as hb
from miofind.solvers import implicit_gemm_hopper_wrw_sk as sk

SK = get_solver("ConvImplicitGemmHopperWrwStreamK")
MODES = (("FP16", "strict"), ("BF16", "strict"))

# C % 64 == 0 (the copy engine's boxes): tails in K (72, 200), Y*X*C past a tile, reductions not a multiple of 64
# pixels, strides and dilation; one with fewer work units than SMs; ResNet-50's deep 3x3 at N = 4
CASES = {
    "tail_k": dict(n=3, c=64, k=72, in_size=(15, 13), filter_size=3, pads=1),
    "s2": dict(n=2, c=128, k=200, in_size=(14, 14), filter_size=3, pads=1, strides=2),
    "1x1": dict(n=4, c=64, k=256, in_size=(14, 14), filter_size=1),
    "dil2": dict(n=2, c=64, k=40, in_size=(17, 16), filter_size=3, pads=2, dilations=2),
    "few_units": dict(n=1, c=64, k=64, in_size=(8, 8), filter_size=1),
    "r50_512_7": dict(n=4, c=512, k=512, in_size=(7, 7), filter_size=3, pads=1),
}
GRID = claim_grid([SK], {**SHAPES, **CASES}, MODES)
ACCEPTED = {"ConvImplicitGemmHopperWrwStreamK": 12}
ACCEPTED_DIGEST = "3cd4731d"


def _w(dt="FP16", **kw):
    return ProblemDescription.make("W", layout="NHWC", dtype=dt, **kw)


@pytest.fixture
def no_gpu_arch(monkeypatch):
    monkeypatch.setattr(hb, "device_arch", lambda: None)


def test_registered_after_existing():
    rows = {r.id: r.number for r in registry()}
    assert rows["ConvImplicitGemmHopperWrwStreamK"] == 35 and max(rows.values()) == 35


def test_claims_pinned(no_gpu_arch):
    assert_claims_pinned(GRID, ACCEPTED, ACCEPTED_DIGEST)


@pytest.mark.parametrize("kw,why", [
    (dict(c=40), "C % 64"),
    (dict(dt="FP32"), "data type"),
    (dict(groups=2), "groups"),
    (dict(layout="NCHW"), "layouts"),
])
def test_rejections(no_gpu_arch, kw, why):
    base = dict(n=2, c=64, k=64, in_size=(8, 8), filter_size=3, pads=1)
    lay, dt = kw.pop("layout", "NHWC"), kw.pop("dt", "FP16")
    p = ProblemDescription.make("W", layout=lay, dtype=dt, **{**base, **kw})
    a = SK.applicability(p)
    assert not a and why in a.reason
    assert not SK.applicability(ProblemDescription.make("F", layout="NHWC", dtype="FP16", **base))


def test_configs_and_workspace(no_gpu_arch):
    p = _w(n=32, c=256, k=256, in_size=(14, 14), filter_size=3, pads=1)
    d = SK.default_config(p)
    assert d == {"BM": 128, "BN": 128, "WGS": 2, "STAGES": 4}
    assert SK.default_config(_w(n=32, c=64, k=64, in_size=(56, 56), filter_size=1)) == \
        {"BM": 64, "BN": 64, "WGS": 1, "STAGES": 4}
    space = list(SK.config_space(p))
    assert len(space) > 20 and d in space and all(SK.is_valid_config(p, c) for c in space)
    assert [c for c in SK.find_configs(p)][0] is None and len(SK.find_configs(p)) == 4
    assert not SK.is_valid_config(p, dict(d, SPLITK=2)) and not SK.is_valid_config(p, dict(d, BN=96))
    # two FP32 tiles per block, one block per SM (at most the units)
    assert SK.workspace_bytes(p, d) == 2 * hb.sm_count() * 128 * 128 * 4
    few = _w(**CASES["few_units"])
    assert sk.units(few, SK.default_config(few)) == 1 and sk.grid(few, SK.default_config(few)) == 1
    sol = SK.get_solution(p, d)
    assert [k.name for k in sol.kernels] == ["igemm_hopper_wrw_sk", "igemm_hopper_wrw_sk_fix"]
    assert sol.kernels[0].grid == (hb.sm_count(), 1, 1) and sol.kernels[0].block == (384, 1, 1)
    assert sol.workspace_bytes == SK.workspace_bytes(p, d)


def _schedule(units, jt, g):
    """The kernel's schedule in Python: per block its units, the segments written whole, the partial slots."""
    begin = [b * units // g for b in range(g + 1)]
    whole, slots = set(), {}
    for b in range(g):
        u, first_tile = begin[b], begin[b] // jt
        while u < begin[b + 1]:
            tile = u // jt
            end = min(begin[b + 1], (tile + 1) * jt)
            if u == tile * jt and end == (tile + 1) * jt:
                whole.add(tile)
            else:
                slots.setdefault(tile, []).append((b, 2 * b + (0 if tile == first_tile else 1), u, end))
            u = end
    return begin, whole, slots


@pytest.mark.parametrize("units,jt,g", [(3528, 98, 132), (7200, 25, 132), (1568, 1568, 132), (36, 1, 132),
                                        (100, 7, 13), (132 * 5, 5, 132), (133, 1, 132), (1, 1, 1)])
def test_schedule_covers_every_unit_once(units, jt, g):
    """Every unit in one block; a tile is whole in one block or split into slots that the fix-up's rule (blocks
    b(first unit) .. b(last unit), slot 0 where the tile is the block's first) names, in block order, with no
    slot written twice."""
    g = min(g, units)
    begin, whole, slots = _schedule(units, jt, g)
    covered = sorted(u for segs in slots.values() for _, _, a, e in segs for u in range(a, e))
    covered += [u for t in whole for u in range(t * jt, (t + 1) * jt)]
    assert sorted(covered) == list(range(units))
    block_of = lambda u: ((u + 1) * g - 1) // units   # noqa: E731  (the kernel's sk_block_of)
    assert all(begin[block_of(u)] <= u < begin[block_of(u) + 1] for u in range(units))
    written = [s for segs in slots.values() for _, s, _, _ in segs]
    assert len(written) == len(set(written))
    for tile in range(units // jt):
        b0, b1 = block_of(tile * jt), block_of(tile * jt + jt - 1)
        if b0 == b1:
            assert tile in whole
            continue
        fix = [2 * b + (0 if begin[b] // jt == tile else 1) for b in range(b0, b1 + 1)]
        assert fix == [s for _, s, _, _ in slots[tile]]


def test_nvrtc_sm90a_builds(no_gpu_arch):
    """Every (BM, BN, WGS) of the space builds for sm_90a (NVRTC, no GPU), FP16 and BF16."""
    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    seen = set()
    for dt in ("FP16", "BF16"):
        p = _w(dt, n=4, c=64, k=256, in_size=(15, 13), filter_size=3, pads=1)
        for cfg in SK.config_space(p):
            shape = (dt, cfg["BM"], cfg["BN"], cfg["WGS"])
            if shape in seen:
                continue
            seen.add(shape)
            for k in SK.get_solution(p, cfg).kernels:
                assert nvrtc_compile(k, arch="sm_90")[:4] == b"\x7fELF"
    assert len(seen) >= 10


@pytest.mark.gpu
@pytest.mark.parametrize("claim", params(accepted(GRID)))
def test_claimed(claim):
    check_claim(claim)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_tile(name, dt):
    """Every (BM, BN, WGS) of the space, at 3 and 6 stages, and the find's configs, against the float64 reference."""
    p = _w(dt, **CASES[name])
    cfgs = [c for c in SK.find_configs(p) if c is not None] + [SK.default_config(p)]
    seen = set()
    for c in SK.config_space(p):
        if (c["BM"], c["BN"], c["WGS"]) not in seen and c["STAGES"] in (3, 6):
            cfgs.append(c)
            if c["STAGES"] == 6:
                seen.add((c["BM"], c["BN"], c["WGS"]))
    for cfg in cfgs:
        err, tol = check_solver(SK, p, seed=zlib.crc32(repr(cfg).encode()) & 0xFFFF, config=cfg)
        assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"
    assert len(cfgs) >= 4


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ("FP16", "BF16"))
def test_resnet_layers(dt):
    """ResNet-50's deep 3x3 and a 56x56 1x1 layer at N = 8: tiles split over many blocks (one 64 x 64 tile over
    all of them), against the float64 reference."""
    for kw in (dict(n=8, c=256, k=256, in_size=(14, 14), filter_size=3, pads=1),
               dict(n=8, c=64, k=64, in_size=(56, 56), filter_size=1),
               dict(n=8, c=512, k=512, in_size=(14, 14), filter_size=3, pads=1, strides=2)):
        p = _w(dt, **kw)
        for cfg in [None] + [c for c in SK.find_configs(p) if c is not None]:
            err, tol = check_solver(SK, p, seed=5, config=cfg)
            assert err <= tol, f"{p.key()} config={cfg}: relative error {err:.3g} > {tol:.1g}"


@pytest.mark.gpu
def test_deterministic():
    """The fix-up adds a split tile's slots in block order: two runs give the same bits."""
    import cupy

    from miofind.api import Solution, run_solution
    from miofind.verify import random_array

    p = _w("FP16", n=8, c=256, k=256, in_size=(14, 14), filter_size=3, pads=1)
    rng = cupy.random.default_rng(3)
    sa, sb, so = p.io_shapes()
    a, b = random_array(sa, "FP16", rng), random_array(sb, "FP16", rng)
    outs = []
    for _ in range(2):
        out = cupy.full(so, float("nan"), dtype=a.dtype)
        sol = Solution(SK.id, SK.algorithm, 0.0, SK.workspace_bytes(p), None, False, p)
        run_solution(sol, a, b, out)
        cupy.cuda.get_current_stream().synchronize()
        outs.append(cupy.asnumpy(out).view("u2"))
    assert (outs[0] == outs[1]).all()
