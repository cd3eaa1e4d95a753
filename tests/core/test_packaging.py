"""Packaging: the public names README documents, ``python -m miofind``, and the install extras.

CPU only. The extras checks guard README's promise that one install line brings one CUDA major:
``cuda12``/``cuda13`` each pull exactly one CuPy (with its CUDA libraries) and the matching cuDNN, and
no other extra pins a CUDA major, so ``.[cuda12,dev]`` never installs two CuPy packages.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

import miofind
from miofind.registry import solvers

ROOT = Path(__file__).resolve().parents[2]
CUDA_EXTRAS = {"cuda12": "12", "cuda13": "13"}


def _extras() -> dict[str, list[Requirement]]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        deps = tomllib.load(f)["project"]["optional-dependencies"]
    return {name: [Requirement(r) for r in reqs] for name, reqs in deps.items()}


def _cuda_major(req: Requirement) -> str | None:
    """The CUDA major a requirement pins: cupy-cuda13x, nvidia-cudnn-cu12, cuda-toolkit==13.*; else None."""
    m = re.fullmatch(r"cupy-cuda(\d\d)x|nvidia-.*-cu(\d\d)", req.name.lower())
    if m:
        return m.group(1) or m.group(2)
    if req.name.lower() == "cuda-toolkit":
        m = re.search(r"==\s*(\d+)", str(req.specifier))
        return m.group(1) if m else "?"
    return None


def _run(*args):
    return subprocess.run([sys.executable, "-m", "miofind", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"}, timeout=120)


# -- public names -------------------------------------------------------------------------------

def test_readme_api_names_import():
    from miofind import FindResult, Solution, find_solutions, get_solutions, run_solution
    from miofind import api

    assert get_solutions is api.get_solutions and find_solutions is api.find_solutions
    assert run_solution is api.run_solution and Solution is api.Solution and FindResult is api.FindResult
    assert all(callable(f) for f in (get_solutions, find_solutions, run_solution))
    # README's hot-path section: ``miofind.clear_caches()`` empties the find memo and the prepared solutions
    assert miofind.clear_caches is api.clear_caches


def test_all_names_resolve():
    for name in miofind.__all__:
        assert getattr(miofind, name) is not None, name
    assert {"get_solutions", "FindResult"} <= set(dir(miofind))
    with pytest.raises(AttributeError, match="no_such_name"):
        miofind.no_such_name  # noqa: B018


def test_import_stays_light():
    # the API (registry, CuPy) loads on first use of one of its names, not on `import miofind`
    code = "import sys, miofind; print('miofind.api' in sys.modules, 'cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


# -- python -m miofind ---------------------------------------------------------------------------

def test_python_m_help():
    r = _run("--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Usage: miofind ")
    for cmd in ("find", "run", "tune", "solvers", "db"):
        assert re.search(rf"^\s+{cmd}\b", r.stdout, re.M), f"{cmd} missing from --help"


def test_python_m_solvers_lists_registry():
    r = _run("solvers")
    assert r.returncode == 0, r.stderr
    missing = [s.id for s in solvers() if s.id not in r.stdout]
    assert not missing, missing


def test_python_m_bad_command_exits_2():
    r = _run("no-such-command")
    assert r.returncode == 2
    assert "no-such-command" in r.stderr


# -- extras --------------------------------------------------------------------------------------

def test_cuda_extras_bring_one_major_each():
    extras = _extras()
    for name, major in CUDA_EXTRAS.items():
        reqs = extras[name]
        cupy = [r for r in reqs if r.name.lower().startswith("cupy")]
        assert [r.name for r in cupy] == [f"cupy-cuda{major}x"], (name, cupy)
        assert "ctk" in cupy[0].extras, f"{name}: CuPy without its CUDA libraries ([ctk])"
        names = {r.name.lower() for r in reqs}
        assert {"nvidia-cudnn-frontend", f"nvidia-cudnn-cu{major}"} <= names, (name, names)
        assert {_cuda_major(r) for r in reqs} - {None} == {major}, (name, [str(r) for r in reqs])


def test_cuda_extras_do_not_overlap_in_cupy():
    extras = _extras()
    c12 = {r.name.lower() for r in extras["cuda12"] if r.name.lower().startswith("cupy")}
    c13 = {r.name.lower() for r in extras["cuda13"] if r.name.lower().startswith("cupy")}
    assert c12 and c13 and not c12 & c13


def test_other_extras_pin_no_cuda_major():
    # dev, cudnn, postgres combine with either cuda12 or cuda13
    for name, reqs in _extras().items():
        if name in CUDA_EXTRAS:
            continue
        assert not [r for r in reqs if r.name.lower().startswith("cupy")], f"{name} names a CuPy package"
        pinned = [str(r) for r in reqs if _cuda_major(r)]
        assert not pinned, f"extra {name} pins a CUDA major: {pinned}"


def test_readme_install_lines():
    # every `pip install` line names existing extras and at most one CUDA major; the Setup section has
    # the two commands .ci/run parses (the main job's install and the test command)
    text = (ROOT / "README.md").read_text()
    extras = _extras()
    lines = re.findall(r"pip install (?:-e )?\"?\.\[([^\]]*)\]", text)
    assert lines
    for spec in lines:
        names = [e.strip() for e in spec.split(",")]
        assert set(names) <= set(extras), f"README installs unknown extras {spec!r}"
        assert len(set(names) & set(CUDA_EXTRAS)) <= 1, f"README line installs two CUDA majors: {spec!r}"
    setup = text.split("## Setup: two commands", 1)[1].split("\n## ", 1)[0]
    cmds = [ln[4:] for ln in setup.splitlines() if ln.startswith("    pip install ")]
    main = [c for c in cmds if "miofind find" in c]
    test = [c for c in cmds if "pytest" in c]
    assert len(main) == 1 and len(test) == 1, cmds
    assert re.match(r'pip install "\.\[cuda1[23]\]" && miofind find ', main[0]), main[0]
    assert re.match(r'pip install -e "\.\[cuda1[23],dev\]" && python -m pytest', test[0]), test[0]
