"""A PyTorch process without CuPy's import, on the GPU: its first find, answered from the shipped FindDB, imports no
CuPy, and its DeviceInfo equals the one CuPy gives; its runs of the DB's answers load kernels through the driver
(miofind.cumodule) and take workspaces from PyTorch, correct against PyTorch's float64 convolution."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KEY = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"   # a ResNet-50 layer of the shipped H100 DB

CHILD = r"""
import json, sys
first = sys.argv[2]
if first == "torch":
    import torch
    torch.zeros(1, device="cuda"); torch.cuda.synchronize()
from miofind import find_solutions, run_solution
from miofind.device import current_device, version_string
res = find_solutions(sys.argv[1])
cupy_in_find = "cupy" in sys.modules
import cupy
rt = cupy.cuda.runtime
props = rt.getDeviceProperties(rt.getDevice())
d = current_device()
same = (d.name == props["name"].decode(), d.arch == f"sm_{props['major']}{props['minor']}",
        d.sm_count == props["multiProcessorCount"], d.driver_version == version_string(rt.driverGetVersion()),
        d.cuda_version == version_string(rt.runtimeGetVersion()), d.cupy_version == cupy.__version__)
p = res[0].problem
x = cupy.random.standard_normal(p.io_shapes()[0], dtype=cupy.float32)
w = cupy.random.standard_normal(p.io_shapes()[1], dtype=cupy.float32)
y = run_solution(res[0], x, w)
ref = run_solution(find_solutions(p, solvers=["ConvDirectNaiveConvFwd"], db=None, store=False)[0], x, w)
err = float(cupy.abs(y - ref).max() / cupy.abs(ref).max())
print(json.dumps({"source": res.source, "cupy_in_find": cupy_in_find, "same": same, "err": err}))
"""


@pytest.mark.gpu
@pytest.mark.parametrize("first", ["torch", "cupy"])
def test_a_db_answer_needs_no_cupy_and_the_same_identity(first, tmp_path):
    if first == "torch" and importlib.util.find_spec("torch") is None:
        pytest.skip("PyTorch is not installed")
    pre = "import cupy; cupy.zeros(1); " if first == "cupy" else ""
    env = {**os.environ, "MIOFIND_DB": str(tmp_path / "user.sqlite")}
    env.pop("MIOFIND_SYSTEM_DB", None)
    r = subprocess.run([sys.executable, "-c", pre + CHILD, KEY, first], capture_output=True, text=True, env=env,
                       cwd=REPO, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["source"] == "db"
    assert out["cupy_in_find"] == (first == "cupy")
    assert out["same"] == [True] * 6
    assert out["err"] < 1e-4


RUN_CHILD = r"""
import json, sys, traceback
first_cupy = []
def _watch(event, args):    # where CuPy is first imported, if it is (the audit event of every real import)
    if event == "import" and args[0] == "cupy" and not first_cupy:
        first_cupy.append("".join(traceback.format_stack(limit=16)[:-1]))
sys.addaudithook(_watch)
import torch
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
from miofind import ProblemDescription, find_solutions, run_solution
key, solver = sys.argv[1], sys.argv[2]
p = ProblemDescription.from_key(key)
res = find_solutions(p, solvers=[solver])
a, b = (torch.randn(s, device="cuda") for s in p.io_shapes()[:2])
outs = [run_solution(res[0], a, b) for _ in range(3)]      # the first run, then the traced and replayed ones
torch.cuda.synchronize()
cupy_after_runs = "cupy" in sys.modules
c = p.as_conv()
kw = dict(stride=c.strides, padding=c.pads, dilation=c.dilations, groups=c.groups)
A, B = a.double(), b.double()
if p.direction == "F":
    ref = torch.nn.functional.conv2d(A, B, **kw)
elif p.direction == "B":
    ref = torch.nn.grad.conv2d_input(p.io_shapes()[2], B, A, **kw)
else:
    ref = torch.nn.grad.conv2d_weight(B, p.io_shapes()[2], A, **kw)
errs = [float((o.double() - ref).abs().max() / ref.abs().max()) for o in outs]
print(json.dumps({"source": res.source, "solver": res[0].solver_id, "cupy_after_runs": cupy_after_runs,
                  "errs": errs, "first_cupy_import": first_cupy[0] if first_cupy else None}))
"""

# (key, solver): the shipped DB's answers for these ResNet-50 layers, or one of its records
RUNS = [("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F", "ConvWinograd3x3F43Fwd"),
        ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F", "ConvImplicitGemmFwd"),
        ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F", "GemmFwdRest"),
        ("64-56-56-1x1-256-56-56-32-0x0-1x1-1x1-0-NCHW-FP32-F", "GemmFwd1x1_0_1"),
        ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-B", "ConvWinograd3x3F43Bwd"),
        ("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-W", "ConvImplicitGemmWrw")]


@pytest.mark.gpu
@pytest.mark.parametrize("specialize,fresh_cache,bridge", [("sync", False, "0"), ("sync", False, "1"),
                                                           ("off", True, "1")])
@pytest.mark.parametrize("key,solver", RUNS)
def test_a_pytorch_process_runs_without_importing_cupy(key, solver, specialize, fresh_cache, bridge, tmp_path):
    """In a PyTorch process that has not imported CuPy, with the binaries in the kernel cache, a DB answer's runs
    (the first, the traced one, the replayed one) load their kernels through the driver (miofind.cumodule), take their workspaces from PyTorch's
    allocator, and never import CuPy; each output matches PyTorch's float64 convolution. With the bridge GEMM
    and without; the specialised builds (compiled in the foreground where missing: MIOFIND_SPECIALIZE=sync), and
    the generic ones (a fresh kernel cache with MIOFIND_SPECIALIZE=off: module instances written through the
    runtime)."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("PyTorch is not installed")
    env = {**os.environ, "MIOFIND_DB": str(tmp_path / "user.sqlite"), "MIOFIND_LT_BRIDGE": bridge,
           "MIOFIND_SPECIALIZE": specialize}
    if fresh_cache:
        env["MIOFIND_KERNEL_CACHE"] = str(tmp_path / "kernel-cache")
    env.pop("MIOFIND_SYSTEM_DB", None)
    # twice: the first process compiles what the kernel cache lacks (NVRTC, through CuPy's binding, imports CuPy);
    # the second is the case at hand, every binary cached
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", RUN_CHILD, key, solver], capture_output=True, text=True, env=env,
                           cwd=REPO, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert (out["source"], out["solver"]) == ("db", solver)
    assert out["cupy_after_runs"] is False, out["first_cupy_import"]
    assert max(out["errs"]) < 1e-4, out["errs"]
