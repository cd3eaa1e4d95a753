"""miofind.nvlib on the CPU: the library search stops at the first candidate that loads, and says what
it tried when none does. ctypes' loader is faked."""

from __future__ import annotations

import pytest

from miofind import nvlib


class _Lib:
    def __init__(self, path, symbols):
        self.path, self._symbols = path, symbols

    def __getattr__(self, name):
        if name.startswith("_") or name not in self._symbols:
            raise AttributeError(name)
        return object()


def _fake(monkeypatch, loadable, symbols=("probe",)):
    opened = []

    def cdll(path):
        opened.append(path)
        if path not in loadable:
            raise OSError(f"{path}: cannot open shared object file")
        return _Lib(path, symbols)

    monkeypatch.setattr(nvlib.ctypes, "CDLL", cdll)
    return opened


def test_search_stops_at_the_first_library_that_loads(monkeypatch):
    advanced = []

    def cands(*a):
        yield "/mapped/libx.so.1"
        yield "/mapped/libx.so.1"          # a duplicate is tried once
        advanced.append("the folders were searched")
        yield "/wheel/libx.so.1"

    monkeypatch.setattr(nvlib, "candidates", cands)
    opened = _fake(monkeypatch, {"/mapped/libx.so.1"})
    lib = nvlib.load("x", "probe", "cupy.none", (), (), "install x")
    assert lib.path == "/mapped/libx.so.1"
    assert opened == ["/mapped/libx.so.1"] and advanced == []


def test_duplicates_are_tried_once_and_a_missing_symbol_moves_on(monkeypatch):
    monkeypatch.setattr(nvlib, "candidates", lambda *a: iter(["/a/libx.so", "/a/libx.so", "/b/libx.so"]))
    opened = _fake(monkeypatch, {"/a/libx.so", "/b/libx.so"}, symbols=())
    with pytest.raises(RuntimeError, match=r"libx not found \(install x\); tried: /a/libx.so: .*; /b/libx.so"):
        nvlib.load("x", "probe", "cupy.none", (), (), "install x")
    assert opened == ["/a/libx.so", "/b/libx.so"]
