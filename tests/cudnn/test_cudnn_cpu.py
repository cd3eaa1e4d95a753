"""cuDNN family without a GPU: the exact, fast reason when the frontend is missing; layouts as strides;
applicability both ways; and the plan bookkeeping (filters, dedup, default plan, invoker wiring) against a
stand-in ``cudnn`` module that mimics the frontend's graph API."""

import dataclasses
import enum
import itertools
import sys
import threading
import time
import types

import numpy as np
import pytest

from shapes import DTYPES, SHAPES, layouts_for
from miofind.problem import ProblemDescription
from miofind.solvers import cudnn_base
from miofind.solvers.cudnn_bwd import ConvCudnnBwd
from miofind.solvers.cudnn_fwd import ConvCudnnFwd
from miofind.solvers.cudnn_wrw import ConvCudnnWrw

P = ProblemDescription.make
SOLVERS = (ConvCudnnFwd(), ConvCudnnBwd(), ConvCudnnWrw())
DIR = {"F": SOLVERS[0], "B": SOLVERS[1], "W": SOLVERS[2]}


@pytest.fixture
def no_frontend(monkeypatch):
    monkeypatch.setitem(sys.modules, "cudnn", None)  # `import cudnn` raises ModuleNotFoundError
    cudnn_base.reset_frontend_status()
    yield
    cudnn_base.reset_frontend_status()


def _problems():
    out = []
    for kw in SHAPES.values():
        for lay, dt, d in itertools.product(layouts_for(kw), DTYPES, "FBW"):
            out.append(P(d, layout=lay, dtype=dt, **kw))
    out.append(P("F", n=2, c=6, k=4, in_size=(7, 6), filter_size=3, pads=1, strides=2, transposed=True,
                 output_padding=1, groups=2))
    out.append(P("F", n=2, c=8, k=8, in_size=(9, 9), math="tf32"))
    out.append(ProblemDescription.from_key("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-INT8INT8INT32-F"))
    return out


def test_ids_and_algorithms():
    assert [(s.id, s.algorithm, "".join(s.directions)) for s in SOLVERS] == [
        ("ConvCudnnFwd", "cudnnFrontendFwd", "F"), ("ConvCudnnBwd", "cudnnFrontendBwdData", "B"),
        ("ConvCudnnWrw", "cudnnFrontendBwdWeights", "W")]
    assert all(s.family == "cudnn" and s.tunable and s.kernel_files == () for s in SOLVERS)


def test_not_installed_exact_reason_and_fast(no_frontend):
    probs = _problems()
    for s in SOLVERS:
        for p in probs:
            a = s.applicability(p)
            assert not a and a.reason == "cuDNN frontend not installed", (s.id, p.key(), a.reason)
    p = probs[0]
    for s in SOLVERS:
        t0 = time.perf_counter()
        for _ in range(1000):
            s.applicability(p)
        per_call = (time.perf_counter() - t0) / 1000
        assert per_call < 1e-3, f"{s.id}: {per_call * 1e6:.1f} us per applicability call"


def test_not_installed_everything_else_says_so(no_frontend):
    p = P("F", n=1, c=4, k=4, in_size=(8, 8))
    s = SOLVERS[0]
    assert s.workspace_bytes(p) == 0
    assert list(s.config_space(p)) == []
    with pytest.raises(ValueError, match="cuDNN frontend not installed"):
        s.get_solution(p)
    assert cudnn_base.cudnn_candidates(p) == []
    with pytest.raises(cudnn_base.CudnnPlanError, match="cuDNN frontend not installed"):
        cudnn_base.list_plans(p)


def test_broken_frontend_reason(monkeypatch):
    mod = types.ModuleType("cudnn")  # a 'cudnn' that is not the NVIDIA frontend
    mod.__file__ = "/somewhere/cudnn.py"
    monkeypatch.setitem(sys.modules, "cudnn", mod)
    cudnn_base.reset_frontend_status()
    try:
        a = SOLVERS[0].applicability(P("F", n=1, c=4, k=4, in_size=(8, 8)))
        assert not a and a.reason.startswith("cuDNN frontend not installed (") and "pygraph" in a.reason
    finally:
        cudnn_base.reset_frontend_status()


def test_namespace_package_is_not_the_frontend(monkeypatch, tmp_path):
    (tmp_path / "cudnn").mkdir()  # like tests/cudnn on sys.path: imports as a namespace package
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "cudnn", raising=False)
    cudnn_base.reset_frontend_status()
    try:
        assert cudnn_base.frontend_status() in ((False, "cuDNN frontend not installed"), (True, ""))
        if not cudnn_base.frontend_status()[0]:
            assert "cudnn" not in sys.modules
    finally:
        cudnn_base.reset_frontend_status()


def _installed(tmp_path, monkeypatch, body: str, compiled: bool = True):
    """A package named cudnn on sys.path, as pip installs the frontend (``__init__.py``, a compiled
    module beside it), not imported yet."""
    pkg = tmp_path / "site" / "cudnn"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(body)
    if compiled:
        (pkg / "_compiled_module.cpython-312-x86_64-linux-gnu.so").write_bytes(b"")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "cudnn", raising=False)
    cudnn_base.reset_frontend_status()


def test_installed_frontend_found_without_importing_it(monkeypatch, tmp_path):
    _installed(tmp_path, monkeypatch, '__version__ = "9.8.7"\nraise RuntimeError("imported")\n')
    monkeypatch.setattr(cudnn_base, "_backend_library", lambda: None)
    try:
        assert cudnn_base.frontend_status() == (True, "")
        assert SOLVERS[0].applicability(P("F", n=1, c=4, k=4, in_size=(8, 8)))
        assert cudnn_base.library_versions() == {"cudnn": None, "cudnn_frontend": "9.8.7"}
        assert "cudnn" not in sys.modules
        # the first real use imports it; the import's failure becomes the status, with its reason
        with pytest.raises(cudnn_base.CudnnPlanError, match="import cudnn failed: RuntimeError: imported"):
            cudnn_base._cudnn()
        ok, why = cudnn_base.frontend_status()
        assert not ok and "imported" in why
        assert not SOLVERS[0].applicability(P("F", n=1, c=4, k=4, in_size=(8, 8)))
    finally:
        sys.modules.pop("cudnn", None)
        cudnn_base.reset_frontend_status()


def test_installed_package_without_compiled_module(monkeypatch, tmp_path):
    _installed(tmp_path, monkeypatch, '__version__ = "1.0"\n', compiled=False)
    try:
        ok, why = cudnn_base.frontend_status()
        assert not ok and why.startswith("cuDNN frontend not installed (") and "compiled module" in why
        assert "cudnn" not in sys.modules
    finally:
        cudnn_base.reset_frontend_status()


def test_versions_read_unimported_are_corrected_by_the_import(monkeypatch, tmp_path):
    from miofind import trust
    body = ('__version__ = "1.2.3"\nclass pygraph: pass\ndef backend_version():\n    return 91900\n')
    _installed(tmp_path, monkeypatch, body)

    # what ctypes loads reports another backend than the import does
    lib = types.SimpleNamespace(cudnnGetVersion=lambda: 90100)
    monkeypatch.setattr(cudnn_base, "_backend_library", lambda: lib)
    try:
        assert cudnn_base.library_versions() == {"cudnn": "90100", "cudnn_frontend": "1.2.3"}
        before = trust.trust_key(SOLVERS[0])
        assert "cudnn=90100" in before and "cudnn" not in sys.modules
        cudnn_base._cudnn()
        assert cudnn_base.library_versions() == {"cudnn": "91900", "cudnn_frontend": "1.2.3"}
        assert "cudnn=91900" in trust.trust_key(SOLVERS[0])
    finally:
        sys.modules.pop("cudnn", None)
        cudnn_base.reset_frontend_status()


@pytest.mark.parametrize("shape", list(SHAPES))
def test_tensor_specs_match_memory_layouts(shape):
    """dims are N,C,(D),H,W (weights K,C/G,(Z),Y,X); strides are those of the layout's dense array."""
    kw = SHAPES[shape]
    for lay in layouts_for(kw):
        p = P("F", layout=lay, **kw)
        specs = cudnn_base.tensor_specs(p)
        for role, mshape in (("x", p.x_shape), ("w", p.w_shape), ("y", p.y_shape)):
            arr = np.empty(mshape, dtype=np.float32)
            logical = np.moveaxis(arr, -1, 1) if lay in ("NHWC", "NDHWC") else arr
            assert specs[role].dim == logical.shape, (role, lay)
            assert specs[role].stride == tuple(s // 4 for s in logical.strides), (role, lay)
        assert specs["w"].dim[:2] == (p.k, p.c // p.groups)


def test_excluded_notes():
    assert cudnn_base.excluded_notes(P("F", n=1, c=4, k=4, in_size=(8, 8))) == (
        "TENSOR_CORE", "DOWN_CONVERT_INPUTS", "REDUCED_PRECISION_REDUCTION")
    assert "TENSOR_CORE" not in cudnn_base.excluded_notes(P("F", n=1, c=4, k=4, in_size=(8, 8), math="tf32"))
    for dt in ("FP16", "BF16"):
        assert cudnn_base.excluded_notes(P("W", n=1, c=4, k=4, in_size=(8, 8), dtype=dt)) == (
            "REDUCED_PRECISION_REDUCTION",)


def test_valid_configs():
    s, p = SOLVERS[0], P("F", n=1, c=4, k=4, in_size=(8, 8))
    assert s.default_config(p) is None
    assert s.is_valid_config(p, None) and s.is_valid_config(p, {}) and s.is_valid_config(p, {"plan": "eng0"})
    for bad in ({"plan": ""}, {"plan": 3}, {"plan": "eng0", "x": 1}, {"TILE": 8}, ["eng0"]):
        assert not s.is_valid_config(p, bad), bad


# -- a stand-in for the frontend's graph API -------------------------------------------------

class _Enum(enum.Enum):
    pass


DataType = _Enum("data_type", "FLOAT HALF BFLOAT16 DOUBLE")
HeurMode = _Enum("heur_mode", "A B FALLBACK")
Note = _Enum("numerical_note", "TENSOR_CORE DOWN_CONVERT_INPUTS REDUCED_PRECISION_REDUCTION FFT WINOGRAD")

# (name, numerical notes, workspace, builds?) in heuristic order; mode A then FALLBACK repeats one
PLANS_A = [("eng0_tc", {"TENSOR_CORE"}, 1024, True), ("eng1", set(), 0, True),
           ("eng2_broken", set(), 0, False), ("eng3_fft", {"FFT"}, 4096, True),
           ("eng4_rpr", {"REDUCED_PRECISION_REDUCTION"}, 0, True)]
PLANS_FALLBACK = [("eng1", set(), 0, True), ("eng5", set(), 256, True)]


class FakeTensor:
    _uids = itertools.count(1)

    def __init__(self, name, dim=None, stride=None, data_type=None):
        self.name, self.dim, self.stride, self.data_type, self.output = name, dim, stride, data_type, False
        self.uid = next(self._uids)

    def get_uid(self):
        return self.uid

    def set_output(self, v):
        self.output = v
        return self

    def set_data_type(self, v):
        self.data_type = v
        return self

    def set_dim(self, v):
        self.dim = list(v)
        return self

    def set_stride(self, v):
        self.stride = list(v)
        return self


class FakeGraph:
    def __init__(self, name, io_data_type, intermediate_data_type, compute_data_type, handle):
        self.kw = dict(name=name, io=io_data_type, inter=intermediate_data_type, compute=compute_data_type,
                       handle=handle)
        self.tensors, self.ops, self.plans, self.barred, self.built, self.executed = [], [], [], set(), set(), []
        FAKE.graphs.append(self)

    def tensor(self, name, dim, stride, data_type):
        t = FakeTensor(name, dim, stride, data_type)
        self.tensors.append(t)
        return t

    def _op(self, kind, **kw):
        out = FakeTensor(f"{kind}_out")
        self.ops.append((kind, kw, out))
        return out

    def conv_fprop(self, image, weight, **kw):
        return self._op("fprop", image=image, weight=weight, **kw)

    def conv_dgrad(self, loss, filter, **kw):
        return self._op("dgrad", loss=loss, filter=filter, **kw)

    def conv_wgrad(self, image, loss, **kw):
        return self._op("wgrad", image=image, loss=loss, **kw)

    def validate(self):
        pass

    def build_operation_graph(self):
        pass

    def create_execution_plans(self, modes):
        assert modes == [HeurMode.A, HeurMode.FALLBACK]
        self.plans = PLANS_A + PLANS_FALLBACK

    def deselect_numeric_notes(self, notes):
        names = {n.name for n in notes}
        self.barred |= {i for i, pl in enumerate(self.plans) if pl[1] & names}

    def get_execution_plan_count(self):
        return len(self.plans)

    def get_plan_name_at_index(self, i):
        return self.plans[i][0]

    def build_plan_at_index(self, i):
        if i in self.barred:
            raise RuntimeError("[cudnn_frontend] Error: Deselecting execution plan")
        if not self.plans[i][3]:
            raise RuntimeError("CUDNN_STATUS_NOT_SUPPORTED: engine cannot run this graph")
        self.built.add(i)

    def get_workspace_size_plan_at_index(self, i):
        return self.plans[i][2] if i in self.built else 0

    def execute_plan_at_index(self, pack, workspace, index):
        assert index in self.built
        self.executed.append((index, {t.name: ptr for t, ptr in pack.items()}, workspace, FAKE.stream_of[FAKE.handle]))


class _Fake:
    def reset(self):
        self.graphs, self.stream_of, self.handle = [], {}, None


FAKE = _Fake()


def _fake_module():
    m = types.ModuleType("cudnn")
    m.__file__ = "<stand-in cudnn>"
    m.__version__ = "0.fake"
    m.backend_version = lambda: 99999
    m.data_type, m.heur_mode, m.numerical_note = DataType, HeurMode, Note
    m.pygraph = FakeGraph

    def create_handle():
        FAKE.handle = "handle0"
        return FAKE.handle

    def set_stream(handle, stream):
        FAKE.stream_of[handle] = stream

    m.create_handle, m.set_stream = create_handle, set_stream
    return m


@pytest.fixture
def fake(monkeypatch):
    FAKE.reset()
    # the fake frontend's handles are not cudnnHandle_t: the backend API's path is the GPU tests'
    monkeypatch.setenv("MIOFIND_CUDNN_EXECUTE", "direct")
    monkeypatch.setitem(sys.modules, "cudnn", _fake_module())
    monkeypatch.setattr(cudnn_base, "_device_id", lambda: 0)
    monkeypatch.setattr(cudnn_base, "_handles", {})
    cudnn_base.reset_frontend_status()
    cudnn_base.clear_cache()
    yield FAKE
    cudnn_base.clear_cache()
    cudnn_base.reset_frontend_status()


def test_applicability_with_frontend(fake):
    for p in _problems()[:-1]:
        for s in SOLVERS:
            a = s.applicability(p)
            assert bool(a) == (p.as_conv().direction in s.directions), (s.id, p.key(), a.reason)
            if not a:
                assert "direction" in a.reason
    bad = [
        (ProblemDescription.from_key("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-INT8INT8INT32-F"), "INT8"),

        (ProblemDescription.from_key("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHWc-NCHWc-NCHWc-FP32-F"), "layout"),
        (P("F", n=1, c=4, k=4, in_size=(8, 8), layout="NCHW", w_layout="HWNC"), "layout w=HWNC"),
    ]
    for p, why in bad:
        a = SOLVERS[0].applicability(p)
        assert not a and why in a.reason, (p.key(), a.reason)
    assert SOLVERS[0].applicability(P("F", n=1, c=4, k=4, in_size=(8, 8), layout="NCHW", w_layout="NHWC"))
    # a fused forward (bias, activation) is one graph; B and W keep refusing a bias
    assert SOLVERS[0].applicability(ProblemDescription.from_key("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-1-NCHW-FP32-F_relu"))
    for s, key in ((SOLVERS[1], "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-1-NCHW-FP32-B"),
                   (SOLVERS[2], "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-1-NCHW-FP32-W")):
        a = s.applicability(ProblemDescription.from_key(key))
        assert not a and "fused epilogue (bias)" in a.reason


@pytest.mark.parametrize("math,expect", [
    ("strict", [("eng1", 0), ("eng3_fft", 4096), ("eng5", 256)]),
    ("tf32", [("eng0_tc", 1024), ("eng1", 0), ("eng3_fft", 4096), ("eng5", 256)]),
])
def test_plan_bookkeeping(fake, math, expect):
    p = P("F", n=2, c=8, k=12, in_size=(10, 9), filter_size=3, pads=1, groups=2, layout="NHWC", math=math)
    assert cudnn_base.list_plans(p) == expect
    assert cudnn_base.cudnn_candidates(p) == [{"plan": n} for n, _ in expect]
    assert list(SOLVERS[0].config_space(p)) == [{"plan": n} for n, _ in expect]
    assert len(fake.graphs) == 1, "one graph per problem and device"
    g = fake.graphs[0]
    assert g.kw["io"] is DataType.FLOAT and g.kw["compute"] is DataType.FLOAT and g.kw["handle"] == "handle0"
    table = {r["name"]: r for r in cudnn_base.plan_table(p)}
    assert "excluded" in table["eng4_rpr"]["reason"] and "REDUCED_PRECISION_REDUCTION" in table["eng4_rpr"]["reason"]
    assert "NOT_SUPPORTED" in table["eng2_broken"]["reason"]
    assert ("excluded" in table["eng0_tc"]["reason"]) == (math == "strict")
    assert table["eng1"]["index"] == 1, "duplicates across heuristic modes keep their first position"


def test_a_find_lists_the_first_usable_plans_and_builds_no_further(fake, monkeypatch):
    """``find_configs`` takes MIOFIND_CUDNN_PLANS plans: the same first ones the full list gives, with the
    plans after them left unbuilt."""
    p = P("F", n=2, c=8, k=12, in_size=(10, 9), filter_size=3, pads=1, groups=2, layout="NHWC", math="tf32")
    monkeypatch.setenv("MIOFIND_CUDNN_PLANS", "2")
    assert SOLVERS[0].find_configs(p) == [{"plan": "eng0_tc"}, {"plan": "eng1"}]
    g = fake.graphs[0]
    assert max(g.built) < len(g.plans) - 1 and cudnn_base.list_plans(p, 2) == cudnn_base.list_plans(p)[:2]
    assert cudnn_base.list_plans(p, 100) == cudnn_base.list_plans(p)


def test_default_plan_and_solution(fake):
    p = P("F", n=2, c=8, k=12, in_size=(10, 9), filter_size=3, pads=1)
    s = SOLVERS[0]
    sol = s.get_solution(p)
    assert sol.prebuilt and sol.kernels == [] and sol.config == {"plan": "eng1"} and sol.workspace_bytes == 0
    assert s.workspace_bytes(p) == 0 and s.workspace_bytes(p, {"plan": "eng3_fft"}) == 4096
    sol = s.get_solution(p, {"plan": "eng3_fft"})
    assert sol.workspace_bytes == 4096 and sol.config == {"plan": "eng3_fft"}
    with pytest.raises(ValueError, match="not offered.*offered: eng0_tc, eng1, eng2_broken"):
        s.get_solution(p, {"plan": "eng77"})
    with pytest.raises(cudnn_base.CudnnPlanError, match="excluded.*TENSOR_CORE"):
        s.get_solution(p, {"plan": "eng0_tc"})
    with pytest.raises(cudnn_base.CudnnPlanError, match="build failed.*NOT_SUPPORTED"):
        s.get_solution(p, {"plan": "eng2_broken"})
    with pytest.raises(ValueError, match="expects None or"):
        s.get_solution(p, {"TILE": 3})
    assert s.workspace_bytes(p, {"plan": "eng77"}) == 0


@pytest.mark.parametrize("direction,names,op,ports", [
    ("F", ("x", "w", "conv_out"), "fprop", ("image", "weight")),
    ("B", ("dy", "w", "conv_out"), "dgrad", ("loss", "filter")),
    ("W", ("dy", "x", "conv_out"), "wgrad", ("loss", "image")),
])
def test_graph_and_invoker_wiring(fake, direction, names, op, ports):
    p = P(direction, n=2, c=6, k=4, in_size=(5, 7, 6), filter_size=(3, 1, 3), pads=(1, 0, 1), strides=(2, 1, 1),
          dilations=(1, 2, 1), groups=2, layout="NDHWC", dtype="BF16")
    sol = DIR[direction].get_solution(p, {"plan": "eng3_fft"})
    g = fake.graphs[0]
    (kind, kw, out), = g.ops
    assert kind == op and g.kw["io"] is DataType.BFLOAT16 and g.kw["compute"] is DataType.FLOAT
    assert kw["padding"] == [1, 0, 1] and kw["stride"] == [2, 1, 1] and kw["dilation"] == [1, 2, 1]
    assert kw["compute_data_type"] is DataType.FLOAT
    specs = cudnn_base.tensor_specs(p)
    role_of = {"x": "x", "w": "w", "dy": "y"}
    for port in ports:
        t = kw[port]
        assert (tuple(t.dim), tuple(t.stride)) == (specs[role_of[t.name]].dim, specs[role_of[t.name]].stride)
    out_role = {"F": "y", "B": "x", "W": "w"}[direction]
    assert out.output and out.data_type is DataType.BFLOAT16
    assert (tuple(out.dim), tuple(out.stride)) == (specs[out_role].dim, specs[out_role].stride)

    inv = sol.invoker_factory([])
    inv(0x1000, 0x2000, 0x3000, 0x4000, 0xABC)
    index, pack, ws, stream = g.executed[-1]
    assert g.plans[index][0] == "eng3_fft" and ws == 0x4000 and stream == 0xABC
    out_name = {"F": "fprop_out", "B": "dgrad_out", "W": "wgrad_out"}[direction]
    assert pack == {names[0]: 0x1000, names[1]: 0x2000, out_name: 0x3000}
    with pytest.raises(ValueError, match="needs 4096 workspace bytes, got none"):
        inv(1, 2, 3, 0, 0xABC)


def test_transposed_maps_to_ordinary(fake):
    t = P("F", n=2, c=6, k=4, in_size=(7, 6), filter_size=3, pads=1, strides=2, transposed=True, output_padding=1,
          groups=2)
    assert not ConvCudnnFwd().applicability(t) and ConvCudnnBwd().applicability(t)
    ConvCudnnBwd().get_solution(t)
    assert fake.graphs[0].ops[0][0] == "dgrad"
    ConvCudnnBwd().get_solution(t.as_conv())
    assert len(fake.graphs) == 1, "a transposed problem shares the graph of its ordinary problem"


def test_graph_failure_is_informative(fake, monkeypatch):
    def boom(self):
        raise RuntimeError("CUDNN_STATUS_BAD_PARAM: something")

    monkeypatch.setattr(FakeGraph, "build_operation_graph", boom)
    p = P("W", n=2, c=4, k=4, in_size=(8, 8), pads=1)
    with pytest.raises(cudnn_base.CudnnPlanError) as e:
        ConvCudnnWrw().get_solution(p)
    msg = str(e.value)
    assert "build_operation_graph() failed" in msg and p.key() in msg and "BAD_PARAM" in msg
    assert "cuDNN frontend 0.fake, backend 99999" in msg
    assert "x dim [2, 4, 8, 8] stride [256, 64, 8, 1]" in msg


class FakeHandle:
    def __init__(self, backend_handle):
        self.backend_handle = backend_handle


def _creates(handle):
    def create_handle():
        FAKE.handle = handle
        return handle
    return create_handle


def _run_once(direction="F", plan="eng3_fft"):
    p = P(direction, n=2, c=4, k=4, in_size=(6, 6), filter_size=3, pads=1)
    sol = DIR[direction].get_solution(p, {"plan": plan})
    inv = sol.invoker_factory([])
    inv(0x10, 0x20, 0x30, 0x40, 0xABC)
    g, pl = cudnn_base.resolve(p, {"plan": plan})
    return FAKE.graphs[0], pl, inv


def test_direct_binding_classic_frontend(fake, monkeypatch):
    """<= 1.28: the pybind pygraph has _execute_plan_at_index(uid->ptr, ws, plan index, int handle)."""
    calls = []

    class Classic(FakeGraph):
        def _execute_plan_at_index(self, var_pack, ws, index, handle):
            calls.append((dict(var_pack), ws, index, handle))

    mod = sys.modules["cudnn"]
    monkeypatch.setattr(mod, "pygraph", Classic)
    monkeypatch.setattr(mod, "create_handle", _creates(77))
    g, pl, inv = _run_once("W")
    assert inv.path == "direct" and pl.path == "direct" and not g.executed
    dy, x, dw = (t.uid for t in (g.tensors[0], g.tensors[1], g.ops[0][2]))
    assert calls == [({dy: 0x10, x: 0x20, dw: 0x30}, 0x40, pl.index, 77)]
    assert FAKE.stream_of[77] == 0xABC


def test_direct_binding_python_pygraph(fake, monkeypatch):
    """>= 1.29: pygraph is Python over _lowered_graph; the plan's C++ index is _plans[i].cpp_index."""
    calls = []

    class Lowered:
        def _execute_plan_at_index(self, var_pack, ws, index, handle):
            calls.append((dict(var_pack), ws, index, handle))

    class New(FakeGraph):
        def create_execution_plans(self, modes):
            super().create_execution_plans(modes)
            self._lowered_graph = Lowered()
            self._plans = [types.SimpleNamespace(cpp_index=100 + i) for i in range(len(self.plans))]

    h = FakeHandle(55)
    mod = sys.modules["cudnn"]
    monkeypatch.setattr(mod, "pygraph", New)
    monkeypatch.setattr(mod, "create_handle", _creates(h))
    g, pl, inv = _run_once("B")
    assert inv.path == "direct" and not g.executed
    dy, w, dx = (t.uid for t in (g.tensors[0], g.tensors[1], g.ops[0][2]))
    assert calls == [({dy: 0x10, w: 0x20, dx: 0x30}, 0x40, 100 + pl.index, 55)]
    assert FAKE.stream_of[h] == 0xABC


def test_direct_failure_falls_back_to_public(fake, monkeypatch):
    class Broken(FakeGraph):
        def _execute_plan_at_index(self, var_pack, ws, index, handle):
            raise TypeError("incompatible function arguments")

    mod = sys.modules["cudnn"]
    monkeypatch.setattr(mod, "pygraph", Broken)
    monkeypatch.setattr(mod, "create_handle", _creates(77))
    g, pl, inv = _run_once("F")
    assert inv.path.startswith("public (direct call failed: TypeError")
    assert [e[1] for e in g.executed] == [{"x": 0x10, "w": 0x20, "fprop_out": 0x30}]
    inv(1, 2, 3, 4, 0xABC)
    assert len(g.executed) == 2


def test_backend_invoker_is_traced_as_one_native_call(fake, monkeypatch):
    """MIOFIND_CUDNN_EXECUTE=backend (the default): calls from Python take the frontend's binding, and the invoker is
    traceable: a trace records one library call, cudnn_run(ctx, a, b, out, workspace) of the plan rebuilt through the
    backend API for the trace's stream (made once per stream, on the first stream's finalized plan), its pointers written
    per replay."""
    from miofind import launch
    from miofind.solvers import cudnn_execute

    made, shared = [], []

    class FakeRun:
        trace = cudnn_execute.NativeRun.trace      # the real recording of cudnn_run's call
        _kept, plan = False, None

        def __init__(self, problem, specs, pre, post, device, stream, name, engine, knobs, exclude=(), defer_rtc=False, plan=None):
            self.fn, self.ctx, self.workspace = 0x1234, 0x5678, 0
            self.plan = plan if plan is not None else ("built", stream)
            made.append((problem.direction, stream, name, engine, knobs))
            shared.append(plan)

    class Classic(FakeGraph):
        def _execute_plan_at_index(self, var_pack, ws, index, handle):
            pass

    mod = sys.modules["cudnn"]
    monkeypatch.setattr(mod, "pygraph", Classic)
    monkeypatch.setattr(mod, "create_handle", _creates(77))
    monkeypatch.setattr(cudnn_execute, "NativeRun", FakeRun)
    monkeypatch.setenv("MIOFIND_CUDNN_EXECUTE", "backend")
    monkeypatch.setattr(cudnn_base, "native_first", False)     # the frontend's invoker (NativePlan: the next test)
    g, pl, inv = _run_once("B", "eng1")
    assert inv.path == "backend" and inv.traceable and not made     # the Python call took the binding
    stand_ins = [launch._stand_in(r) for r in range(3)]     # written over per replay (the slots)
    for _ in range(2):
        steps = launch.trace(inv, False, 0xAB)     # no workspace: 0 stays in the call
        assert steps == [("call", 0x1234, [0x5678, *stand_ins, 0], [(1, 0, 0), (2, 1, 0), (3, 2, 0)])]
    assert made == [("B", 0xAB, "eng1", 1, {})]
    launch.trace(inv, False, 0xCD)
    # the second stream's run shares the first one's finalized plan: the plan is built once
    assert made[-1] == ("B", 0xCD, "eng1", 1, {}) and shared == [None, ("built", 0xAB)]
    # refused (a name that is no engine's, no native extension): not traceable, named
    g, pl, inv = _run_once("W")
    with pytest.raises(launch.NotTraceable, match="not a cuDNN engine name"):
        launch.trace(inv, True, 0xAB)
    monkeypatch.setattr(cudnn_execute, "NativeRun", lambda *a: (_ for _ in ()).throw(
        cudnn_execute.BackendPlanError("miofind._native (with cudnn_runner) is not built")))
    g, pl, inv = _run_once("F", "eng1")
    with pytest.raises(launch.NotTraceable, match="not built"):
        launch.trace(inv, False, 0xAB)


def test_stored_plan_replays_natively_without_the_frontend_plan(fake, monkeypatch):
    """A stored plan (a config, no heuristics graph cached) that replays natively is prepared as a NativePlan: its
    NativeRun made for the default stream gives the workspace, and no frontend graph is built. A call from Python runs
    the NativeRun of its stream (one per stream); a trace records its cudnn_run call; pointers off the 16-byte
    alignment take the frontend's plan, built then. A problem whose heuristics graph is cached (a find's), a plan that
    cannot be rebuilt, or native_first off take the frontend's path."""
    from miofind import launch
    from miofind.solvers import cudnn_execute

    made, ran = [], []

    class FakeRun:
        trace = cudnn_execute.NativeRun.trace      # the real recording of cudnn_run's call
        _kept, plan = False, None

        def __init__(self, problem, specs, pre, post, device, stream, name, engine, knobs, exclude=(), defer_rtc=False, plan=None):
            if engine == 5:
                raise cudnn_execute.BackendPlanError("engine 5 cannot be rebuilt")
            self.fn, self.ctx, self.workspace, self.stream = 0x1234, 0x5678 + stream, 512, stream
            made.append((problem.direction, stream, name))

        def __call__(self, a, b, out, ws):
            ran.append((self.stream, a, b, out, ws))

    class Classic(FakeGraph):
        def _execute_plan_at_index(self, var_pack, ws, index, handle):
            self.executed.append((index, dict(var_pack), ws, "direct"))

    mod = sys.modules["cudnn"]
    monkeypatch.setattr(mod, "pygraph", Classic)
    monkeypatch.setattr(mod, "create_handle", _creates(77))
    monkeypatch.setattr(cudnn_execute, "NativeRun", FakeRun)
    monkeypatch.setenv("MIOFIND_CUDNN_EXECUTE", "backend")
    p = P("B", n=2, c=4, k=4, in_size=(6, 6), filter_size=3, pads=1)
    solver = DIR["B"]
    sol = solver.get_solution(p, {"plan": "eng1"})
    assert (sol.workspace_bytes, sol.config) == (512, {"plan": "eng1"})
    assert made == [("B", 0, "eng1")] and not FAKE.graphs, "no frontend graph for a native replay"
    assert solver.workspace_bytes(p, {"plan": "eng1"}) == 512 and len(made) == 1
    inv = sol.invoker_factory([])
    assert inv.path == "native" and inv.traceable
    inv(0x100, 0x200, 0x300, 0x400, 0)
    inv(0x100, 0x200, 0x300, 0x400, 0xAB)
    assert ran == [(0, 0x100, 0x200, 0x300, 0x400), (0xAB, 0x100, 0x200, 0x300, 0x400)]
    assert made[-1] == ("B", 0xAB, "eng1") and not FAKE.graphs
    with pytest.raises(ValueError, match="needs 512 workspace bytes, got none"):
        inv(0x100, 0x200, 0x300, 0, 0)
    steps = launch.trace(inv, True, 0xAB)
    assert steps[0][:2] == ("call", 0x1234) and steps[0][2][0] == 0x5678 + 0xAB and len(made) == 2
    # a misaligned pointer: the frontend's plan, built now (the heuristics' graph here: the stand-in cannot replay)
    inv(0x102, 0x200, 0x300, 0x400, 0)
    assert len(ran) == 2 and len(FAKE.graphs) == 1
    index, pack, ws, how = FAKE.graphs[0].executed[-1]
    # the heuristics' graph reuses the NativePlan; its frontend plan (needing none) is given the NativePlan's 512
    assert FAKE.graphs[0].plans[index][0] == "eng1" and ws == 0x400 and how == "direct"
    assert sorted(pack.values()) == [0x102, 0x200, 0x300] and len(made) == 2
    # a plan the backend API cannot rebuild: the frontend's path
    sol5 = solver.get_solution(P("B", n=2, c=4, k=8, in_size=(6, 6), filter_size=3, pads=1), {"plan": "eng5"})
    assert sol5.invoker_factory([]).path != "native"
    # a find's heuristics graph: its plans are built as NativePlans, so the find's winner is not built again
    q = P("B", n=2, c=8, k=4, in_size=(6, 6), filter_size=3, pads=1)
    assert [n for n, _ in cudnn_base.list_plans(q)] == ["eng1", "eng3_fft", "eng5"]
    assert made[-1] == ("B", 0, "eng1") and len(made) == 3      # eng3_fft (no engine name), eng5: the frontend's
    inv_q = solver.get_solution(q, {"plan": "eng1"}).invoker_factory([])
    assert inv_q.path == "native" and len(made) == 3
    inv_q(0x100, 0x200, 0x300, 0x400, 0)
    assert ran[-1] == (0, 0x100, 0x200, 0x300, 0x400) and len(made) == 3
    assert solver.get_solution(q, {"plan": "eng5"}).invoker_factory([]).path != "native"
    # native_find off: the find's plans are the frontend's (the A/B's old arm)
    monkeypatch.setattr(cudnn_base, "native_find", False)
    q2 = P("B", n=2, c=8, k=4, in_size=(5, 5), filter_size=3, pads=1)
    cudnn_base.list_plans(q2)
    assert solver.get_solution(q2, {"plan": "eng1"}).invoker_factory([]).path != "native" and len(made) == 3
    monkeypatch.setattr(cudnn_base, "native_find", True)
    monkeypatch.setattr(cudnn_base, "native_first", False)
    r = P("B", n=2, c=8, k=8, in_size=(6, 6), filter_size=3, pads=1)
    assert solver.get_solution(r, {"plan": "eng1"}).invoker_factory([]).path != "native"
    assert all(m[1] in (0, 0xAB) and m[0] == "B" for m in made) and len(made) == 3


def test_native_graph_lists_through_the_backend_api(fake, monkeypatch):
    """A native graph (a find's, where the problem replays natively) asks cuDNN's heuristics through the backend API
    (ctypes calls, which let other threads run) and builds its plans as NativePlans, in the heuristics' order,
    duplicates once: no frontend graph is built until a plan the backend API cannot build needs the frontend's (then
    the frontend's plan at that name's index), a name the frontend does not offer fails with that reason, and where
    the backend listing fails the frontend lists as before."""
    from miofind.solvers import cudnn_execute

    made, asked = [], []

    class FakeRun:
        _kept, plan = False, None

        def __init__(self, problem, specs, pre, post, device, stream, name, engine, knobs, exclude=(), defer_rtc=False,
                     plan=None):
            if engine in (5, 7):
                raise cudnn_execute.BackendPlanError(f"engine {engine} cannot be rebuilt")
            self.fn, self.ctx, self.workspace = 0x1234, 0x5678, 64
            made.append(name)

    def listing(problem, specs, pre, post, handle, modes):
        asked.append((problem.direction, handle, modes))
        # eng8 carries TENSOR_CORE (0), which FP32 strict excludes: known from the listing, nothing built for it
        return [("eng1", (), ()), ("eng8", (0,), ()), ("eng6_k2=3", (), (0,)), ("eng1", (), ()), ("eng5", None, None),
                ("eng7", (), ())]

    monkeypatch.setattr(cudnn_execute, "NativeRun", FakeRun)
    monkeypatch.setattr(cudnn_execute, "_native_handle", lambda dev: (0x99, None))
    monkeypatch.setattr(cudnn_execute, "heuristic_configs", listing)
    monkeypatch.setenv("MIOFIND_CUDNN_EXECUTE", "backend")
    p = P("B", n=2, c=8, k=4, in_size=(6, 6), filter_size=3, pads=1)
    assert cudnn_base.list_plans(p, 2) == [("eng1", 64), ("eng6_k2=3", 64)]
    g = cudnn_base.plan_graph(p)
    assert g.listed == "backend" and [pl.name for pl in g.plans] == ["eng1", "eng8", "eng6_k2=3", "eng5", "eng7"]
    assert g.by_name["eng8"].reason.startswith("excluded")
    assert asked == [("B", 0x99, ("A", "FALLBACK"))] and made == ["eng1", "eng6_k2=3"] and not FAKE.graphs
    # eng5: the backend API refuses it, so the frontend's graph is built now and its plan at eng5's index (6) built
    assert cudnn_base.list_plans(p) == [("eng1", 64), ("eng6_k2=3", 64), ("eng5", 256)]
    assert len(FAKE.graphs) == 1 and FAKE.graphs[0].built == {6} and g.by_name["eng5"].index == 6
    assert "do not offer it" in g.by_name["eng7"].reason and g.by_name["eng1"].index == 1
    # the backend listing fails: the frontend lists (and its plans are still built as NativePlans where they can be)
    monkeypatch.setattr(cudnn_execute, "heuristic_configs", lambda *a: (_ for _ in ()).throw(
        cudnn_execute.BackendPlanError("no engine heuristics")))
    q = P("B", n=2, c=8, k=4, in_size=(5, 5), filter_size=3, pads=1)
    assert [n for n, _ in cudnn_base.list_plans(q)] == ["eng1", "eng3_fft", "eng5"]
    assert cudnn_base.plan_graph(q).listed == "frontend" and len(FAKE.graphs) == 2
    # native_listing off (the A/B's old arm): the frontend lists
    monkeypatch.setattr(cudnn_execute, "heuristic_configs", listing)
    monkeypatch.setattr(cudnn_base, "native_listing", False)
    r = P("B", n=2, c=8, k=8, in_size=(5, 5), filter_size=3, pads=1)
    assert cudnn_base.plan_graph(r).listed == "frontend" and len(asked) == 1


def test_find_defers_runtime_compiled_plans(fake, monkeypatch):
    """A find's first plans (a limited listing) pass over plans whose engine compiles when built (the backend API
    tells before anything compiles), leave them unbuilt and report them (more_configs), so the find measures them
    once no find runs; the full listing builds them; MIOFIND_CUDNN_DEFER_RTC=0 builds them at once."""
    from miofind.solvers import cudnn_execute

    made = []

    class FakeRun:
        _kept = False

        def __init__(self, problem, specs, pre, post, device, stream, name, engine, knobs, exclude=(), defer_rtc=False, plan=None):
            if engine == 1 and defer_rtc:
                raise cudnn_execute.RuntimeCompiled("engine 1 compiles when built")
            self.fn, self.ctx, self.workspace = 0x1234, 0x5678, 256 if engine == 5 else 0
            made.append((name, defer_rtc))

    monkeypatch.setattr(cudnn_execute, "NativeRun", FakeRun)
    monkeypatch.setenv("MIOFIND_CUDNN_EXECUTE", "backend")
    monkeypatch.setenv("MIOFIND_CUDNN_DEFER_RTC", "1")
    solver = DIR["F"]
    p = P("F", n=2, c=4, k=4, in_size=(6, 6), filter_size=3, pads=1)
    # heuristic order eng0_tc (barred), eng1 (runtime-compiled), eng2_broken, eng3_fft (a name the backend path cannot
    # parse: the frontend builds it), eng4_rpr (barred), eng5
    assert solver.find_configs(p, 2) == [{"plan": "eng3_fft"}, {"plan": "eng5"}]
    assert made == [("eng5", True)] and cudnn_base.deferred_plans(p) == ["eng1"]
    assert solver.more_configs(p, [{"plan": "eng3_fft"}, {"plan": "eng5"}])
    assert solver.find_configs(p) == [{"plan": "eng1"}, {"plan": "eng3_fft"}, {"plan": "eng5"}]
    assert made[-1] == ("eng1", False) and cudnn_base.deferred_plans(p) == []
    assert not solver.more_configs(p, [])
    monkeypatch.setenv("MIOFIND_CUDNN_DEFER_RTC", "0")
    q = P("F", n=2, c=4, k=8, in_size=(6, 6), filter_size=3, pads=1)
    assert solver.find_configs(q, 2) == [{"plan": "eng1"}, {"plan": "eng3_fft"}]
    assert made[-1] == ("eng1", False) and cudnn_base.deferred_plans(q) == []


def test_native_cudnn_context_layout():
    """miofind._native's cudnn_ctx and cudnn_execute's _Ctx agree (NativeRun checks it too)."""
    import ctypes

    from miofind import launch
    from miofind.solvers import cudnn_execute

    nat = launch.native()
    if nat is None:
        pytest.skip("miofind._native is not built")
    fn, size = nat.cudnn_runner()
    assert fn and size == ctypes.sizeof(cudnn_execute._Ctx) == 10 * 8 + 3 * 8


def test_public_execute_forced(fake, monkeypatch):
    class Classic(FakeGraph):
        def _execute_plan_at_index(self, *a):
            raise AssertionError("the direct binding must not be used")

    mod = sys.modules["cudnn"]
    monkeypatch.setattr(mod, "pygraph", Classic)
    monkeypatch.setattr(mod, "create_handle", _creates(77))
    monkeypatch.setenv("MIOFIND_CUDNN_EXECUTE", "public")
    g, pl, inv = _run_once("F")
    assert inv.path == "public" and len(g.executed) == 1


@pytest.mark.parametrize("direction", "FBW")
def test_stated_output_size_becomes_post_padding(fake, direction):
    """MIOpen's same mode: 9 -> ceil(9/2) = 5 with a 3x3 filter, stride 2, pad 0: post-padding 2."""
    p = dataclasses.replace(P(direction, n=2, c=8, k=8, in_size=(9, 9), filter_size=3, strides=2),
                            out_size_override=(5, 5))
    assert DIR[direction].applicability(p)
    assert cudnn_base.paddings(p) == ((0, 0), (2, 2))
    DIR[direction].get_solution(p)
    (kind, kw, out), = fake.graphs[0].ops
    assert kw["pre_padding"] == [0, 0] and kw["post_padding"] == [2, 2] and "padding" not in kw
    assert cudnn_base.tensor_specs(p)["y"].dim == (2, 8, 5, 5)
    small = dataclasses.replace(p, out_size_override=(3, 4))
    a = DIR[direction].applicability(small)
    assert not a and "negative post-padding (-2, 0)" in a.reason
    plain = P(direction, n=2, c=8, k=8, in_size=(9, 9), filter_size=3, strides=2, pads=1)
    assert cudnn_base.paddings(plain) == ((1, 1), (1, 1))


class ReplayGraph(FakeGraph):
    """A frontend graph that can also append one plan by engine id and knobs (``create_execution_plan``)."""

    def create_execution_plan(self, engine, knobs):
        name = f"eng{engine}" + "".join(f"_k{k}={v}" for k, v in sorted(knobs.items()))
        self.plans = [pl for pl in PLANS_A + PLANS_FALLBACK if pl[0] == name][:1] or [(name, set(), 0, False)]


def test_parse_plan_name():
    assert cudnn_base.parse_plan_name("eng67_k2=5_k3=0") == (67, {2: 5, 3: 0})
    assert cudnn_base.parse_plan_name("eng0") == (0, {})
    assert cudnn_base.parse_plan_name("eng12_k24=-1") == (12, {24: -1})
    for bad in ("backend_heuristics", "eng3_fft", "eng", "eng1_k2", "xeng1"):
        with pytest.raises(ValueError, match="not a cuDNN engine name"):
            cudnn_base.parse_plan_name(bad)


def test_a_named_plan_is_replayed_alone(fake, monkeypatch):
    monkeypatch.setattr(sys.modules["cudnn"], "pygraph", ReplayGraph)
    monkeypatch.setattr(sys.modules["cudnn"], "knob_type", types.SimpleNamespace(SPLIT_K=0, SWIZZLE=1), raising=False)
    p = P("F", n=2, c=4, k=4, in_size=(6, 6), filter_size=3, pads=1)
    g, plan = cudnn_base.resolve(p, {"plan": "eng5"})
    assert [pl.name for pl in g.plans] == ["eng5"] and plan.workspace == 256 and len(fake.graphs) == 1
    assert cudnn_base.resolve(p, {"plan": "eng5"})[0] is g and len(fake.graphs) == 1      # cached
    # a plan that does not build alone, or a name that is no engine's, comes from the heuristics' graph
    with pytest.raises(ValueError, match="not offered"):
        cudnn_base.resolve(p, {"plan": "eng7"})
    assert len(fake.graphs) == 3 and len(fake.graphs[-1].plans) == len(PLANS_A + PLANS_FALLBACK)
    assert cudnn_base.resolve(p, {"plan": "eng3_fft"})[1].workspace == 4096 and len(fake.graphs) == 3
    # with the heuristics' graph of the problem cached (a find listed its plans), no replay
    g2, plan = cudnn_base.resolve(p, {"plan": "eng1"})
    assert len(fake.graphs) == 3 and len(g2.plans) > 1 and plan.name == "eng1"


def test_frontend_knobs_by_backend_number():
    kt = types.SimpleNamespace(TILE_SIZE="T", STAGES="S", IDX_MODE="I")
    m = types.SimpleNamespace(knob_type=kt)
    assert cudnn_base.frontend_knobs(m, {2: 12, 14: 4, 18: 0}) == {"T": 12, "S": 4, "I": 0}
    assert cudnn_base.frontend_knobs(m, {22: 0}) is None        # LDGC: no frontend member
    assert cudnn_base.frontend_knobs(m, {99: 1}) is None
    assert cudnn_base.frontend_knobs(m, {}) == {}


def test_handle_wraps_the_backend_handle_without_asking_cuda_python(monkeypatch):
    """Where the frontend has them, the backend handle is wrapped as ``cudnn.Handle(raw, ordinal, stream)``
    (the frontend's documented form for a foreign handle), so ``create_handle``'s device query, which imports
    cuda-python, is not made; a frontend without them gets ``create_handle()``."""
    m = _fake_module()
    made = []

    class Handle:
        def __init__(self, backend_handle, ordinal=None, stream=None):
            self.backend_handle, self.ordinal, self.stream = backend_handle, ordinal, stream

    m.Handle = Handle
    m._pybind_module = types.SimpleNamespace(create_handle=lambda: made.append(1) or 0xBEEF,
                                             get_stream=lambda raw: 0)
    m.create_handle = lambda: pytest.fail("create_handle asks cuda-python for the device")
    monkeypatch.setattr(cudnn_base, "_handles", {})
    h = cudnn_base._handle(m, 3)
    assert (type(h), h.backend_handle, h.ordinal, h.stream, made) == (Handle, 0xBEEF, 3, 0, [1])
    assert cudnn_base._handle(m, 3) is h    # one per device
    old = _fake_module()     # no Handle, no _pybind_module: the frontend's own create_handle
    monkeypatch.setattr(cudnn_base, "_handles", {})
    assert cudnn_base._handle(old, 0) == "handle0"


class _FakeBackend:
    """cuDNN's backend entry points as ctypes callbacks over a table of descriptors: an operation graph's heuristics
    answer ``CONFIGS`` per mode (``fail``: modes whose finalize fails)."""

    CONFIGS = {3: [(1, ()), (6, ((2, 3),))], 2: [(1, ()), (5, ((14, 4), (3, 0)))]}

    def __init__(self, fail=()):
        import ctypes
        self.fail, self.kinds, self.destroyed, self.mode, self.filled = set(fail), {}, set(), {}, {}
        self.knobs_set = []
        vp, i32, i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64
        self.ct = ctypes

        def create(kind, out):
            d = 1000 + len(self.kinds)
            self.kinds[d] = kind
            out[0] = d
            return 0

        def destroy(d):
            self.destroyed.add(d)
            return 0

        def setattr_(d, attr, kind, count, values):
            if attr == 200:
                self.mode[d] = ctypes.cast(values, ctypes.POINTER(i32))[0]
            elif attr == 1301:                 # an engine made by its global index
                self.filled[d] = ctypes.cast(values, ctypes.POINTER(i64))[0]
            elif attr in (600, 601):           # a knob choice's type and value
                self.knobs_set.append(ctypes.cast(values, ctypes.POINTER(i32 if attr == 600 else i64))[0])
            return 0

        def finalize(d):
            return 7 if self.kinds[d] == 4 and self.mode.get(d) in self.fail else 0

        def getattr_(d, attr, kind, count, got, out):
            if attr == 202:                  # the heuristics' engine configs
                cfgs = self.CONFIGS[self.mode[d]]
                if count:
                    ids = ctypes.cast(out, ctypes.POINTER(vp))
                    for i, cfg in enumerate(cfgs[:count]):
                        self.filled[ids[i]] = cfg
                got[0] = min(len(cfgs), count) if count else len(cfgs)
            elif attr == 300:                # a config's engine, read into a given engine descriptor
                self.filled[ctypes.cast(out, ctypes.POINTER(vp))[0]] = self.filled[d][0]
                got[0] = 1
            elif attr == 1301:
                ctypes.cast(out, ctypes.POINTER(i64))[0] = self.filled[d]
                got[0] = 1
            elif attr == 302:                # its knob choices, read into given knob descriptors
                knobs = self.filled[d][1]
                ids = ctypes.cast(out, ctypes.POINTER(vp))
                for i, kv in enumerate(knobs):
                    self.filled[ids[i]] = kv
                got[0] = len(knobs)
            elif attr == 600:
                ctypes.cast(out, ctypes.POINTER(i32))[0] = self.filled[d][0]
                got[0] = 1
            elif attr == 601:
                ctypes.cast(out, ctypes.POINTER(i64))[0] = self.filled[d][1]
                got[0] = 1
            elif attr in (1303, 1305) and self.filled[d] == 6:     # engine 6: TENSOR_CORE; runtime compilation
                ctypes.cast(out, ctypes.POINTER(i32))[0] = 0
                got[0] = 1
            elif attr in (1303, 1305) and self.filled[d] == 1:
                got[0] = 0
            elif attr == 402:                  # a plan's workspace
                ctypes.cast(out, ctypes.POINTER(i64))[0] = 4096
                got[0] = 1
            else:
                return 3
            return 0

        self.lib = types.SimpleNamespace(
            cudnnBackendCreateDescriptor=ctypes.CFUNCTYPE(i32, i32, ctypes.POINTER(vp))(create),
            cudnnBackendDestroyDescriptor=ctypes.CFUNCTYPE(i32, vp)(destroy),
            cudnnBackendSetAttribute=ctypes.CFUNCTYPE(i32, vp, i32, i32, i64, vp)(setattr_),
            cudnnBackendGetAttribute=ctypes.CFUNCTYPE(i32, vp, i32, i32, i64, ctypes.POINTER(i64), vp)(getattr_),
            cudnnBackendFinalize=ctypes.CFUNCTYPE(i32, vp)(finalize),
            cudnnGetLastErrorString=lambda buf, n: None, cudnnBackendExecute=None, cudnnSetStream=None)


@pytest.mark.parametrize("path", ["ctypes", "native"])
def test_heuristic_plans_names_configs_as_the_frontend(path, monkeypatch):
    """cudnn_execute.heuristic_plans (through ctypes, or in C with the GIL released: miofind._native.cudnn_heuristics)
    names each engine config the heuristics offer as the frontend's get_engine_tag does (``engN`` then ``_kTYPE=VALUE``
    per knob choice), mode after mode, duplicates kept; a mode whose query fails is passed over, every mode failing is a
    BackendPlanError; every descriptor made is destroyed."""
    from miofind import launch
    from miofind.solvers import cudnn_execute

    if path == "native" and not hasattr(launch.native() or object(), "cudnn_heuristics"):
        pytest.skip("miofind._native (with cudnn_heuristics) is not built")
    monkeypatch.setattr(cudnn_execute, "native_calls", path == "native")
    p = P("W", n=2, c=8, k=4, in_size=(6, 6), filter_size=3, pads=1, layout="NHWC", dtype="FP16")
    specs, (pre, post) = cudnn_base.tensor_specs(p), cudnn_base.paddings(p)
    for fail, want in (((), ["eng1", "eng6_k2=3", "eng1", "eng5_k14=4_k3=0"]), ((3,), ["eng1", "eng5_k14=4_k3=0"])):
        fake = _FakeBackend(fail)
        monkeypatch.setattr(cudnn_execute, "_lib", fake.lib)
        assert cudnn_execute.heuristic_plans(p, specs, pre, post, 0x99) == want
        assert fake.destroyed == set(fake.kinds) and len(fake.kinds) > 70      # 64 knob descriptors among them
        notes = {name: (num, beh) for name, num, beh in cudnn_execute.heuristic_configs(p, specs, pre, post, 0x99)}
        # engine 1 has none, engine 6 one of each (TENSOR_CORE, RUNTIME_COMPILATION), engine 5's are not given
        assert notes == {n: v for n, v in {"eng1": ((), ()), "eng6_k2=3": ((0,), (0,)),
                                           "eng5_k14=4_k3=0": (None, None)}.items() if n in want}, notes
    fake = _FakeBackend((2, 3))
    monkeypatch.setattr(cudnn_execute, "_lib", fake.lib)
    with pytest.raises(cudnn_execute.BackendPlanError, match="offered nothing"):
        cudnn_execute.heuristic_plans(p, specs, pre, post, 0x99)
    assert fake.destroyed == set(fake.kinds)


@pytest.mark.parametrize("path", ["ctypes", "native"])
def test_backend_plan_builds_or_refuses_before_compiling(path, monkeypatch):
    """cudnn_execute.BackendPlan (through ctypes, or in one C call with the GIL released: cudnn_plan_build) builds a
    plan from its engine and knob choices and reads its workspace and behaviour notes; an engine carrying an excluded
    numerical note raises ExcludedPlan and, with defer_rtc, one that compiles when built RuntimeCompiled, both before the
    plan is finalized; every descriptor is destroyed once the plan is closed (at once where it is refused)."""
    from miofind import launch
    from miofind.solvers import cudnn_execute

    if path == "native" and not hasattr(launch.native() or object(), "cudnn_plan_build"):
        pytest.skip("miofind._native (with cudnn_plan_build) is not built")
    monkeypatch.setattr(cudnn_execute, "native_calls", path == "native")
    p = P("F", n=2, c=8, k=4, in_size=(6, 6), filter_size=3, pads=1, layout="NHWC", dtype="FP16")
    specs, (pre, post) = cudnn_base.tensor_specs(p), cudnn_base.paddings(p)
    fake = _FakeBackend()
    monkeypatch.setattr(cudnn_execute, "_lib", fake.lib)
    plan = cudnn_execute.BackendPlan(p, specs, pre, post, 0x99, "eng1_k2=3_k14=4", 1, {2: 3, 14: 4},
                                     exclude=("REDUCED_PRECISION_REDUCTION",))
    assert plan.workspace == 4096 and tuple(plan.behavior) == () and fake.knobs_set == [2, 3, 14, 4]
    assert plan.plan.value in fake.kinds and fake.kinds[plan.plan.value] == 5 and not fake.destroyed
    plan.close()
    assert fake.destroyed == set(fake.kinds)
    six = dict(problem=p, specs=specs, pre=pre, post=post, handle=0x99, name="eng6", engine=6, knobs={})
    fake = _FakeBackend()
    monkeypatch.setattr(cudnn_execute, "_lib", fake.lib)
    with pytest.raises(cudnn_execute.ExcludedPlan, match="TENSOR_CORE"):
        cudnn_execute.BackendPlan(**six, exclude=("TENSOR_CORE", "DOWN_CONVERT_INPUTS"))
    with pytest.raises(cudnn_execute.RuntimeCompiled):
        cudnn_execute.BackendPlan(**six, defer_rtc=True)
    assert fake.destroyed == set(fake.kinds) and not any(k == 5 for k in fake.kinds.values())
    built = cudnn_execute.BackendPlan(**six)
    assert tuple(built.behavior) == (0,) and built.workspace == 4096


@pytest.mark.parametrize("how", ["build", "load", "list", "off"])
def test_prefetch_lists_and_builds_in_a_thread(how, fake, monkeypatch):
    """cudnn_base.prefetch (a find's miss, MIOFIND_CUDNN_PREFETCH) starts a thread that lists the problem's plans through
    the backend API (``list``), builds the first ``limit`` of them (``build``) and runs those once (``load``: asked of
    first_runs with their names), leaving the graph cached for the find's own listing, and the thread for
    prefetch_wait; ``off``, a graph already cached, a problem that does not replay natively or no native listing
    start nothing."""
    import cupy

    from miofind import launch
    from miofind.solvers import cudnn_execute

    made = []

    class FakeRun:
        _kept, plan = False, None

        def __init__(self, problem, specs, pre, post, device, stream, name, engine, knobs, exclude=(), defer_rtc=False,
                     plan=None):
            self.fn, self.ctx, self.workspace = 0x1234, 0x5678, 0
            made.append(name)

    monkeypatch.setattr(cupy.cuda.runtime, "setDevice", lambda dev: None)
    monkeypatch.setattr(launch, "native", lambda: types.SimpleNamespace(cudnn_heuristics=None))
    monkeypatch.setattr(cudnn_execute, "NativeRun", FakeRun)
    monkeypatch.setattr(cudnn_execute, "_native_handle", lambda dev: (0x99, None))
    monkeypatch.setattr(cudnn_execute, "heuristic_configs",
                        lambda *a: [("eng1", (), ()), ("eng6", (), ()), ("eng7", (), ())])
    monkeypatch.setenv("MIOFIND_CUDNN_EXECUTE", "backend")
    monkeypatch.setenv("MIOFIND_CUDNN_PREFETCH", how)
    ran, go = [], threading.Event()

    def first_runs(problem, device, names):
        go.wait(10)
        ran.append((problem, device, list(names)))
        return len(names)

    monkeypatch.setattr(cudnn_base, "first_runs", first_runs)
    p = P("F", n=2, c=8, k=4, in_size=(6, 6), filter_size=3, pads=1)
    t = cudnn_base.prefetch(p, 2)
    if how == "off":
        assert t is None and not cudnn_base._graphs
        return
    assert t.is_alive() or how != "load"
    go.set()
    assert cudnn_base.prefetch_wait(p) >= 0.0 and not t.is_alive()
    assert cudnn_base.prefetch_wait(p) == 0.0                     # waited for once
    g = cudnn_base._graphs[(0, p.as_conv())]
    assert g.listed == "backend" and [pl.name for pl in g.plans] == ["eng1", "eng6", "eng7"]
    assert made == (["eng1", "eng6"] if how in ("build", "load") else []) and not FAKE.graphs
    assert ran == ([(p.as_conv(), 0, ["eng1", "eng6"])] if how == "load" else [])
    assert cudnn_base.prefetch(p, 2) is None                      # cached: nothing more to start
    monkeypatch.setattr(launch, "native", lambda: None)           # no C listing: the thread would wait for the GIL
    assert cudnn_base.prefetch(P("F", n=2, c=8, k=8, in_size=(6, 6), filter_size=3, pads=1), 2) is None


def test_no_gpu_gives_one_line_no_gpu_error(monkeypatch):
    """A cuDNN solution is plans built on the current device: where CUDA is unusable, asking for one (the device's
    id) raises miofind's NoGPUError, naming what works without a GPU, not CuPy's CUDARuntimeError from deep inside
    (found by bench/fuzz_campaign.py on a host without a GPU)."""
    cupy = pytest.importorskip("cupy")

    from miofind import device

    class NoDevice:
        def __init__(self, *a):
            raise cupy.cuda.runtime.CUDARuntimeError(35)      # cudaErrorInsufficientDriver

    class OneDevice:
        id = 3

    def no_gpu(*a):
        raise device.NoGPUError("no usable GPU (stand-in); " + device.WITHOUT_GPU)

    monkeypatch.setattr(device, "current_device", no_gpu)
    monkeypatch.setattr(cupy.cuda, "Device", OneDevice)
    assert cudnn_base._device_id() == 3                       # control: a device, its id
    monkeypatch.setattr(cupy.cuda, "Device", NoDevice)
    with pytest.raises(device.NoGPUError, match=r"^no usable GPU .*still work$"):
        cudnn_base._device_id()
