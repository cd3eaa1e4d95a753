"""Ahead-of-time compilation into the binary cache in a process pool (NVRTC, no GPU needed)."""

from __future__ import annotations

from dataclasses import replace

from miofind.compile import _binary_key
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.tuning.precompile import precompile, problem_kernels

P = ProblemDescription.make("F", n=2, c=8, k=16, in_size=(12, 12), filter_size=3, pads=1)


def test_precompile_fills_the_binary_cache_once(tmp_path, monkeypatch):
    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(tmp_path))
    s = get_solver("ConvDirectTiledFwd")
    kernels = problem_kernels(P, [s], lambda s: [None, next(iter(s.config_space(P)))])
    assert len(kernels) == 3  # the reference and two configs
    n, errors = precompile(kernels, "sm_90", jobs=2)
    assert (n, errors) == (3, {})
    assert {p.stem for p in tmp_path.glob("*.cubin")} == {_binary_key(k, "sm_90") for k in kernels}
    assert all(p.stat().st_size > 1000 for p in tmp_path.glob("*.cubin"))
    assert precompile(kernels, "sm_90", jobs=2) == (0, {})


def test_a_broken_kernel_is_reported_not_raised(tmp_path, monkeypatch):
    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(tmp_path))
    k = get_solver("ConvDirectTiledFwd").get_solution(P).kernels[0]
    bad = replace(k, macros=k.macros + (("TILE_W", "this is not C++"),))
    n, errors = precompile([bad], "sm_90", jobs=1)
    assert n == 0 and len(errors) == 1 and "direct_tiled_fwd" in next(iter(errors))
    assert not list(tmp_path.glob("*.cubin"))
