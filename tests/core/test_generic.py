"""Generic builds (miofind.generic): they NVRTC-compile for sm_90, one build serves many shapes, and
the specialised builds and trust keys are untouched. CPU only (NVRTC without a GPU)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from nvrtc_check import nvrtc_or_skip
from shapes import SHAPES, layouts_for
from miofind import generic
from miofind.compile import binary_key, kernel_source, nvrtc_compile, pre_includes
from miofind.problem import ProblemDescription
from miofind.registry import solvers
from miofind.trust import parse_key, trust_key

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "finddb" / "sm_90-132.sqlite"


def _matrix():
    for kw in SHAPES.values():
        for lay in layouts_for(kw):
            for dt in ("FP32", "FP16", "BF16"):
                for d in "FBW":
                    yield ProblemDescription.make(d, layout=lay, dtype=dt, **kw)
    for d in "FBW":   # 64-bit indexing
        yield ProblemDescription.make(d, n=64, c=256, k=64, in_size=(384, 384), filter_size=3, pads=1)


MAX_BUILDS_PER_SOURCE = 10   # bounds CI time; the 64-bit-index builds and each kernel's first are always kept


def _generic_builds():
    """(solver id, problem key, GenericKernel) per distinct generic build of the matrix."""
    seen, per, names = {}, {}, set()
    for p in _matrix():
        for s in solvers():
            if not any(f in generic.RUNTIME for f in getattr(s, "kernel_files", ())) or not s.applicability(p):
                continue
            sol = s.get_solution(p, generic.generic_config(s, p, None))
            for g in generic.generic_kernels(sol) or ():
                key = (g.kinfo.source, g.kinfo.name, g.kinfo.compile_options()) if g is not None else None
                if g is not None and key not in seen and (per.get(g.kinfo.source, 0) < MAX_BUILDS_PER_SOURCE or g.wide
                                                          or (g.kinfo.source, g.kinfo.name) not in names):
                    per[g.kinfo.source] = per.get(g.kinfo.source, 0) + 1
                    names.add((g.kinfo.source, g.kinfo.name))
                    seen.setdefault((g.kinfo.source, g.kinfo.name, g.kinfo.compile_options()), (s.id, p.key(), g))
    return list(seen.values())


BUILDS = _generic_builds()


def test_every_generic_source_has_builds_and_specialised_ones_differ():
    assert {g.kinfo.source for _, _, g in BUILDS} == set(generic.RUNTIME)
    ids = {sid for sid, _, _ in BUILDS}
    for sid in ("ConvImplicitGemmFwd", "ConvImplicitGemmWrw", "ConvDirectTiledFwd", "ConvWinograd3x3F43Fwd",
                "ConvFFTFwd", "ConvFFTBwd", "GemmFwdRest", "GemmBwdRest", "GemmWrwUniversal",
                "ConvGroupedDirectFwd", "ConvGroupedDirectBwd", "ConvGroupedDirectWrw"):
        assert sid in ids
    kernels = {(g.kinfo.source, g.kinfo.name) for _, _, g in BUILDS}
    for name in ("im2col_nchw", "im2col_nhwc", "col2im_nchw", "col2im_nhwc", "nkp_to_knp", "wrw_reduce"):
        assert ("gemm_im2col.cu", name) in kernels, name
    assert "ConvImplicitGemmBwd" in ids        # partial: strides and output sizes stay compile-time
    assert any(g.wide for _, _, g in BUILDS) and any(not g.wide for _, _, g in BUILDS)


@pytest.mark.parametrize("sid,key,g", BUILDS, ids=[f"{sid}:{g.kinfo.name}:{i}" for i, (sid, _, g) in enumerate(BUILDS)])
def test_generic_build_nvrtc_sm90(sid, key, g):
    nvrtc_or_skip()
    cubin = nvrtc_compile(g.kinfo, "sm_90")
    assert cubin[:4] == b"\x7fELF", f"{sid} on {key}: not a cubin"


def test_one_build_serves_shapes_of_a_config():
    s = next(s for s in solvers() if s.id == "ConvImplicitGemmFwd")
    cfg = {"BM": 64, "BN": 64, "BK": 8, "TM": 4, "TN": 8, "STAGES": 3}
    keys, values = set(), set()
    for n, c, hw in ((1, 64, 14), (8, 64, 28), (32, 64, 56), (3, 64, 17)):
        p = ProblemDescription.make("F", n=n, c=c, k=64, in_size=(hw, hw), filter_size=3, pads=1, layout="NHWC")
        (g,) = generic.generic_kernels(s.get_solution(p, cfg))
        keys.add(g.kinfo.compile_options())
        values.add(g.values)
        assert not any(str(v).isdigit() and int(v) == hw for k, v in g.kinfo.macros if k in ("P_HI", "P_WI"))
    assert len(keys) == 1 and len(values) == 4


def test_backward_data_build_is_per_spatial_geometry():
    """Implicit GEMM backward data: strides and output sizes stay compile-time (template arguments);
    batch, channels and groups are read at run time."""
    s = next(s for s in solvers() if s.id == "ConvImplicitGemmBwd")
    cfg = {"BM": 64, "BN": 32, "BK": 8, "TM": 4, "TN": 4, "STAGES": 3}

    def opts(n, c, hw):
        p = ProblemDescription.make("B", n=n, c=c, k=32, in_size=(hw, hw), filter_size=3, pads=1, layout="NHWC")
        (g,) = generic.generic_kernels(s.get_solution(p, cfg))
        return g.kinfo.compile_options()

    assert opts(1, 32, 14) == opts(16, 64, 14) == opts(3, 48, 14)
    assert opts(1, 32, 14) != opts(1, 32, 28)


def test_split_k_rounded_to_few_binaries():
    s = next(s for s in solvers() if s.id == "ConvImplicitGemmWrw")
    for n in (1, 4, 32, 128):
        p = ProblemDescription.make("W", n=n, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
        assert generic.generic_config(s, p, None)["SPLITK"] in generic.GENERIC_SPLITS


def test_a_size_in_if_is_a_compile_error_not_a_silent_zero():
    nvrtc_or_skip()
    from miofind.compile import CompileError
    (sid, _, g) = next(b for b in BUILDS if b[2].kinfo.source == "implicit_gemm_wrw.cu")
    # SPLITK selects the epilogue in #if: read at run time, it must fail to preprocess
    bad = generic.dataclasses.replace(g.kinfo, macros=tuple((k, "MIOFIND_GP(0)" if k == "SPLITK" else v)
                                                            for k, v in g.kinfo.macros))
    with pytest.raises(CompileError):
        nvrtc_compile(bad, "sm_90")


def test_specialised_builds_unchanged():
    """Specialised kernels pre-include nothing, their binary-cache key ignores the prelude, and a
    generic build never reuses a specialised cache file."""
    assert "miofind_gp" in kernel_source(generic.PRELUDE)
    for sid, key, g in BUILDS[:20]:
        p = ProblemDescription.from_key(key)
        s = next(x for x in solvers() if x.id == sid)
        for k in s.get_solution(p).kernels:
            assert pre_includes(k) == () and not any("MIOFIND_GP" in v for _, v in k.macros)
        assert pre_includes(g.kinfo) == (generic.PRELUDE,)
    k0 = BUILDS[0][2].kinfo
    assert binary_key(k0, "sm_90") != binary_key(generic.dataclasses.replace(k0, options=()), "sm_90")


@pytest.mark.skipif(not SHIPPED.is_file(), reason="shipped FindDB not in this checkout")
def test_specialised_trust_keys_match_the_shipped_db():
    """Every solver's current trust key (kernel source digest and version) equals the one its records
    in the shipped H100 DB carry: generic builds live in new files and new code paths only."""
    with sqlite3.connect(f"file:{SHIPPED}?mode=ro", uri=True) as con:
        stored = con.execute("SELECT DISTINCT solver_id, kernel_hash FROM find_records").fetchall()
    by_solver: dict[str, set] = {}
    for sid, kh in stored:
        f = parse_key(kh)
        by_solver.setdefault(sid, set()).add((f["src"], f["v"]))
    current = {s.id: parse_key(trust_key(s)) for s in solvers()}
    checked = 0
    for sid, keys in by_solver.items():
        if sid in current:
            assert keys == {(current[sid]["src"], current[sid]["v"])}, sid
            checked += 1
    assert checked >= 20


def test_warmup_fills_the_kernel_cache(tmp_path, monkeypatch):
    """`miofind warmup` compiles generic builds into the binary cache and stamps it (not where it failed); a second
    run compiles nothing; a bad --arch is a one-line error."""
    nvrtc_or_skip()
    from click.testing import CliRunner

    from miofind import warmup as wu
    from miofind.cli import main
    from miofind.compile import cached_cubin

    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(tmp_path / "cubin"))
    picked = [g.kinfo for _, _, g in BUILDS if g.kinfo.source == "direct_tiled_fwd.cu"][:2]
    monkeypatch.setattr(wu, "warmup_kernels", lambda *a, **k: picked)
    monkeypatch.setattr(wu, "warm_device", lambda: {"skipped": "no usable GPU (test)"})
    monkeypatch.setattr(wu, "warm_torch_cpp", lambda: {"skipped": "test (tests/torch/test_fast.py builds it)"})
    r = CliRunner().invoke(main, ["warmup", "--arch", "sm_90", "--jobs", "1", "--json"])
    assert r.exit_code == 0, r.output
    assert '"sm_90": 2' in r.output and '"skipped": "no usable GPU (test)"' in r.output
    for k in picked:
        assert cached_cubin(tmp_path / "cubin" / f"{binary_key(k, 'sm_90')}.cubin") is not None
    stamp = wu.read_stamp(tmp_path / "cubin")
    assert stamp is not None and stamp["archs"] == ["sm_90"] and stamp["kernels"] == 2 and stamp["device"] is False
    r = CliRunner().invoke(main, ["warmup", "--arch", "sm_90", "--jobs", "1", "--json", "--no-device"])
    assert '"sm_90": 0' in r.output and '"device"' not in r.output
    r = CliRunner().invoke(main, ["warmup", "--arch", "hopper"])
    assert r.exit_code != 0 and "--arch='hopper'" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["warmup", "--model", "alexnet"])
    assert r.exit_code != 0 and "model='alexnet'" in r.output and "Traceback" not in r.output
    # a warmup with errors leaves no stamp: a copy of that cache is not a finished install's
    (tmp_path / "cubin" / wu.STAMP_FILE).unlink()
    monkeypatch.setattr(wu, "warmup", lambda *a, **k: {"kernels": 2, "archs": {"sm_90": 1}, "skipped_archs": [],
                                                        "errors": {"sm_90 x.cu": "boom"}, "seconds": 0.1})
    r = CliRunner().invoke(main, ["warmup", "--arch", "sm_90", "--jobs", "1", "--json"])
    assert r.exit_code == 1 and wu.read_stamp(tmp_path / "cubin") is None, r.output


def test_warmup_covers_generic_builds_and_the_reference():
    from miofind.warmup import warmup_kernels

    ks = warmup_kernels(models=("resnet50",), batches=(32,), dtypes=("FP32",), layouts=("NCHW",))
    srcs = {k.source for k in ks}
    assert {"implicit_gemm_fwd.cu", "implicit_gemm_wrw.cu", "direct_naive.cu"} <= srcs
    # the float64 reference's own kernels, one per direction (channels-first W: reference_conv_wrw_cf)
    refs = {(k.source, k.name) for k in ks if dict(k.macros).get("DATA_T") == "double"}
    assert {("reference_fwd.cu", "reference_conv_fwd"), ("reference_wrw.cu", "reference_conv_wrw_cf")} <= refs, refs
    assert any(src == "reference_bwd.cu" for src, _ in refs), refs
    assert all(pre_includes(k) == (generic.PRELUDE,) for k in ks if k.source in generic.RUNTIME)
    # FP32 problems also as PyTorch runs them by default, with TF32 math: the TF32 mma builds (MATH 2)
    maths = {dict(k.macros).get("MATH") for k in ks if k.source == "implicit_gemm_fwd.cu"}
    assert {"0", "2"} <= maths, maths


def test_fast_division_magic_numbers():
    """The device's n / d = umulhi(n, mul) >> shr (mul = 0: d == 1) equals n // d for every
    dividend a 32-bit-index build divides (0 <= n < 2^31), over divisors 1..4096 and large ones."""
    import random

    rng = random.Random(0)
    divisors = list(range(1, 4097)) + [rng.randrange(4097, 2**31) for _ in range(2000)] + [2**31 - 1, 2**30, 3 << 28]
    for d in divisors:
        dd, mul, shr = generic.magic(d)
        assert dd == d and 0 <= mul < 2**32 and 0 <= shr < 32
        ns = [0, 1, d - 1, d, d + 1, 2**31 - 1, 2**31 - 2] + [rng.randrange(2**31) for _ in range(40)]
        for n in ns:
            q = n if mul == 0 else ((n * mul) >> 32) >> shr
            assert q == n // d, (n, d)
    with pytest.raises(ValueError):
        generic.magic(0)


def test_fast_division_only_in_32_bit_builds():
    fwd = [g for sid, _, g in BUILDS if g.kinfo.source == "implicit_gemm_fwd.cu"]
    assert any(g.wide for g in fwd) and any(not g.wide for g in fwd)
    for g in fwd:
        m = dict(g.kinfo.macros)
        if g.wide:
            assert not g.divisors and all("MIOFIND_FD" not in v for v in m.values())
        else:
            assert m["P_WO"].startswith("MIOFIND_FD(") and len(g.divisors) == len(generic.FASTDIV[g.kinfo.source])


def test_a_given_config_is_kept():
    s = next(s for s in solvers() if s.id == "ConvImplicitGemmWrw")
    p = ProblemDescription.make("W", n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
    tuned = dict(s.default_config(p), SPLITK=7)
    assert generic.generic_config(s, p, tuned) == tuned


def test_residue_size_is_only_tested_modulo_in_if():
    """A RESIDUE size may appear in the source's #if lines only as ``size % modulus``: anything else
    would read the residue where the size is meant."""
    import re

    for src, (name, mod) in generic.RESIDUE.items():
        text = kernel_source(src)
        for line in text.splitlines():
            if re.match(r"\s*#\s*(el)?if", line) and re.search(rf"\b{name}\b", line):
                assert re.fullmatch(rf"\s*#\s*(el)?if\s+{name}\s*%\s*{mod}\s*(==|!=)\s*0\s*", line), line


def test_winograd_builds_are_shared_by_output_widths_of_a_residue():
    s = next(s for s in solvers() if s.id == "ConvWinograd3x3F43Fwd")

    def build(w):
        p = ProblemDescription.make("F", n=2, c=16, k=16, in_size=(12, w), filter_size=3, pads=1)
        gks = [g for g in generic.generic_kernels(s.get_solution(p)) if g is not None and g.kinfo.name == "winograd_output"]
        return gks[0]

    a, b, c = build(12), build(20), build(13)      # WO = 12, 20 (0 mod 4) and 13 (1 mod 4)
    assert a.kinfo.compile_options() == b.kinfo.compile_options() != c.kinfo.compile_options()
    assert (a.residue_rest, b.residue_rest, c.residue_rest) == (12, 20, 12)


@pytest.mark.parametrize("width,branch", [(12, "divisible"), (13, "remainder"), (16, "divisible"), (15, "remainder")])
def test_residue_selects_the_same_if_branch_as_the_size(width, branch):
    """Preprocessing (r + miofind_rv) % WM sees the residue r: the branch the specialised build takes."""
    nvrtc_or_skip()
    from cupy_backends.cuda.libs import nvrtc

    src = "#if WO % WM == 0\n#error divisible\n#else\n#error remainder\n#endif\n"
    prelude = kernel_source(generic.PRELUDE).encode()
    prog = nvrtc.createProgram(src, "t.cu", [prelude], [generic.PRELUDE.encode()])
    try:
        with pytest.raises(Exception):
            nvrtc.compileProgram(prog, ["-arch=sm_90", f"--pre-include={generic.PRELUDE}", "-DMIOFIND_RV",
                                        "-DMIOFIND_GP_SLOTS=1", "-DWM=4", f"-DWO=({width % 4}+miofind_rv)"])
        log = nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)
    expect = "divisible" if width % 4 == 0 else "remainder"
    assert branch == expect and f"#error directive: {expect}" in log.replace('"', ""), log


# -- im2col-GEMM and depthwise: derived divisors, shared builds --------------------------------

def _solver(sid):
    return next(s for s in solvers() if s.id == sid)


def _derived_names(src: str) -> set[str]:
    return set(generic.FASTDIV.get(src, ())) - set(generic.RUNTIME[src])


def test_derived_divisors_are_guarded_macros_of_their_source():
    """Each DERIVED name is a fast-division divisor that its source #defines under #ifndef, so that a
    generic build can define it as its precomputed value; the specialised builds never pass it."""
    import re

    assert set(generic.DERIVED) <= set(generic.FASTDIV)
    for src in generic.DERIVED:
        text = kernel_source(src)
        names = _derived_names(src)
        assert names, src
        for name in names:
            assert re.search(rf"#ifndef {name}\n#define {name} \(", text), (src, name)
    for sid, key, g in BUILDS:
        if g.kinfo.source in generic.DERIVED:
            k = _specialised(sid, key, g.kinfo.name)
            assert not {n for n, _ in k.macros} & _derived_names(k.source), (sid, k.name)


def _specialised(sid, key, name):
    s, p = _solver(sid), ProblemDescription.from_key(key)
    return next(k for k in s.get_solution(p, generic.generic_config(s, p, None)).kernels if k.name == name)


@pytest.mark.parametrize("src", sorted(generic.DERIVED))
def test_derived_values_equal_the_kernels_own_definitions(src):
    """generic.DERIVED computes, per problem, what the source's own #define of each derived divisor
    gives in the specialised build: NVRTC checks it with static_asserts appended to the source."""
    nvrtc_or_skip()
    from cupy_backends.cuda.libs import nvrtc

    from miofind.compile import cuda_include_dirs

    picked = [(sid, key, g) for sid, key, g in BUILDS if g.kinfo.source == src and not g.wide][:3]
    assert picked
    for sid, key, g in picked:
        k = _specialised(sid, key, g.kinfo.name)
        ints = {n: int(v) for n, v in k.macros if v.lstrip("-").isdigit()}
        values = generic.DERIVED[src](ints)
        assert set(values) <= _derived_names(src)
        asserts = "".join(f'static_assert(({n}) == {v}, "{n} != {v}");\n' for n, v in values.items())
        text = kernel_source(src) + "\n" + asserts
        prog = nvrtc.createProgram(text, src, [], [])
        try:
            opts = ["-arch=sm_90", "-std=c++17", "--fdevice-syntax-only",
                    *(f"-I{d}" for d in cuda_include_dirs()), *k.compile_options()]
            try:
                nvrtc.compileProgram(prog, opts)
            except Exception:
                pytest.fail(f"{sid} on {key}: {nvrtc.getProgramLog(prog)[:2000]}")
        finally:
            nvrtc.destroyProgram(prog)


def test_fast_division_of_im2col_and_depthwise_builds():
    """32-bit-index builds read every FASTDIV divisor they define through MIOFIND_FD (derived ones
    included, with their values); 64-bit-index builds read none."""
    checked = 0
    for sid, key, g in BUILDS:
        src = g.kinfo.source
        if src not in generic.DERIVED:
            continue
        m = dict(g.kinfo.macros)
        if g.wide:
            assert not g.divisors and all("MIOFIND_FD" not in v for v in m.values())
            continue
        k = _specialised(sid, key, g.kinfo.name)
        ints = {n: int(v) for n, v in k.macros if v.lstrip("-").isdigit()}
        expect = {**{n: ints[n] for n in generic.FASTDIV[src] if n in ints}, **generic.DERIVED[src](ints)}
        for n, v in expect.items():
            i = generic.FASTDIV[src].index(n)
            assert m[n] == f"MIOFIND_FD({i})" and g.divisors[i] == v, (sid, n)
        checked += 1
    assert checked >= 40


def test_one_im2col_build_serves_2d_shapes_and_keeps_depth_compile_time():
    """Sizes, channels, groups, filter, pads, strides and dilations of 2D problems are read at run
    time (same VEC: odd pixel counts); the depth axis stays compile-time: one build per depth geometry."""
    s = _solver("GemmFwdRest")

    def build(**kw):
        p = ProblemDescription.make("F", **kw)
        (g,) = generic.generic_kernels(s.get_solution(p))
        return g.kinfo.compile_options(), g.values

    a = build(n=2, c=5, k=7, in_size=(13, 11), filter_size=3, pads=1)
    b = build(n=3, c=7, k=4, in_size=(17, 15), filter_size=(5, 3), pads=(2, 1), strides=(2, 1), dilations=(1, 2))
    assert a[0] == b[0] and a[1] != b[1]
    d1 = build(n=1, c=4, k=6, in_size=(5, 7, 6), filter_size=3, pads=1)     # 210 pixels: VEC 2
    d2 = build(n=2, c=3, k=5, in_size=(5, 7, 10), filter_size=3, pads=1)    # 350 pixels: VEC 2
    d3 = build(n=1, c=4, k=6, in_size=(7, 7, 6), filter_size=3, pads=1)     # another depth
    assert d1[0] == d2[0] != d3[0]


@pytest.mark.parametrize("sid,d,layout", [("ConvDepthwiseFwd", "F", "NCHW"), ("ConvDepthwiseBwd", "B", "NHWC"),
                                          ("ConvDepthwiseWrw", "W", "NCHW"), ("ConvDepthwiseWrw", "W", "NHWC")])
def test_one_depthwise_build_serves_shapes_of_a_config(sid, d, layout):
    """Under one config, depthwise problems of other batch, channel and image sizes share the build
    (widths 12 and 20: the same NCHW staging vector); another stride is another build."""
    s = _solver(sid)

    def builds(cfg, **kw):
        p = ProblemDescription.make(d, filter_size=3, pads=1, layout=layout, **kw)
        assert s.is_valid_config(p, cfg), (p.key(), cfg)
        gks = [g for g in generic.generic_kernels(s.get_solution(p, cfg)) if g is not None]
        return [g.kinfo.compile_options() for g in gks], [g.values for g in gks]

    p1 = dict(n=2, c=16, k=16, groups=16, in_size=(12, 12))
    cfg = s.default_config(ProblemDescription.make(d, filter_size=3, pads=1, layout=layout, **p1))
    a = builds(cfg, **p1)
    b = builds(cfg, n=5, c=24, k=24, groups=24, in_size=(17, 20))
    assert a[0] == b[0] and a[1] != b[1]
    if d != "B":        # backward data's strided pass needs another row unit: a config of its own
        c = builds(cfg, n=2, c=16, k=16, groups=16, in_size=(24, 24), strides=2)
        assert c[0] != a[0]
