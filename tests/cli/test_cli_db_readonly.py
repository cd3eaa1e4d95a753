"""Read-only ``miofind db`` commands and immediate-mode queries change no byte of any database and create
no -wal/-shm file; the shipped system DB is visible without a GPU (CPU only, click's CliRunner)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from db_files import row_counts
from miofind import __version__, cli, cli_db
from miofind.trust import trust_key as kernel_hash
from miofind.db import FindDB
from miofind.db.findb import Record, readonly_sqlite_query
from miofind.db.system import system_db_files
from miofind.device import NoGPUError, device_from_string
from miofind.registry import get_solver

SHIPPED = system_db_files()[("sm_90", 132)]
SHIPPED_RECORDS = row_counts(SHIPPED)[0]
# a long key: the old table cut it to "1024-14-14-1x1-2048-7-7-1-0x0-2x2-1x1-0-NCHW-…"
LONG_KEY = "1024-14-14-1x1-2048-7-7-1-0x0-2x2-1x1-0-NCHW-FP16-F"
KEY = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"
NAIVE, TILED = "ConvDirectNaiveConvFwd", "ConvDirectTiledFwd"
H100 = "sm_90-132-NVIDIA_H100_80GB_HBM3"


def run(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(*dirs: Path) -> dict[str, str]:
    """Every file in the directories with its sha256: a new -wal/-shm/-journal file or a changed byte shows."""
    return {str(p): sha(p) for d in dirs for p in sorted(d.iterdir()) if p.is_file()}


def rec(solver=NAIVE, t=1.0, device=H100, key=KEY):
    s = get_solver(solver)
    return Record(device=device, device_name="NVIDIA H100 80GB HBM3", problem_key=key, solver_id=solver,
                  algorithm=s.algorithm, time_ms=t, workspace_bytes=0, verified=True, package_version=__version__,
                  kernel_hash=kernel_hash(s), cuda_version="13.0")


def _fake_gpu(monkeypatch, cupy):
    """current_device() (wherever it was imported) sees ``cupy``'s GPU, or raises what ``cupy`` raises."""
    import miofind.device as dev

    monkeypatch.setattr(dev, "_cupy", cupy)
    dev.current_device.cache_clear()


@pytest.fixture
def no_gpu(monkeypatch):
    """No GPU, whatever the machine has: anything that asks for one fails."""
    import miofind.device as dev

    def raise_():
        raise NoGPUError("no usable GPU (faked by the test)")
    _fake_gpu(monkeypatch, raise_)
    yield
    dev.current_device.cache_clear()


@pytest.fixture
def dbs(tmp_path, monkeypatch, no_gpu):
    """A copy of the shipped DB as the system DB (its own directory) and a user DB in WAL mode with three
    records (another directory); MIOFIND_DB names a user DB that does not exist."""
    sysdir, userdir = tmp_path / "system", tmp_path / "user"
    sysdir.mkdir()
    userdir.mkdir()
    system = sysdir / SHIPPED.name
    shutil.copyfile(SHIPPED, system)
    user = userdir / "finddb.sqlite"
    with FindDB(str(user)) as d:
        d.store([rec(NAIVE, 2.0), rec(TILED, 0.5), rec(NAIVE, 3.0, device="sm_80-108-NVIDIA_A100")])
    assert user.read_bytes()[18] == 2 and not Path(f"{user}-wal").exists()  # WAL mode, closed cleanly
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(system))
    monkeypatch.setenv("MIOFIND_DB", str(tmp_path / "absent" / "finddb.sqlite"))
    return system, user


# -- nothing is written --------------------------------------------------------------------------------

READ_ONLY = [
    ["db", "path"], ["db", "path", "--system"], ["db", "path", "--device", "sm_90-132"],
    ["db", "stats"], ["db", "stats", "--json"], ["db", "stats", "--system"],
    ["db", "show"], ["db", "show", "--json"], ["db", "show", "--system", "--limit", "0", "--key", "%-FP16-F"],
    ["db", "show", "--device", "sm_90-132"],
    ["db", "export"], ["db", "export", "--format", "miopen", "--device", H100],
    ["db", "verify"], ["db", "prune", "--dry-run"],
]


# export, verify and prune read all the shipped records (SHIPPED_RECORDS): on the shipped copy once each, below
@pytest.mark.parametrize("target,cmd", [(t, c) for c in READ_ONLY for t in ("system", "user")
                                        if t == "user" or c[1] not in ("export", "verify", "prune")],
                         ids=lambda x: x if isinstance(x, str) else " ".join(x[1:]))
def test_read_only_commands_change_no_byte(dbs, target, cmd):
    system, user = dbs
    db = system if target == "system" else user
    before = snapshot(system.parent, user.parent)
    r = run(*cmd, "--db", db)
    assert r.exit_code == 0, r.output
    assert snapshot(system.parent, user.parent) == before
    assert not (db.parent.parent / "absent").exists()  # the default user DB is not created either


@pytest.mark.parametrize("cmd", [["db", "export"], ["db", "verify"], ["db", "prune", "--dry-run"]])
def test_slow_read_only_commands_on_shipped_copy(dbs, cmd):
    system, user = dbs
    before = snapshot(system.parent, user.parent)
    r = run(*cmd, "--db", system)
    assert r.exit_code == 0, r.output
    assert snapshot(system.parent, user.parent) == before


def test_shipped_file_itself_unchanged(tmp_path, monkeypatch, no_gpu):
    """The packaged file, chosen by --device with no GPU, is opened immutable and left as it was."""
    monkeypatch.delenv("MIOFIND_SYSTEM_DB", raising=False)
    monkeypatch.setenv("MIOFIND_DB", str(tmp_path / "u.sqlite"))
    before = snapshot(SHIPPED.parent)
    for cmd in (["db", "path", "--system"], ["db", "stats", "--system"], ["db", "show", "--limit", "3"],
                ["db", "show", "--system", "--json", "--limit", "2"]):
        r = run(*cmd, "--device", "sm_90-132")
        assert r.exit_code == 0, r.output
    assert r.stdout and json.loads(r.stdout)["total"] == SHIPPED_RECORDS
    assert snapshot(SHIPPED.parent) == before
    assert not (tmp_path / "u.sqlite").exists()


def test_live_writer_wal_is_read_not_written(dbs):
    """A WAL file with a writer holding it open is read through the writer's -wal (mode=ro, not
    immutable: records still in the -wal are seen), and its main file and -wal stay as they were."""
    _, user = dbs
    writer = FindDB(str(user))
    try:
        writer.store([rec(NAIVE, 9.0, key=LONG_KEY)])  # stays in the -wal until a checkpoint
        wal = Path(f"{user}-wal")
        assert wal.exists()
        main, wal_bytes = sha(user), sha(wal)
        assert readonly_sqlite_query(user) == {"mode": "ro"}
        r = run("db", "show", "--db", user, "--key", LONG_KEY)
        assert r.exit_code == 0, r.output
        assert f"user\t{H100}\t{LONG_KEY}\t{NAIVE}\t9.0\t" in r.stdout
        assert sha(user) == main and sha(wal) == wal_bytes
    finally:
        writer.close()


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def test_read_only_directory(dbs):
    """Both kinds of file in a directory nobody may write (0555) open and read. Root writes there all the
    same, so the test also checks how they are opened: mode=ro, immutable=1 for the WAL file without a
    -wal file, and that no file appears; as another user the open would fail otherwise."""
    system, user = dbs
    dirs = (system.parent, user.parent)
    before = snapshot(*dirs)
    for d in dirs:
        d.chmod(0o555)
    try:
        with FindDB(str(user), readonly=True) as h:
            assert "mode=ro" in h.connect_url and "immutable=1" in h.connect_url
            assert len(list(h.iter_records())) == 3
        with FindDB(str(system), readonly=True) as h:
            assert "mode=ro" in h.connect_url and "immutable" not in h.connect_url  # rollback journal
            assert h.count_records() == SHIPPED_RECORDS
        for db in (user, system):
            for cmd in (["db", "show"], ["db", "stats", "--json"], ["db", "verify"] if db == user else ["db", "path"]):
                r = run(*cmd, "--db", db)
                assert r.exit_code == 0, r.output
        if not _is_root():
            with pytest.raises(PermissionError):
                (user.parent / "probe").write_text("x")
        assert snapshot(*dirs) == before
    finally:
        for d in dirs:
            d.chmod(0o755)


# -- immediate mode without a GPU ---------------------------------------------------------------------

def _shipped_records(key):
    with FindDB(str(SHIPPED), readonly=True, immutable=True) as h:
        return {r.solver_id: r for r in h.lookup(None, key)}


def test_get_solutions_from_shipped_db_without_gpu(dbs, monkeypatch, request):
    """miofind.api.get_solutions with a device string's DeviceInfo answers from the system DB: no GPU,
    no CuPy on the path, and no byte of either DB changes. The user DB here is a rollback-journal file
    (WAL-mode user DBs: test_get_solutions_leaves_wal_user_db_alone)."""
    import dataclasses

    import miofind.api

    system, _ = dbs
    # the CUDA version here would depend on whether CuPy was imported earlier in the process (device._runtime reads it
    # without CuPy's import, else through the faked CuPy, which fails): the cases below pin it
    dev = device_from_string("sm_90-132")
    user = system.parent / "user-copy.sqlite"  # a copy of the shipped file given as the user DB (issue 12)
    shutil.copyfile(system, user)
    assert user.read_bytes()[18] == 1  # rollback journal
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` now fails: the path must not need it
    before = snapshot(system.parent)
    recs = _shipped_records(LONG_KEY)
    pinned = dataclasses.replace(dev, cuda_version=recs[NAIVE].cuda_version)  # the records' CUDA major
    other = dataclasses.replace(dev, cuda_version=f"{int(pinned.cuda_version.split('.')[0]) + 1}.0")   # a later major
    # and the records' cuBLASLt (its version is in the GEMM and Winograd trust keys; this host's may differ)
    from miofind import cublas
    from miofind.trust import parse_key, trust_key
    monkeypatch.setattr(cublas, "_lt_version", [parse_key(recs["GemmFwdRest"].kernel_hash)["cublaslt"]])
    trust_key.cache_clear()
    request.addfinalizer(trust_key.cache_clear)
    for device, trusted in ((pinned, True), (other, False)):
        res = miofind.api.get_solutions(LONG_KEY, device=device, db=str(user))
        if trusted:
            assert res.source == "db" and res.db_layer == "system", (res.source, res.basis)
            assert res and {s.solver_id for s in res} <= set(recs)
            assert NAIVE not in {s.solver_id for s in res}   # not a candidate unless asked for
            assert NAIVE in {s.solver_id for s in miofind.api.get_solutions(LONG_KEY, device=device, db=str(user),
                                                                          with_naive=True)}
            for s in res:
                assert s.time_ms == recs[s.solver_id].time_ms and s.source == "db"
        else:  # another CUDA major than the shipped records': untrusted, so a prediction, FLOP-scaled from the nearest
            # other known problem's records (predict.nearest_problem leaves the problem's own key out)
            assert res.source == "predicted" and res.basis.startswith("nearest known problem ")
            near = res.basis.split()[3]
            assert near != LONG_KEY and _shipped_records(near), res.basis
    assert snapshot(system.parent) == before


def test_fast_find_without_gpu_work_leaves_shipped_db_alone(dbs, monkeypatch):
    """find_solutions(mode="fast") on a problem the system DB holds answers from it: the device is an
    H100 as CUDA would describe it, but CuPy cannot be imported, so any GPU work would fail."""
    import types

    import miofind.api as api

    system, user = dbs
    major, minor = (int(x) for x in _shipped_records(LONG_KEY)[NAIVE].cuda_version.split("."))
    props = {"name": b"NVIDIA H100 80GB HBM3", "major": 9, "minor": 0, "multiProcessorCount": 132}
    runtime = types.SimpleNamespace(getDeviceCount=lambda: 1, getDevice=lambda: 0, getDeviceProperties=lambda i: props,
                                    driverGetVersion=lambda: 13000, runtimeGetVersion=lambda: major * 1000 + minor * 10)
    _fake_gpu(monkeypatch, lambda: types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime), __version__="14"))
    monkeypatch.setitem(sys.modules, "cupy", None)
    before = snapshot(system.parent)
    res = api.find_solutions(LONG_KEY, mode="fast", db=str(user))
    assert res.source == "db" and res.db_layer == "system" and not res.failures
    assert snapshot(system.parent) == before


def test_get_solutions_leaves_wal_user_db_alone(dbs):
    """Immediate mode opens the user DB read-only: a WAL user DB gets no -wal/-shm files, and a
    missing one is not created."""
    import miofind.api

    system, user = dbs
    before = snapshot(system.parent, user.parent)
    miofind.api.get_solutions(LONG_KEY, device=device_from_string("sm_90-132"), db=str(user))
    missing = user.parent / "missing.sqlite"
    miofind.api.get_solutions(LONG_KEY, device=device_from_string("sm_90-132"), db=str(missing))
    assert snapshot(system.parent, user.parent) == before


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["normal", "fast", "hybrid", "dynamic_hybrid", "benchmark"])
def test_find_every_mode_leaves_system_db_alone(tmp_path, monkeypatch, mode):
    """On the GPU: a find in every mode (benchmarking and storing into the user DB where the mode does)
    changes no byte of the system DB and creates nothing beside it."""
    import miofind.api as api

    sysdir = tmp_path / "system"
    sysdir.mkdir()
    system = sysdir / SHIPPED.name
    shutil.copyfile(SHIPPED, system)
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(system))
    before = snapshot(sysdir)
    for key in (LONG_KEY, "8-14-14-3x3-8-14-14-1-1x1-1x1-1x1-0-NCHW-FP32-F"):  # known, and not in the DB
        api.find_solutions(key, mode=mode, db=str(tmp_path / "user.sqlite"), solvers=[NAIVE], iters=2, warmup=1)
    assert snapshot(sysdir) == before


# -- the system DB is visible -------------------------------------------------------------------------

def tsv(r):
    lines = r.stdout.splitlines()
    assert lines[0].split("\t") == list(cli_db._SHOW_COLS)
    return [dict(zip(cli_db._SHOW_COLS, ln.split("\t"))) for ln in lines[1:]]


def test_db_path_prints_both_layers(dbs, monkeypatch):
    system, user = dbs
    r = run("db", "path", "--db", user)
    assert r.exit_code == 0 and r.stdout == f"user\t{user}\nsystem\t{system}\n"
    assert run("db", "path", "--db", user, "--user").stdout == f"{user}\n"
    assert run("db", "path", "--system").stdout == f"{system}\n"
    monkeypatch.delenv("MIOFIND_SYSTEM_DB")
    r = run("db", "path", "--db", user, "--device", "sm_90-132")
    assert r.stdout == f"user\t{user}\nsystem\t{SHIPPED}\n"
    r = run("db", "path", "--db", user)  # no GPU, no --device: the user DB, and a note on how to get the other
    assert r.exit_code == 0 and r.stdout == f"user\t{user}\n" and "--device" in r.stderr
    err = run("db", "path", "--system")
    assert err.exit_code == 1 and err.stderr.startswith("miofind: no system FindDB") and "--device" in err.stderr
    err = run("db", "path", "--system", "--device", "sm_75-40")
    assert err.exit_code == 1 and "none is shipped for sm_75" in err.stderr and "sm_90-132" in err.stderr


def test_show_layers_and_system_only(dbs):
    system, user = dbs
    r = run("db", "show", "--db", user, "--limit", "0", "--key", LONG_KEY)
    assert r.exit_code == 0, r.output
    rows = tsv(r)
    recs = _shipped_records(LONG_KEY)
    assert {x["layer"] for x in rows} == {"system"} and len(rows) == len(recs)
    r = run("db", "show", "--db", user, "--limit", "0", "--key", KEY)
    rows = tsv(r)
    assert [x["layer"] for x in rows][:3] == ["user"] * 3 and {x["layer"] for x in rows[3:]} == {"system"}
    assert len(rows) == 3 + len(_shipped_records(KEY))
    r = run("db", "show", "--db", user, "--system", "--limit", "0", "--key", KEY)
    assert {x["layer"] for x in tsv(r)} == {"system"}
    # --device keeps the user records of that device (any name with a name-less string) and picks the system DB
    r = run("db", "show", "--db", user, "--device", "sm_80-108", "--limit", "0", "--key", KEY)
    assert [(x["layer"], x["device"]) for x in tsv(r)][:1] == [("user", "sm_80-108-NVIDIA_A100")]
    assert sum(x["layer"] == "user" for x in tsv(r)) == 1


def test_show_tsv_has_full_keys_when_piped(dbs):
    system, _ = dbs
    r = run("db", "show", "--db", system, "--key", LONG_KEY, "--limit", "1")
    assert r.exit_code == 0
    (row,) = tsv(r)
    assert row["problem_key"] == LONG_KEY and "…" not in r.stdout
    best = min(_shipped_records(LONG_KEY).values(), key=lambda x: (x.time_ms, x.solver_id))
    assert row["solver"] == best.solver_id and float(row["time_ms"]) == best.time_ms


def test_show_table_on_a_terminal_keeps_full_keys(dbs, monkeypatch):
    system, _ = dbs
    monkeypatch.setattr(cli_db, "_is_terminal", lambda: True)
    monkeypatch.setattr(cli_db.console, "width", 140)  # narrower than a row (about 200)
    r = run("db", "show", "--db", system, "--key", LONG_KEY, "--limit", "2")
    assert r.exit_code == 0, r.output
    assert "┃ layer" in r.stdout and r.stdout.count(LONG_KEY) == 2 and "…" not in r.stdout
    assert "showing 2 of" in r.stderr


def test_show_says_when_the_limit_leaves_records_out(dbs):
    system, user = dbs
    r = run("db", "show", "--db", user, "--limit", "2", "--key", KEY)
    n_sys = len(_shipped_records(KEY))
    assert len(tsv(r)) == 2 and f"showing 2 of {3 + n_sys} records" in r.stderr
    r = run("db", "show", "--db", user, "--limit", "4", "--key", KEY)  # across both layers
    assert [x["layer"] for x in tsv(r)] == ["user"] * 3 + ["system"]
    r = run("db", "show", "--db", user, "--limit", "0", "--key", KEY)
    assert len(tsv(r)) == 3 + n_sys and "showing" not in r.stderr
    r = run("db", "show", "--db", user, "--system", "--limit", "50")
    assert len(tsv(r)) == 50 and f"showing 50 of {SHIPPED_RECORDS} records" in r.stderr
    assert run("db", "show", "--limit", "-1").exit_code == 2


def test_show_json(dbs):
    _, user = dbs
    r = run("db", "show", "--db", user, "--json", "--limit", "5", "--key", KEY)
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["shown"] == 5 and d["total"] == 3 + len(_shipped_records(KEY)) and len(d["records"]) == 5
    assert [x["layer"] for x in d["records"]] == ["user"] * 3 + ["system"] * 2
    assert {(x["device"], x["solver_id"], x["time_ms"]) for x in d["records"][:3]} == \
        {(H100, TILED, 0.5), (H100, NAIVE, 2.0), ("sm_80-108-NVIDIA_A100", NAIVE, 3.0)}
    assert all(x["problem_key"] == KEY and isinstance(x["verified"], bool) for x in d["records"])


def test_stats_layers_and_json(dbs):
    system, user = dbs
    r = run("db", "stats", "--db", user, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert set(d) == {"user", "system"}
    assert d["user"]["records"] == 3 and d["user"]["path"] == str(user)
    assert d["system"]["records"] == SHIPPED_RECORDS and d["system"]["path"] == str(system)
    assert d["system"]["solvers"][NAIVE] == 960
    d = json.loads(run("db", "stats", "--system", "--json").stdout)
    assert list(d) == ["system"]
    r = run("db", "stats", "--db", user)
    assert "│ user   │ records" in r.stdout and "│ system │ records" in r.stdout and str(SHIPPED_RECORDS) in r.stdout
    # the default user DB does not exist: reported, not created
    d = json.loads(run("db", "stats", "--json").stdout)
    assert d["user"] == {"exists": False, "path": os.environ["MIOFIND_DB"]}
    assert not Path(os.environ["MIOFIND_DB"]).exists()


def test_system_needs_a_device_without_gpu(dbs, monkeypatch):
    monkeypatch.delenv("MIOFIND_SYSTEM_DB")
    for cmd in (["db", "stats", "--system"], ["db", "show", "--system"]):
        r = run(*cmd)
        assert r.exit_code == 1 and "Traceback" not in r.output
        assert [ln for ln in r.stderr.splitlines()] == \
            ["miofind: no system FindDB: no GPU here to choose it by; give --device, e.g. --device sm_90-132"]
    r = run("db", "show", "--system", "--device", "sm_90")
    assert r.exit_code == 1 and r.stderr.startswith("miofind: --device='sm_90': expected sm_")
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", "none")
    r = run("db", "stats", "--system")
    assert r.exit_code == 1 and "MIOFIND_SYSTEM_DB=none" in r.stderr
