"""Kernels and workspaces without CuPy's import, on the CPU with the driver and PyTorch faked: which loader and which
allocator a process gets (miofind.compile._load, miofind.launch.scratch), and what a DriverKernel asks the driver."""

from __future__ import annotations

import sys
import types

import pytest

from miofind import compile as C, cumodule, launch


class FakeLibcuda:
    """libcuda's calls as cumodule makes them (out-parameters through ctypes.byref), recorded."""

    def __init__(self):
        self.calls, self.attrs, self.current = [], {}, 0

    @staticmethod
    def _out(ref, value):
        ref._obj.value = value
        return 0

    def cuCtxGetCurrent(self, out):
        return self._out(out, self.current)

    def cuModuleLoad(self, out, path):
        self.calls.append(("load", path))
        return self._out(out, 100 + len(self.calls))

    def cuModuleLoadData(self, out, data):
        self.calls.append(("loaddata", data))
        return self._out(out, 200 + len(self.calls))

    def cuModuleGetFunction(self, out, mod, name):
        self.calls.append(("function", mod, name))
        return self._out(out, mod * 10)

    def cuModuleGetGlobal_v2(self, ptr, size, mod, name):
        self._out(size, 64)
        return self._out(ptr, mod * 1000)

    def cuFuncSetAttribute(self, fn, attr, value):
        self.attrs[(fn, attr)] = value
        return 0

    def cuFuncGetAttribute(self, out, attr, fn):
        return self._out(out, self.attrs.get((fn, attr), 0))

    def cuGetErrorName(self, result, out):
        out._obj.value = b"CUDA_ERROR_INVALID_IMAGE"
        return 0


class FakeRuntime:
    def __init__(self, lib):
        self.dev, self.lib, self.set = 0, lib, []

    def getDevice(self):
        return self.dev

    def setDevice(self, dev):
        self.set.append(dev)
        self.lib.current = 1


@pytest.fixture
def fake_cuda(monkeypatch):
    lib = FakeLibcuda()
    rt = FakeRuntime(lib)
    monkeypatch.setattr(cumodule, "libcuda", lambda: lib)
    monkeypatch.setattr(cumodule, "runtime", lambda: rt)
    return lib, rt


def test_a_module_loads_once_per_device_in_a_current_context(fake_cuda):
    lib, rt = fake_cuda
    mod = cumodule.DriverModule(path="/cache/k.cubin")
    k = mod.get_function("conv")
    assert lib.calls == []                            # nothing loaded before the first use
    assert k.kernel.ptr == k.ptr == 1010              # loaded once, the context made current first
    assert rt.set == [0] and lib.calls == [("load", b"/cache/k.cubin"), ("function", 101, b"conv")]
    rt.dev = 1                                        # another device: its own load and function
    assert k.kernel.ptr == 1030 and rt.set == [0]     # a context is current now: no setDevice
    assert mod.get_global_var("miofind_gp") == 103000
    k.max_dynamic_shared_size_bytes = 99 * 1024
    assert k.max_dynamic_shared_size_bytes == 99 * 1024
    data = cumodule.DriverModule(data=b"\x7fELF")
    assert data.get_function("x").kernel.ptr and lib.calls[-2] == ("loaddata", b"\x7fELF")
    with pytest.raises(ValueError):
        cumodule.DriverModule()


def test_a_failed_call_names_itself(fake_cuda, monkeypatch):
    lib, _ = fake_cuda
    monkeypatch.setattr(lib, "cuModuleLoad", lambda out, path: 200)
    with pytest.raises(cumodule.CUDADriverError, match="cuModuleLoad failed: CUDA_ERROR_INVALID_IMAGE"):
        cumodule.DriverModule(path="/cache/bad.cubin").handle()


def test_compile_loads_through_the_driver_only_without_cupy(fake_cuda, monkeypatch, tmp_path):
    path = tmp_path / "k.cubin"
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    mod = C._load(path, "conv")
    assert isinstance(mod, cumodule.DriverModule) and mod.path == str(path)
    loaded = []
    fake = types.SimpleNamespace(RawModule=lambda path: types.SimpleNamespace(
        get_function=lambda name: loaded.append((path, name))))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    assert not isinstance(C._load(path, "conv"), cumodule.DriverModule) and loaded == [(str(path), "conv")]


def test_scratch_comes_from_pytorch_without_cupy(monkeypatch):
    made = []

    class Buf:
        def __init__(self, n):
            self.n = n

        def data_ptr(self):
            return 0xABC000

    class Ctx:
        def __init__(self, s):
            made.append(("stream", s))

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    torch = types.SimpleNamespace(uint8="u8", empty=lambda n, dtype, device: made.append((n, dtype, device)) or Buf(n),
                                  cuda=types.SimpleNamespace(stream=lambda s: Ctx(s),
                                                             ExternalStream=lambda h, device: ("ext", h, device)))
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    monkeypatch.setitem(sys.modules, "torch", torch)
    import miofind.device as device
    monkeypatch.setattr(device, "runtime", lambda: types.SimpleNamespace(getDevice=lambda: 2))
    owner, addr = launch.scratch(4096, 0x55)
    assert addr == 0xABC000 and owner.n == 4096
    assert made == [("stream", ("ext", 0x55, 2)), (4096, "u8", 2)]


def test_nvrtc_identity_without_cupy_equals_cupys():
    """The NVRTC version and library a process without CuPy finds (cuda.pathfinder, as CuPy's binding does) are
    CuPy's binding's: the binary cache keys of the two kinds of process agree."""
    import subprocess
    from pathlib import Path

    pytest.importorskip("cuda.pathfinder")
    code = ("import sys\n"
            "from miofind import compile as C\n"
            "v, lib = C._nvrtc_version(), C.nvrtc_library_path()\n"
            "assert 'cupy' not in sys.modules\n"
            "C._nvrtc_version.cache_clear()\n"
            "from cupy_backends.cuda.libs import nvrtc\n"
            "print(v == '%d.%d' % nvrtc.getVersion(), lib == C.nvrtc_library_path(), lib is not None)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True", "True"], r.stdout
