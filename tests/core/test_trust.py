"""Trust keys (miofind.trust): what changes them, what does not, the fingerprint guard on solver
code, and the migration that kept the shipped DB trusted. CPU only."""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import miofind
from miofind.db import FindDB, Record
from miofind.db.maintenance import (SOURCE_RENAMES, legacy_trust_changes, migrate_trust_keys, renamed_trust_changes,
                                    trust_summary, verify_db)
from miofind.db.system import system_db_files
from miofind.registry import get_solver, solvers
from miofind.trust import compare, is_trusted, parse_key, trust_key

ROOT = Path(__file__).resolve().parents[2]
FINGERPRINTS = Path(__file__).with_name("solver_fingerprints.json")


# -- the key's parts -----------------------------------------------------------------------------

def test_key_form_and_parse():
    for s in solvers():
        k = trust_key(s)
        f = parse_key(k)
        assert f is not None and f["v"] == str(s.version) and len(f["src"]) in (4, 16), k
    assert parse_key("eab45e9cadcf62c6") is None and parse_key("") is None


def test_compare_verdicts():
    cur = "src=aaaa;v=2;cufft=12000"
    assert compare(cur, cur) == ("yes", "ok")
    assert compare("src=bbbb;v=2;cufft=12000", cur)[0] == "no"
    assert "version 1 changed to 2" in compare("src=aaaa;v=1;cufft=12000", cur)[1]
    assert compare("src=aaaa;v=2;cufft=11000", cur)[0] == "no"
    assert compare("src=aaaa;v=2;cufft=12000", "src=aaaa;v=2;cufft=?") == (
        "unknown", "cufft version cannot be read here")
    assert compare("src=aaaa;v=2", cur)[0] == "no"            # a library the record lacks
    assert compare("eab45e9cadcf62c6", cur)[0] == "no"         # a 0.1.0 kernel hash


def test_is_trusted_needs_key_and_cuda_major():
    s = get_solver("ConvImplicitGemmFwd")
    r = Record(device="sm_90-132", device_name="", problem_key="k", solver_id=s.id, algorithm="a", time_ms=1.0,
               workspace_bytes=0, kernel_hash=trust_key(s), cuda_version="13.0")
    assert is_trusted(r, s, "13.2") == (True, "ok")             # a minor CUDA version may differ
    ok, why = is_trusted(r, s, "12.8")
    assert not ok and "CUDA" in why
    ok, why = is_trusted(Record(**{**r.__dict__, "kernel_hash": "src=0;v=1"}), s, "13.0")
    assert not ok and "kernel source changed" in why


def test_version_bump_changes_the_key(monkeypatch):
    s = get_solver("ConvDirectTiledFwd")
    before = trust_key(s)
    trust_key.cache_clear()
    monkeypatch.setattr(type(s), "version", s.version + 1)
    try:
        after = trust_key(s)
    finally:
        trust_key.cache_clear()
    assert after != before and compare(before, after)[0] == "no"


# -- editing sources, in a copy of the package run in a child process ---------------------------

def _copy_tree(tmp_path: Path) -> Path:
    dst = tmp_path / "repo"
    for d in ("miofind", "solvers", "kernels_src"):
        shutil.copytree(ROOT / d, dst / d, ignore=shutil.ignore_patterns("__pycache__"))
    (dst / "finddb").mkdir()
    (dst / "finddb" / "__init__.py").write_text("")
    return dst


def _keys_in(repo: Path) -> dict[str, str]:
    code = ("import json, miofind; from miofind.registry import solvers; from miofind.trust import trust_key; "
            "assert miofind.__file__.startswith(%r), miofind.__file__; "
            "print(json.dumps({s.id: trust_key(s) for s in solvers()}))" % str(repo))
    env = {**os.environ, "PYTHONPATH": str(repo)}
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_edits_that_keep_and_change_the_key(tmp_path):
    repo = _copy_tree(tmp_path)
    base = _keys_in(repo)
    assert base == {s.id: trust_key(s) for s in solvers()}

    # a docstring and a comment in a solver's Python module, a helper's docstring in its base module,
    # and a comment in a kernel source: no key changes
    mod = repo / "solvers" / "implicit_gemm_base.py"
    text = mod.read_text()
    text = text.replace('"""Implicit GEMM convolution', '"""EDITED docstring. Implicit GEMM convolution', 1)
    text = text.replace("\nclass ImplicitGemmBase(Solver):", "\n# an added comment\nclass ImplicitGemmBase(Solver):", 1)
    mod.write_text(text)
    cu = repo / "kernels_src" / "implicit_gemm_core.cu"
    cu.write_text("// an added comment line\n" + cu.read_text().replace("\n{", "\n{ // trailing comment", 1))
    assert _keys_in(repo) == base

    # one line of kernel code: the key of every solver compiling that source changes, no other
    cu.write_text(cu.read_text() + "\n__device__ int miofind_test_edit() { return 1; }\n")
    after = _keys_in(repo)
    changed = {k for k in base if base[k] != after[k]}
    assert changed == {"ConvImplicitGemmFwd", "ConvImplicitGemmBwd", "ConvImplicitGemmWrw"}


def test_source_digests_carry_over_between_processes_until_a_file_is_written(tmp_path, monkeypatch):
    from miofind import compile as mc
    from miofind import trust

    src, cache = tmp_path / "k", tmp_path / "cache"
    src.mkdir()
    cache.mkdir(mode=0o700)
    (src / "h.cuh").write_text("#pragma once\n__device__ int h() { return 1; }\n")
    (src / "a.cu").write_text('#include "h.cuh"\n__global__ void a() { h(); }\n')
    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(cache))
    monkeypatch.setattr(mc, "_kernels_dir", lambda: src)
    strips = []
    real_strip = trust._strip_comments
    monkeypatch.setattr(trust, "_strip_comments", lambda text: (strips.append(1), real_strip(text))[1])

    def new_process():
        for f in (trust._file_digest, trust._digest_cache, mc.kernel_source):
            f.cache_clear()

    new_process()
    d1 = trust.source_digest(["a.cu"])
    stored = json.loads((cache / "source-digests.json").read_text())["files"]
    assert set(stored) == {str(src / "a.cu")} and set(stored[str(src / "a.cu")]["deps"]) == {str(src / "a.cu"), str(src / "h.cuh")}
    assert len(strips) == 1
    new_process()
    assert trust.source_digest(["a.cu"]) == d1 and len(strips) == 1        # read from the file: nothing hashed

    # the header rewritten with code of the same size, its modification time set back: the change
    # time still moved, so the digest is computed again, and it is the one a cold cache gives
    h = src / "h.cuh"
    st = os.stat(h)
    time.sleep(0.01)
    h.write_text(h.read_text().replace("return 1", "return 2"))
    os.utime(h, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(h).st_size == st.st_size and os.stat(h).st_mtime_ns == st.st_mtime_ns
    new_process()
    d2 = trust.source_digest(["a.cu"])
    assert d2 != d1 and len(strips) == 2
    (cache / "source-digests.json").unlink()
    new_process()
    assert trust.source_digest(["a.cu"]) == d2 and len(strips) == 3

    # an unreadable cache file is ignored (and replaced), never an error
    (cache / "source-digests.json").write_text("{not json")
    new_process()
    assert trust.source_digest(["a.cu"]) == d2 and len(strips) == 4
    assert json.loads((cache / "source-digests.json").read_text())["v"] == 1


# -- the fingerprint guard: code changes must bump `version` or be re-recorded ------------------

def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def fingerprint(solver) -> str:
    """sha256 of the ASTs (docstrings and comments dropped) of every miofind.solvers module in the
    solver's class hierarchy."""
    h = hashlib.sha256()
    mods = sorted({c.__module__ for c in type(solver).__mro__ if c.__module__.startswith("miofind.solvers")})
    for m in mods:
        tree = _strip_docstrings(ast.parse(inspect.getsource(sys.modules[m])))
        h.update(m.rsplit(".", 1)[-1].encode())
        h.update(ast.dump(tree, include_attributes=False).encode())
    return h.hexdigest()[:16]


def current_fingerprints() -> dict:
    return {s.id: {"version": s.version, "fingerprint": fingerprint(s)} for s in solvers()}


def stale_fingerprints() -> list[str]:
    """The solvers whose current fingerprint or version differs from the recorded one."""
    pinned = json.loads(FINGERPRINTS.read_text())
    now = current_fingerprints()
    return [sid for sid in now if pinned.get(sid) != now[sid]]


def test_solver_code_changes_are_versioned_consciously():
    """A solver whose code changed (beyond docstrings and comments) since its fingerprint was
    recorded: if its launch behaviour changed (macros, geometry, workspace layout), bump its
    ``version``; either way re-record with ``python tests/core/test_trust.py --record``."""
    stale = stale_fingerprints()
    assert not stale, (f"solver code or version changed without a re-recorded fingerprint: {stale}. Bump the "
                       "solver's `version` if its launch behaviour changed, then run "
                       "`python tests/core/test_trust.py --record`.")


def test_fingerprint_ignores_docstrings_but_not_code():
    src = 'class A:\n    """doc"""\n    x = 1\n'
    a = ast.dump(_strip_docstrings(ast.parse(src)))
    assert a == ast.dump(_strip_docstrings(ast.parse(src.replace('"""doc"""', '"""other doc"""  # c'))))
    assert a != ast.dump(_strip_docstrings(ast.parse(src.replace("x = 1", "x = 2"))))


# -- the shipped DB and the migration from 0.1.0 kernel hashes ----------------------------------

def test_every_shipped_record_is_trusted():
    """Every record of the shipped DB is trusted by the installed code, except where a library
    installed here (cuDNN, cuFFT) is another version than the one the H100 measured with: those
    records are re-measured on a machine with other libraries, as they must be."""
    (path,) = [p for (arch, sms), p in system_db_files().items() if (arch, sms) == ("sm_90", 132)]
    with FindDB(str(path), readonly=True, immutable=True) as db:
        assert not verify_db(db)
        rows = [(r.solver_id, r.kernel_hash) for r in db.iter_records()]
        rows += [(r.solver_id, r.kernel_hash) for r in db.iter_perf()]
    from db_files import row_counts
    assert len(rows) == sum(row_counts(path)) and len(rows) > 20000
    verdicts = {}
    for sid, key in set(rows):
        verdict, why = compare(key, trust_key(get_solver(sid)))
        verdicts[sid, key] = (verdict, why)
        if verdict == "no":
            assert why.startswith("written with cu"), (sid, why)          # a library version, not code
        if verdict == "unknown":
            assert "?" in trust_key(get_solver(sid)), sid                 # unreadable here
    untouched = {sid for (sid, _), (v, _) in verdicts.items() if not get_solver(sid).library_versions()}
    assert all(verdicts[k][0] == "yes" for k in verdicts if k[0] in untouched)
    assert len(untouched) == 26   # the solvers with shipped records that run no library (the Hopper three, the
    # small-C two and, since session-nov27b's ResNeXt records, the grouped direct three included; since session-nov27j
    # the GEMM six and the Winograd four name cuBLASLt's version; since session dec03a's random layers the Hopper
    # family's NCHW wrappers (three), swapped operands (four) and copy-engine-store forward)


def test_shipped_library_keys_match_the_measuring_libraries():
    """The cuDNN/FFT/cuBLASLt records carry the library versions they were measured with (H100: cuDNN
    9.19.0 with frontend 1.32.0, cuFFT 12000, cuBLASLt 130100), so they are trusted wherever those are installed."""
    (path,) = [p for (arch, sms), p in system_db_files().items() if (arch, sms) == ("sm_90", 132)]
    ids = ("ConvCudnnFwd", "ConvFFTFwd", "GemmWrw1x1_stride1", "ConvWinograd3x3F43Bwd")
    with FindDB(str(path), readonly=True, immutable=True) as db:
        keys = {r.solver_id: r.kernel_hash for r in db.iter_records() if r.solver_id in ids}
    assert parse_key(keys["ConvCudnnFwd"])["cudnn"] == "91900"
    assert parse_key(keys["ConvFFTFwd"])["cufft"] == "12000"
    assert parse_key(keys["GemmWrw1x1_stride1"])["cublaslt"] == parse_key(keys["ConvWinograd3x3F43Bwd"])["cublaslt"] == "130100"
    for sid, lib, v in (("ConvFFTFwd", "cufft", "12000"), ("GemmWrw1x1_stride1", "cublaslt", "130100")):
        f = parse_key(trust_key(get_solver(sid)))
        here = f"src={f['src']};v={f['v']};{lib}={v}"      # this code, with the H100's library
        assert compare(keys[sid], here) == ("yes", "ok")


def test_migration_of_a_0_1_0_user_db(tmp_path):
    changes = legacy_trust_changes()
    # every solver of 0.1.0 (registry rows 1-28); later solvers have no legacy keys to migrate
    assert {sid for sid, _ in changes} == {s.id for s in solvers()[:28]}
    (sid, old), new = next((k, v) for k, v in changes.items() if k[0] == "ConvImplicitGemmFwd")
    s = get_solver(sid)
    rec = Record(device="sm_90-132", device_name="", problem_key="k", solver_id=sid, algorithm="a", time_ms=1.0,
                 workspace_bytes=0, kernel_hash=old, cuda_version="13.0", package_version="0.1.0",
                 created_at=time.time())
    other = Record(**{**rec.__dict__, "solver_id": "ConvDirectTiledFwd", "kernel_hash": "0123456789abcdef"})
    with FindDB(str(tmp_path / "u.sqlite")) as db:
        db.store([rec, other])
        assert not is_trusted(db.lookup(None, "k")[0], s, "13.0")[0]
        assert migrate_trust_keys(db) == {"find": 1, "perf": 0, "failures": 0}
        got = {r.solver_id: r for r in db.lookup(None, "k")}
        assert got[sid].kernel_hash == new == trust_key(s) and is_trusted(got[sid], s, "13.0")[0]
        assert got["ConvDirectTiledFwd"].kernel_hash == "0123456789abcdef"  # an unknown hash stays untrusted



def test_migration_of_records_before_a_source_rename(tmp_path):
    """Records keyed with a kernel-source digest that SOURCE_RENAMES replaced (the generic-build edit
    of gemm_im2col.cu and the depthwise kernels, which left every specialised build's code as it was)
    get today's key; a record of another solver with that old key, or of an unknown digest, stays. The Hopper
    family's earlier digests no longer rename (the programmatic dependent launches changed its binaries), but those
    of the solvers built from implicit_gemm_hopper_fwd.cu and _wrw.cu just before their padded copy-engine K tiles and
    columns do (their stored configs' binaries unchanged: bench/results/session-nov29h/cubins_identical.txt)."""
    changes = renamed_trust_changes()
    # the generic-build edit (gemm, depthwise) and the padded K tiles and W columns (the Hopper F, B and W kernels)
    padded = {f"ConvImplicitGemmHopper{n}" for n in ("Fwd", "Bwd", "FwdBiasActiv", "FwdTmaStore", "FwdNchw", "BwdNchw",
                                                    "BwdTf32", "Wrw", "WrwNchw")}
    assert {sid for sid, _ in changes} == {s.id for s in solvers() if s.family in ("gemm", "depthwise")
                                           and getattr(s, "kernel_files", ())} | padded
    for (sid, old), new in changes.items():
        assert new == trust_key(get_solver(sid)) and parse_key(old)["src"] in SOURCE_RENAMES
        assert compare(old, new)[0] == "no"
    (sid, old), new = next((k, v) for k, v in changes.items() if k[0] == "ConvDepthwiseWrw")
    rec = Record(device="sm_90-132", device_name="", problem_key="k", solver_id=sid, algorithm="a", time_ms=1.0,
                 workspace_bytes=0, kernel_hash=old, cuda_version="13.0", created_at=time.time())
    other = Record(**{**rec.__dict__, "solver_id": "ConvDirectTiledFwd"})
    with FindDB(str(tmp_path / "u.sqlite")) as db:
        db.store([rec, other])
        assert migrate_trust_keys(db)["find"] == 1
        got = {r.solver_id: r for r in db.lookup(None, "k")}
        assert got[sid].kernel_hash == new and is_trusted(got[sid], get_solver(sid), "13.0")[0]
        assert got["ConvDirectTiledFwd"].kernel_hash == old


if __name__ == "__main__":
    # --record writes the fingerprints; without it, the check: the stale solvers listed, exit status 1
    if "--record" in sys.argv:
        FINGERPRINTS.write_text(json.dumps(current_fingerprints(), indent=1, sort_keys=True) + "\n")
        print(f"recorded {FINGERPRINTS}")
    else:
        stale = stale_fingerprints()
        print(f"stale fingerprints: {', '.join(stale)} (bump a solver's version if its launch behaviour changed, then "
              "--record)" if stale else f"fingerprints of every solver match {FINGERPRINTS}")
        sys.exit(1 if stale else 0)
