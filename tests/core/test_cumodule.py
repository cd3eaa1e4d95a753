"""Kernels and workspaces without CuPy's import, on the CPU with the driver and PyTorch faked: which loader and which
allocator a process gets (miofind.compile._load, miofind.launch.scratch), and what a DriverKernel asks the driver."""

from __future__ import annotations

import sys
import types

import pytest

from miofind import compile as C, cumodule, launch


class FakeDriver:
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

    def __init__(self):
        self.calls, self.attrs, self.current = [], {}, 0

    def ctxGetCurrent(self):
        return self.current

    def moduleLoad(self, path):
        self.calls.append(("load", path))
        return 100 + len(self.calls)

    def moduleLoadData(self, data):
        self.calls.append(("loaddata", data))
        return 200 + len(self.calls)

    def moduleGetFunction(self, mod, name):
        self.calls.append(("function", mod, name))
        return mod * 10

    def moduleGetGlobal(self, mod, name):
        return mod * 1000

    def funcSetAttribute(self, fn, attr, value):
        self.attrs[(fn, attr)] = value

    def funcGetAttribute(self, attr, fn):
        return self.attrs.get((fn, attr), 0)


class FakeRuntime:
    def __init__(self, drv):
        self.dev, self.drv, self.set = 0, drv, []

    def getDevice(self):
        return self.dev

    def setDevice(self, dev):
        self.set.append(dev)
        self.drv.current = 1


@pytest.fixture
def fake_cuda(monkeypatch):
    drv = FakeDriver()
    rt = FakeRuntime(drv)
    monkeypatch.setattr(cumodule, "driver", lambda: drv)
    monkeypatch.setattr(cumodule, "runtime", lambda: rt)
    return drv, rt


def test_a_module_loads_once_per_device_in_a_current_context(fake_cuda):
    drv, rt = fake_cuda
    mod = cumodule.DriverModule(path="/cache/k.cubin")
    k = mod.get_function("conv")
    assert drv.calls == []                            # nothing loaded before the first use
    assert k.kernel.ptr == k.kernel.ptr == 1010       # loaded once, the context made current first
    assert rt.set == [0] and drv.calls == [("load", "/cache/k.cubin"), ("function", 101, "conv")]
    rt.dev = 1                                        # another device: its own load and function
    assert k.kernel.ptr == 1030 and rt.set == [0]     # a context is current now: no setDevice
    assert mod.get_global_var("miofind_gp") == 103000
    k.max_dynamic_shared_size_bytes = 99 * 1024
    assert k.max_dynamic_shared_size_bytes == 99 * 1024
    data = cumodule.DriverModule(data=b"\x7fELF")
    assert data.get_function("x").kernel.ptr and drv.calls[-2] == ("loaddata", b"\x7fELF")
    with pytest.raises(ValueError):
        cumodule.DriverModule()


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
