"""The bridge GEMM (``miofind.lt_bridge``): cuBLASLt-backed solutions run before cuBLASLt has set itself up.

CPU: the kernel compiles for sm_90, the switch parses, measuring contexts nest, unsupported shapes are refused.
GPU: the kernel against a float64 product for every type pair, transpose and beta; and in fresh processes (the
bridge only acts before a process's first cuBLASLt query): a Winograd and two GEMM solutions' first runs go
through the bridge while cuBLASLt sets up, then through cuBLASLt and its native replay, both within the solver's
tolerance of the float64 reference; a run inside a stream capture, a find's timing and ``MIOFIND_LT_BRIDGE=0``
never take the bridge.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from miofind import lt_bridge

REPO = Path(__file__).resolve().parents[2]


def test_the_bridge_kernels_compile_for_sm90():
    from nvrtc_check import nvrtc_or_skip

    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile

    cubin = nvrtc_compile(lt_bridge.kernel_info(), arch="sm_90")
    assert cubin[:4] == b"\x7fELF"
    for name in lt_bridge.KERNELS.values():       # one module holds every type pair's kernel
        assert name.encode() in cubin, name


def test_switch_and_measuring_contexts(monkeypatch):
    from miofind import env

    monkeypatch.delenv("MIOFIND_LT_BRIDGE", raising=False)
    assert env.lt_bridge() is True
    monkeypatch.setenv("MIOFIND_LT_BRIDGE", "0")
    assert env.lt_bridge() is False
    monkeypatch.setenv("MIOFIND_LT_BRIDGE", "yes")
    with pytest.raises(ValueError, match="MIOFIND_LT_BRIDGE='yes'"):
        env.lt_bridge()
    assert not lt_bridge.measuring()
    with lt_bridge.direct():
        assert lt_bridge.measuring()
        with lt_bridge.direct():
            assert lt_bridge.measuring()
        assert lt_bridge.measuring()
    assert not lt_bridge.measuring()


@pytest.mark.parametrize("shape,ok", [
    ((0, 0, 64, 64, 64, 0, 64, 0, 64, 0, 0, 64, 0, 1, 68), True),          # FP32: taken
    ((1, 0, 64, 64, 64, 14, 64, 0, 64, 0, 0, 64, 0, 9, 68), True),         # BF16 in, FP32 out, batched: taken
    ((0, 0, 64, 64, 64, 0, 64, 0, 64, 0, 2, 64, 0, 1, 68), False),         # FP32 in, FP16 out: no such kernel
    ((0, 0, 64, 64 * 65536, 64, 0, 64, 0, 64, 0, 0, 64, 0, 1, 68), False),  # n over 65535 tiles of grid.y
    ((0, 0, 0, 64, 64, 0, 64, 0, 64, 0, 0, 64, 0, 1, 68), False),          # an empty matmul
])
def test_shapes_the_kernel_does_not_take_are_refused(monkeypatch, shape, ok):
    """With the binary cached (here: said to be), the type pair and sizes decide."""
    from miofind import compile as C

    monkeypatch.setattr(C, "is_compiled", lambda ki: True)
    monkeypatch.setattr(C, "compile_kernel", lambda ki: object())
    br = lt_bridge.Bridge(shape, 0)
    assert br.ok is ok
    if ok:
        assert br.launch.grid == (1, 1, shape[13])


def test_without_the_binary_it_is_refused_and_compiled_for_the_next_process(monkeypatch):
    from miofind import compile as C

    started = []
    monkeypatch.setattr(C, "is_compiled", lambda ki: False)
    monkeypatch.setattr(lt_bridge, "_compile_for_next_process", lambda: started.append(1))
    assert not lt_bridge.Bridge((0, 0, 64, 64, 64, 0, 64, 0, 64, 0, 0, 64, 0, 1, 68), 0).ok
    assert started == [1]


def test_a_veto_keeps_calls_off_the_bridge(monkeypatch):
    monkeypatch.setattr(lt_bridge, "_vetoes", [])
    assert not lt_bridge.vetoed()
    flag = {"on": False}
    check = lambda: flag["on"]      # noqa: E731
    lt_bridge.veto(check)
    lt_bridge.veto(check)           # once
    assert lt_bridge._vetoes == [check] and not lt_bridge.vetoed()
    flag["on"] = True
    assert lt_bridge.vetoed()


def _colmajor(rng, rows, cols, ld, batch, stride, np_t):
    """A batch of column-major rows x cols matrices at leading dimension ld and element stride, as a flat array."""
    flat = np.full(stride * (batch - 1) + ld * cols, np.nan, np.float64)
    for b in range(batch):
        m = rng.uniform(-1, 1, (cols, rows))
        for j in range(cols):
            flat[b * stride + j * ld: b * stride + j * ld + rows] = m[j]
    return flat.astype(np_t)


def _read(flat, rows, cols, ld, batch, stride):
    return np.stack([np.stack([flat[b * stride + j * ld: b * stride + j * ld + rows] for j in range(cols)], axis=1)
                     for b in range(batch)]).astype(np.float64)


_TYPES = {0: np.float32, 2: np.float16}


@pytest.mark.gpu
@pytest.mark.parametrize("ab,ct", sorted(lt_bridge.KERNELS))
@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("beta", [0, 1])
def test_the_kernel_against_a_float64_product(ab, ct, ta, tb, beta):
    import cupy

    from miofind.compile import compile_kernel
    from miofind.verify import f32_to_bf16_bits

    compile_kernel(lt_bridge.kernel_info())          # in the kernel cache, as the bridge requires
    m, n, k, batch = 70, 33, 37, 3                     # partial tiles in every dimension, K not a multiple of 16
    a_rows, a_cols = (m, k) if ta == 0 else (k, m)
    b_rows, b_cols = (k, n) if tb == 0 else (n, k)
    lda, ldb, ldc = a_rows + 3, b_rows + 5, m + 2
    sa, sb, sc = lda * a_cols + 7, ldb * b_cols + 1, ldc * n + 11
    rng = np.random.default_rng(ab * 100 + ct * 10 + ta * 4 + tb * 2 + beta)

    def dev(flat, t):
        if t == 14:       # BF16: the bits of the rounded float32 values, kept for the reference
            bits = cupy.asnumpy(f32_to_bf16_bits(cupy.asarray(flat, dtype=cupy.float32)))
            back = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
            return cupy.asarray(bits), back
        host = flat.astype(_TYPES[t])
        return cupy.asarray(host), host.astype(np.float64)

    A, a64 = dev(_colmajor(rng, a_rows, a_cols, lda, batch, sa, np.float64), ab)
    B, b64 = dev(_colmajor(rng, b_rows, b_cols, ldb, batch, sb, np.float64), ab)
    C, c64 = dev(_colmajor(rng, m, n, ldc, batch, sc, np.float64), ct)
    br = lt_bridge.Bridge((ta, tb, m, n, k, ab, lda, sa, ldb, sb, ct, ldc, sc, batch, 68), beta)
    assert br.ok
    before = lt_bridge.calls
    br(0, A.data.ptr, B.data.ptr, C.data.ptr)
    cupy.cuda.runtime.deviceSynchronize()
    assert lt_bridge.calls == before + 1
    opa = _read(a64, a_rows, a_cols, lda, batch, sa)
    opb = _read(b64, b_rows, b_cols, ldb, batch, sb)
    if ta:
        opa = opa.transpose(0, 2, 1)
    if tb:
        opb = opb.transpose(0, 2, 1)
    ref = opa @ opb + (_read(c64, m, n, ldc, batch, sc) if beta else 0)
    out = cupy.asnumpy(C)
    if ct == 14:
        out = (out.astype(np.uint32) << 16).view(np.float32)
    got = _read(out.astype(np.float64), m, n, ldc, batch, sc)
    # float sums of k = 37 products of |x| <= 1: float32 output within 1e-5 of max |ref|; 16-bit outputs round once
    tol = {0: 1e-5, 2: 2e-3, 14: 1.6e-2}[ct]
    err = np.abs(got - ref).max() / np.abs(ref).max()
    assert err < tol, (err, tol)
    # the gaps between columns and between batches (NaN before the call) are untouched
    mask = np.ones(out.shape, bool)
    for b in range(batch):
        for j in range(n):
            mask[b * sc + j * ldc: b * sc + j * ldc + m] = False
    assert np.isnan(out[mask].astype(np.float64)).all()


CHILD = r"""
import json, os, sys, time
import cupy, numpy as np
from miofind import cublas, lt_bridge
from miofind.invokers import prepare
from miofind.problem import ProblemDescription as P
from miofind.registry import get_solver
from miofind.harness import reference_invoker_for
from miofind.verify import errors_of, random_array, to_float64, tolerance_for

case = sys.argv[1]
cases = [
    ("ConvWinograd3x3F43Fwd", P.make("F", n=2, c=32, k=48, in_size=(14, 14), filter_size=3, pads=1)),
    ("GemmFwdRest", P.make("F", n=2, c=24, k=40, in_size=(12, 12), filter_size=3, pads=1, dtype="FP16")),
    ("GemmWrwUniversal", P.make("W", n=2, c=16, k=32, in_size=(10, 10), filter_size=3, pads=1, dtype="BF16")),
]
rng = cupy.random.default_rng(7)
st = cupy.cuda.Stream(non_blocking=True)
out = {}
if case.startswith("runs:"):       # one solution's first two runs (the bridge acts before a process's first query)
    for sid, p in [cases[int(case[5:])]]:
        pr = prepare(p, sid)
        a_s, b_s, o_s = p.io_shapes()
        a, b = random_array(a_s, p.dtype, rng), random_array(b_s, p.dtype, rng)
        ref = reference_invoker_for(p).output(p, to_float64(a, p.dtype), to_float64(b, p.dtype))
        cupy.cuda.runtime.deviceSynchronize()
        res = []
        for i in range(2):
            y = cupy.full(o_s, cupy.nan, dtype=a.dtype) if p.dtype != "BF16" else cupy.full(o_s, 0xFFFF, cupy.uint16)
            before = lt_bridge.calls
            t0 = time.perf_counter()
            pr(a, b, y, stream=st)
            st.synchronize()
            ms = (time.perf_counter() - t0) * 1e3
            e = errors_of(y, p.dtype, ref)
            why = tolerance_for(p, get_solver(sid).family).failure(e)
            res.append({"bridged": lt_bridge.calls - before, "ms": ms, "rel_l2": e.rel_l2, "fail": why})
            if i == 0:      # cuBLASLt set up and asked about every GEMM kind: the next call goes to cuBLASLt
                cublas.settle()
        res[-1]["replays"] = pr.replays(st.ptr)
        out[sid] = res
    from miofind.launch import native
    out["native"] = native() is not None
elif case == "capture":
    sid, p = cases[0]
    pr = prepare(p, sid)
    a_s, b_s, o_s = p.io_shapes()
    a, b = random_array(a_s, p.dtype, rng), random_array(b_s, p.dtype, rng)
    ref = reference_invoker_for(p).output(p, to_float64(a, p.dtype), to_float64(b, p.dtype))
    y = cupy.full(o_s, cupy.nan, dtype=a.dtype)
    pr.workspace_for(st.ptr)
    cupy.cuda.runtime.deviceSynchronize()
    st.begin_capture()
    pr(a, b, y, stream=st)
    g = st.end_capture()
    g.launch(st)
    st.synchronize()
    e = errors_of(y, p.dtype, ref)
    out = {"bridged": lt_bridge.calls, "rel_l2": e.rel_l2, "fail": tolerance_for(p, "winograd").failure(e)}
elif case.startswith("settle:"):   # settle, then a first run: FP32 Winograd, FP16 GEMM (another kind)
    sid, p = cases[int(case[7:])]
    pr = prepare(p, sid)
    cublas.settle()
    a_s, b_s, o_s = p.io_shapes()
    a, b = random_array(a_s, p.dtype, rng), random_array(b_s, p.dtype, rng)
    pr(a, b, cupy.empty(o_s, dtype=a.dtype), stream=st)
    st.synchronize()
    out = {"bridged": lt_bridge.calls, "ready": cublas._lt_ready}
elif case == "find":
    # the set-up thread held back, so that cuBLASLt is not set up when the find verifies and times: only its
    # own measuring (lt_bridge.direct) keeps those runs off the bridge
    import threading
    from miofind import find_solutions
    gate = threading.Event()
    set_up = cublas._set_up_lt
    cublas._set_up_lt = lambda dev: (gate.wait(120), set_up(dev))
    sid, p = cases[0]
    res = find_solutions(p, solvers=[sid])
    out = {"bridged": lt_bridge.calls, "solvers": [s.solver_id for s in res]}
    gate.set()
print("RESULT " + json.dumps(out))
"""


def _child(case: str, **env) -> dict:
    import json

    full = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]), **env}
    out = subprocess.run([sys.executable, "-c", CHILD, case], capture_output=True, text=True, cwd=REPO, timeout=300,
                         env=full)
    assert out.returncode == 0, out.stderr[-3000:]
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    assert line, out.stdout[-2000:]
    return json.loads(line[-1][7:])


@pytest.fixture
def bridge_cached(tmp_path):
    """A kernel cache holding the bridge's module (the bridge runs only where its binary is cached)."""
    from miofind.compile import compile_kernel

    compile_kernel(lt_bridge.kernel_info())
    return {}


@pytest.mark.gpu
@pytest.mark.parametrize("case", [0, 1, 2])
def test_first_runs_bridge_then_cublaslt_and_its_replay(bridge_cached, tmp_db, case):
    got = _child(f"runs:{case}", MIOFIND_LT_BRIDGE="1")
    native = got.pop("native")
    (sid, (first, second)), = got.items()
    assert first["bridged"] >= 1, (sid, first)             # the first run's matmuls took the bridge
    assert second["bridged"] == 0, (sid, second)           # after the set-up and its kind's query: cuBLASLt
    assert first["fail"] is None and second["fail"] is None, (sid, first, second)
    assert second["replays"] or not native, sid             # traced once cuBLASLt is set up


@pytest.mark.gpu
def test_switched_off_no_run_takes_the_bridge(bridge_cached, tmp_db):
    got = _child("runs:0", MIOFIND_LT_BRIDGE="0")
    got.pop("native")
    (sid, (first, second)), = got.items()
    assert first["bridged"] == 0 and second["bridged"] == 0, sid
    assert first["fail"] is None and second["fail"] is None, sid


@pytest.mark.gpu
def test_a_first_run_inside_a_capture_runs_cublaslt(bridge_cached, tmp_db):
    got = _child("capture", MIOFIND_LT_BRIDGE="1")
    assert got["bridged"] == 0
    assert got["fail"] is None


@pytest.mark.gpu
def test_a_find_times_and_verifies_cublaslt_not_the_bridge(bridge_cached, tmp_db):
    got = _child("find", MIOFIND_LT_BRIDGE="1", MIOFIND_SYSTEM_DB="none")
    assert got["solvers"] == ["ConvWinograd3x3F43Fwd"]
    assert got["bridged"] == 0


def test_the_detached_compile_fills_the_kernel_cache(tmp_path, monkeypatch):
    """What a process without the bridge's binary leaves for the next one (``_compile_here``, run detached)."""
    from nvrtc_check import nvrtc_or_skip

    nvrtc_or_skip()
    from miofind import compile as C

    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(tmp_path / "kc"))
    monkeypatch.setattr(C, "lower_priority", lambda nice: None)    # not this test process's priority
    lt_bridge._compile_here("sm_90")
    path = C.private_cache_dir() / f"{C.binary_key(lt_bridge.kernel_info(), 'sm_90')}.cubin"
    assert C.cached_cubin(path)[:4] == b"\x7fELF"


@pytest.mark.gpu
@pytest.mark.parametrize("case", [0, 1])
def test_settle_sets_cublaslt_up_before_a_first_run(bridge_cached, tmp_db, case):
    """What the steady-state benchmarks start with: no timed call on the bridge, whatever the GEMM's data type."""
    got = _child(f"settle:{case}", MIOFIND_LT_BRIDGE="1")
    assert got == {"bridged": 0, "ready": True}


class _FakeBridge:
    def __init__(self, shape, beta):
        self.ok, self.calls = True, []

    def __call__(self, stream, a, b, c):
        self.calls.append((stream, a, b, c))


@pytest.fixture
def unplanned(monkeypatch):
    """An LtGemm that no call has planned, in a process where cuBLASLt is not set up (no GPU needed): the bridge
    and the planning path replaced by recorders."""
    import threading

    cupy = pytest.importorskip("cupy")
    from miofind import cublas

    g = object.__new__(cublas.LtGemm)
    g.shape, g.beta, g._br, g._args, g.dev = (0,) * 15, 0, None, {}, 0
    g.kind = (cublas.R_16F, cublas.R_16F, cublas.COMPUTE_32F)
    monkeypatch.setattr(lt_bridge, "_vetoes", [])
    g._call_lock = threading.Lock()
    planned = []
    monkeypatch.setattr(g, "_block", lambda stream, align: planned.append(stream))    # no plan: the classic call
    monkeypatch.setattr(g, "_classic", lambda stream, a, b, c: planned.append(("classic", stream)))
    monkeypatch.setattr(lt_bridge, "Bridge", _FakeBridge)
    monkeypatch.setattr(cublas, "_lt_ready", False)
    monkeypatch.setattr(cublas, "_kinds_ready", set())
    started = []
    monkeypatch.setattr(cublas, "start_setup", lambda dev: started.append(dev))
    monkeypatch.setattr(cublas, "query_kinds", lambda kinds, dev=None: started.append(("kinds", kinds, dev)))
    capturing = {"on": False}
    monkeypatch.setattr(cupy.cuda.runtime, "streamIsCapturing", lambda s: capturing["on"])
    monkeypatch.setenv("MIOFIND_LT_BRIDGE", "1")
    return g, planned, started, capturing


def test_an_unplanned_call_takes_the_bridge_and_starts_the_setup(unplanned):
    g, planned, started, _ = unplanned
    g.call(7, 256, 512, 768)
    assert g._br.calls == [(7, 256, 512, 768)] and planned == [] and started == [0, ("kinds", (g.kind,), 0)]


def test_the_bridge_waits_for_the_first_query_of_its_kind(unplanned, monkeypatch):
    """cuBLASLt set up (its FP32 query returned) but not yet asked about this GEMM's kind (FP16: 94-120 ms more on
    an H200): still the bridge, the kind's query started; once it returned, cuBLASLt plans the call."""
    from miofind import cublas

    g, planned, started, _ = unplanned
    monkeypatch.setattr(cublas, "_lt_ready", True)
    cublas._kinds_ready.add((cublas.R_32F, cublas.R_32F, cublas.COMPUTE_32F))
    g.call(7, 256, 512, 768)
    assert g._br.calls == [(7, 256, 512, 768)] and planned == [] and ("kinds", (g.kind,), 0) in started
    cublas._kinds_ready.add(g.kind)
    g.call(7, 256, 512, 768)
    assert planned == [7, ("classic", 7)] and len(g._br.calls) == 1


@pytest.mark.parametrize("why", ["measuring", "switched off", "capturing", "ready", "no binary"])
def test_the_bridge_is_not_taken(unplanned, monkeypatch, why):
    from miofind import cublas

    g, planned, started, capturing = unplanned
    if why == "switched off":
        monkeypatch.setenv("MIOFIND_LT_BRIDGE", "0")
    elif why == "capturing":
        capturing["on"] = True
    elif why == "ready":
        monkeypatch.setattr(cublas, "_lt_ready", True)
        cublas._kinds_ready.add(g.kind)
    elif why == "no binary":
        monkeypatch.setattr(_FakeBridge, "__init__", lambda self, shape, beta: setattr(self, "ok", False))
    with (lt_bridge.direct() if why == "measuring" else contextlib.nullcontext()):
        g.call(7, 256, 512, 768)
    assert planned == [7, ("classic", 7)], why            # planned through cuBLASLt (here: its classic fallback)
    assert g._br is None or not getattr(g._br, "calls", []), why


def test_a_trace_during_the_setup_is_not_yet(unplanned):
    """A recipe's trace (the native replay, miofind.torch's C++ path) waits for cuBLASLt: NotYet, nothing planned."""
    from miofind import launch

    g, planned, _, _ = unplanned
    t = launch._Tracer()
    launch._tracer = t
    try:
        with pytest.raises(launch.NotYet):
            g.call(7, 256, 512, 768)
    finally:
        launch._tracer = None
    assert planned == [] and not g._br.calls
    # the native replay's maker says "not yet" (False: ask again), not "never" (None), where the extension is built
    got = launch.replayer(launch.mark_traceable(lambda a, b, o, w, s: g.call(s, a, b, o)), False, 7)
    nat = launch.native()
    assert got is (False if nat is not None and hasattr(nat, "recipe") else None)


def test_a_replay_told_not_yet_is_tried_again_on_the_hot_path(monkeypatch):
    """miofind.torch's Entry.run asks ``Prepared.replay(make=False)``: a stream whose first trace met cuBLASLt's
    set-up (``replayer`` -> False) is traced again there until it gets its replay; a stream never traced is not."""
    pytest.importorskip("cupy")
    import cupy

    from miofind import invokers

    pr = object.__new__(invokers.Prepared)
    pr._replay, pr._runs, pr._pending, pr._sw, pr.invoker, pr.workspace_bytes = True, {}, set(), None, object(), 0
    monkeypatch.setattr(cupy.cuda.runtime, "streamIsCapturing", lambda s: False)
    ran, answers = [], [False, False]

    def replayer(inv, ws, stream):
        return answers.pop(0) if answers else ((lambda *a: ran.append(a) or 0), (0,))
    monkeypatch.setattr(invokers, "replayer", replayer)
    assert pr.replay(5, 1, 2, 3, 0, make=False) is False and len(answers) == 2    # never traced: not tried
    assert pr.replay(5, 1, 2, 3, 0) is False and pr._pending == {5}                # not yet
    assert pr.replay(5, 1, 2, 3, 0, make=False) is False and not answers          # tried again: still not yet
    assert pr.replay(5, 1, 2, 3, 0, make=False) is True and ran == [(5, 1, 2, 3, 0)] and not pr._pending
    assert pr.replay(5, 1, 2, 3, 0, make=False) is True and len(ran) == 2         # the kept replay
