"""The device's identity on the GPU without CuPy's import: a PyTorch process's first find, answered from the shipped
FindDB, imports no CuPy, and its DeviceInfo equals the one CuPy gives; the run that follows imports it."""

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
