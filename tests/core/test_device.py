"""Device identity without a GPU (``device_from_string``) and the no-GPU message (CPU only)."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

import miofind.device as device
from miofind.device import DeviceInfo, NoGPUError, device_from_string


@pytest.mark.parametrize("spec,arch,sms,name,db_name", [
    ("sm_90-132", "sm_90", 132, "", "sm_90-132"),
    ("sm_90-132-NVIDIA_H100_80GB_HBM3", "sm_90", 132, "NVIDIA H100 80GB HBM3", "sm_90-132-NVIDIA_H100_80GB_HBM3"),
    ("sm_100-148-NVIDIA B200", "sm_100", 148, "NVIDIA B200", "sm_100-148-NVIDIA_B200"),
    ("  sm_80-108 ", "sm_80", 108, "", "sm_80-108"),
])
def test_device_from_string(spec, arch, sms, name, db_name):
    d = device_from_string(spec)
    assert (d.arch, d.sm_count, d.name, d.db_name) == (arch, sms, name, db_name)
    assert d.driver_version == ""
    assert device_from_string(d.db_name) == d  # db_name round-trips


@pytest.mark.parametrize("bad", ["", "sm_90", "sm_90-", "sm_90-132-", "sm_90-0", "sm_9-132", "sm_9000-1", "90-132",
                                 "gfx90a-104", "sm_90-x", "SM_90-132", "sm_90a-132", None, 90])
def test_device_from_string_rejects_bad_values(bad):
    with pytest.raises(ValueError) as e:
        device_from_string(bad)
    msg = str(e.value)
    assert msg.startswith(f"--device={bad!r}: expected sm_") and "\n" not in msg
    with pytest.raises(ValueError, match=r"^device='x': "):
        device_from_string("x", option="device")


def test_versions_come_from_cupy_without_a_gpu(monkeypatch):
    """cuda_version is the installed CuPy's CUDA runtime (what trusts a record), read with no GPU; empty
    where CuPy does not import."""
    fake = types.SimpleNamespace(__version__="14.2.0",
                                 cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(runtimeGetVersion=lambda: 12090)))
    device._cupy_versions.cache_clear()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    try:
        d = device_from_string("sm_90-132")
        assert (d.cuda_version, d.cupy_version) == ("12.9", "14.2.0")
        device._cupy_versions.cache_clear()
        monkeypatch.setitem(sys.modules, "cupy", None)
        d = device_from_string("sm_90-132")
        assert (d.cuda_version, d.cupy_version) == ("", "")
    finally:
        device._cupy_versions.cache_clear()


def test_db_name_with_and_without_name():
    assert DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132).db_name == "sm_90-132-NVIDIA_H100_80GB_HBM3"
    assert DeviceInfo("", "sm_90", 132).db_name == "sm_90-132"


class _CUDAError(RuntimeError):
    pass


def _fake_cupy(count):
    def get_count():
        if isinstance(count, Exception):
            raise count
        return count
    return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=get_count)))


@pytest.mark.parametrize("count,reason", [
    (_CUDAError("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version"),
     "CUDA is not usable here: cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version"),
    (0, "no CUDA device is visible"),
])
def test_no_gpu_message_says_what_works(monkeypatch, count, reason):
    monkeypatch.setattr(device, "_runtime", lambda: _fake_cupy(count).cuda.runtime)
    device.current_device.cache_clear()
    try:
        with pytest.raises(NoGPUError) as e:
            device.current_device()
    finally:
        device.current_device.cache_clear()
    msg = str(e.value)
    assert "\n" not in msg
    assert msg == (f"no usable GPU ({reason}); without a GPU, `miofind solvers`, "
                   "`miofind find --immediate --device sm_90-132 ...` and `miofind db ...` still work")


def test_no_gpu_message_without_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(NoGPUError, match=r"^no usable GPU \(CuPy is not installed; install "
                                         r"miofind\[cuda13\] or miofind\[cuda12\]\); without a GPU, `miofind solvers`"):
        device._cupy()


def test_no_gpu_message_without_cupy_from_current_device(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    device.current_device.cache_clear()
    try:
        with pytest.raises(NoGPUError, match=r"^no usable GPU \(CuPy is not installed"):
            device.current_device()
    finally:
        device.current_device.cache_clear()


def test_a_run_without_cupy_says_so(monkeypatch):
    """A find may answer without importing CuPy; the first run needs it and names what is missing."""
    from miofind import invokers
    from miofind.problem import ProblemDescription

    monkeypatch.setitem(sys.modules, "cupy", None)          # neither CuPy nor its runtime module imports
    monkeypatch.setitem(sys.modules, "cupy_backends", None)
    monkeypatch.delitem(sys.modules, "cupy_backends.cuda.api.runtime", raising=False)
    p = ProblemDescription.make("F", n=1, c=8, k=8, in_size=(8, 8), filter_size=3, pads=1)
    with pytest.raises(NoGPUError, match=r"^no usable GPU \(CuPy is not installed"):
        invokers.get_invoker(p, "ConvDirectNaiveConvFwd")


def test_cupy_version_is_read_from_its_version_file(monkeypatch, tmp_path):
    pkg = tmp_path / "cupy"
    pkg.mkdir()
    (pkg / "_version.py").write_text("from __future__ import annotations\n\n__version__ = '99.1.0rc2'\n")
    spec = types.SimpleNamespace(submodule_search_locations=[str(pkg)])
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.setattr(device.importlib.util, "find_spec", lambda name: spec if name == "cupy" else None)
    assert device._cupy_version() == "99.1.0rc2"
    (pkg / "_version.py").write_text("__version__ = compute()\n")   # not a literal: CuPy's own import answers
    monkeypatch.setattr(device, "_cupy", lambda: types.SimpleNamespace(__version__="99.2"))
    assert device._cupy_version() == "99.2"


@pytest.mark.skipif(device.importlib.util.find_spec("cupy") is None, reason="CuPy is not installed")
def test_identity_without_importing_cupy_matches_cupys():
    """device_from_string reads CuPy's CUDA runtime version and its version without importing CuPy's package (its
    runtime module is the one cupy.cuda.runtime re-exports); both equal what the imported CuPy says."""
    code = ("import sys\n"
            "from miofind.device import device_from_string, version_string\n"
            "d = device_from_string('sm_90-132')\n"
            "before = 'cupy' in sys.modules\n"
            "import cupy\n"
            "print(before, d.cuda_version == version_string(cupy.cuda.runtime.runtimeGetVersion()),"
            " d.cupy_version == cupy.__version__, d.cupy_version != '')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True", "True", "True"], r.stdout
