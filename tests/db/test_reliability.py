"""FindDB reliability without a GPU: eight concurrent writer processes, a tune killed with SIGKILL
mid-write and resumed, a corrupt user DB with the system DB still answering, untrusted data."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from miofind.db import FindDB, FindDBWarning, Record
from miofind.db.system import Overlay, open_system_db, system_db_path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent


def test_eight_processes_write_at_once_and_lose_nothing(tmp_path):
    p, go = tmp_path / "finddb.sqlite", tmp_path / "go"
    writer = Path(__file__).with_name("_writer.py")
    n, procs_n = 150, 8
    procs = [subprocess.Popen([sys.executable, str(writer), str(p), str(go), str(tmp_path / f"ready{i}"),
                               f"proc{i}", str(n)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for i in range(procs_n)]
    deadline = time.time() + 60
    while not all((tmp_path / f"ready{i}").exists() for i in range(procs_n)):
        assert time.time() < deadline and all(pr.poll() is None for pr in procs), "writers failed to start"
        time.sleep(0.01)
    go.touch()
    outs = [pr.communicate(timeout=180)[0].decode() for pr in procs]
    for pr, out in zip(procs, outs):
        assert pr.returncode == 0, out  # _writer.py turns any warning (and so any lock error) into a failure
        assert "locked" not in out.lower()
    with FindDB(str(p)) as d:
        keys = {r.problem_key for r in d.iter_records()}
    assert keys == {f"proc{i}-{j}" for i in range(procs_n) for j in range(n)}


def _lines(path: Path) -> list:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_tune_killed_with_sigkill_leaves_a_sound_db_and_resumes(tmp_path):
    db, outcomes, calls = tmp_path / "tune.sqlite", tmp_path / "outcomes.jsonl", tmp_path / "calls.jsonl"
    cmd = [sys.executable, str(TESTS / "tuning" / "_tune_child.py"), str(db), str(outcomes), str(calls)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while len(_lines(outcomes)) < 3:  # kill it mid-way, while it is writing
        assert child.poll() is None, child.stdout.read().decode()
        assert time.time() < deadline, "the tune made no progress"
        time.sleep(0.01)
    time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    first = _lines(outcomes)
    assert 3 <= len(first) < 23, "the kill should land mid-tune"

    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    con.close()
    from click.testing import CliRunner

    from miofind.cli import main
    r = CliRunner().invoke(main, ["db", "verify", "--db", str(db)])
    assert r.exit_code == 0, r.output
    with FindDB(str(db)) as d:
        failed_before = {(f.problem_key, f.solver_id, json.dumps(f.config, sort_keys=True)) for f in d.iter_failures()}
    n_calls = len(_lines(calls))

    done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    assert done.returncode == 0, done.stdout.decode()
    second = _lines(outcomes)[len(first):]
    assert len(second) == 23
    finished = {o["key"] for o in first}
    # finished problems are skipped, the rest are tuned; no recorded failure is measured again
    assert all(o["status"] == "skipped" for o in second if o["key"] in finished)
    assert all(o["status"] == "done" for o in second if o["key"] not in finished)
    again = {(k, s, json.dumps(c, sort_keys=True)) for k, s, c in _lines(calls)[n_calls:]}
    assert not (again & failed_before)


def test_corrupt_user_db_is_moved_aside_and_system_db_still_answers(tmp_path, monkeypatch):
    sysdb = tmp_path / "sm_90-132.sqlite"
    rec = Record(device="sm_90-132-X", device_name="X", problem_key="k", solver_id="S", algorithm="a",
                 time_ms=1.0, workspace_bytes=0)
    with FindDB(str(sysdb)) as d:
        d.store([rec])
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(sysdb))
    user = tmp_path / "user.sqlite"
    user.write_bytes(b"SQLite format 3\x00" + os.urandom(3000))
    with pytest.warns(FindDBWarning, match="corrupt.*moved it to"):
        u = FindDB(str(user))
    assert list(tmp_path.glob("user.sqlite.corrupt-*")), "the corrupt file must be kept"
    ov = Overlay(u, open_system_db("sm_90", 132))
    assert [(layer, [r.solver_id for r in recs]) for layer, recs in ov.lookup("sm_90-132-Y", "k")] == \
        [("user", []), ("system", ["S"])]
    u.close()


def test_system_db_choice_nearest_sm_count(tmp_path, monkeypatch):
    import miofind.db.system as system

    for name in ("sm_90-132.sqlite", "sm_90-114.sqlite", "sm_80-108.sqlite", "README"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setattr(system, "_finddb_dir", lambda: tmp_path)
    monkeypatch.delenv("MIOFIND_SYSTEM_DB", raising=False)
    assert system_db_path("sm_90", 132).name == "sm_90-132.sqlite"
    assert system_db_path("sm_90", 120).name == "sm_90-114.sqlite"
    assert system_db_path("sm_90", 144).name == "sm_90-132.sqlite"
    assert system_db_path("sm_80", 40).name == "sm_80-108.sqlite"
    assert system_db_path("sm_100", 148) is None
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", "none")
    assert system_db_path("sm_90", 132) is None


def test_no_pickle_or_eval_in_the_db_path():
    files = sorted((REPO / "miofind" / "db").glob("*.py")) + [REPO / "miofind" / "cli_db.py",
                                                              REPO / "miofind" / "db" / "system.py"]
    bad = re.compile(r"^\s*(import|from)\s+(pickle|marshal|shelve|dill)\b|\b(pickle|marshal)\.|\beval\(|\bexec\(")
    for f in files:
        for i, line in enumerate(f.read_text().splitlines(), 1):
            assert not bad.search(line), f"{f.name}:{i}: {line.strip()}"


# -- read-only databases, as a user the directory's permissions bind (issue 15) ------------------------

_RO_CHILD = r'''
import json, sys
from click.testing import CliRunner
from miofind.cli import main
from miofind.db import FindDB, FindDBError
from records import rec

d = sys.argv[1]
out = {}
h = FindDB(f"{d}/wal.sqlite")  # asked writable: opens read-only, and works
out["readonly"] = h.readonly
out["records"] = [r.solver_id for r in h.iter_records()]
try:
    h.store([rec("S9")])
except FindDBError as e:
    out["store"] = str(e)
h.close()
for name in ("sub/new.sqlite", "wal-with-log.sqlite"):
    try:
        FindDB(f"{d}/{name}")
    except FindDBError as e:
        out[name] = str(e)
r = CliRunner()
for cmd in (["db", "stats", "--json"], ["db", "show"], ["db", "verify"]):
    res = r.invoke(main, [*cmd, "--db", f"{d}/wal.sqlite"])
    out[" ".join(cmd)] = [res.exit_code, res.stdout[-300:], res.stderr[-300:], repr(res.exception)]
for cmd in (["db", "prune", "--db", f"{d}/sub/new.sqlite"], ["db", "stats", "--db", f"{d}/wal-with-log.sqlite"]):
    res = r.invoke(main, cmd)
    out[" ".join(cmd[:2]) + " " + cmd[-1].rsplit("/", 1)[-1]] = [res.exit_code, res.stderr, repr(res.exception)]
print(json.dumps(out))
'''


def _run_unprivileged(code: str, *args: str) -> subprocess.CompletedProcess:
    """Run Python ``code`` as a user that directory permissions bind: this interpreter when not root,
    else the system python3 (same version, this environment's site-packages) as 'nobody'."""
    import shutil

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), str(REPO)]), HOME="/tmp")
    if os.geteuid() != 0:
        return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                              timeout=120)
    py = shutil.which("python3", path="/usr/bin:/bin")
    if py is None:
        pytest.skip("running as root with no system python3 to run as 'nobody'")
    sites = [p for p in sys.path if p.endswith("site-packages")]
    prelude = f"import site, sys\nfor d in {sites!r}: site.addsitedir(d)\n"
    probe = subprocess.run([py, "-c", prelude + "import sys, miofind.cli, sqlalchemy; print(sys.version_info[:2])"],
                           user=65534, group=65534, capture_output=True, text=True, env=env, cwd="/", timeout=60)
    if probe.returncode != 0 or probe.stdout.strip() != str(tuple(sys.version_info[:2])):
        pytest.skip(f"running as root and 'nobody' cannot import this environment ({probe.stderr.strip()[-200:]})")
    return subprocess.run([py, "-c", prelude + code, *args], user=65534, group=65534, capture_output=True,
                          text=True, env=env, cwd="/", timeout=120)


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_read_only_directory_opens_read_only_and_reports_one_line_errors():
    """A valid WAL database in a read-only directory was reported "corrupt", then `db stats`/`db show`
    crashed in _quarantine with PermissionError; `--db /ro/sub/new.sqlite` was a PermissionError traceback."""
    import shutil
    import tempfile

    from records import rec

    d = Path(tempfile.mkdtemp(prefix="miofind-ro-"))  # outside pytest's 0700 tree, so 'nobody' can enter
    try:
        d.chmod(0o755)
        with FindDB(str(d / "wal.sqlite")) as h:
            h.store([rec("S1"), rec("S2", 2.0)])
        # a WAL file whose log still holds records: a writer that never closed (no -shm file left)
        shutil.copyfile(d / "wal.sqlite", d / "wal-with-log.sqlite")
        con = sqlite3.connect(d / "wal-with-log.sqlite")
        con.execute("PRAGMA wal_autocheckpoint=0")
        con.execute("DELETE FROM find_records")
        con.commit()
        shutil.copyfile(d / "wal-with-log.sqlite-wal", d / "log.tmp")
        con.close()
        os.replace(d / "log.tmp", d / "wal-with-log.sqlite-wal")
        for p in d.iterdir():
            p.chmod(0o644)
        before = {p.name: p.read_bytes() for p in d.iterdir()}
        d.chmod(0o555)
        r = _run_unprivileged(_RO_CHILD, str(d))
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout.strip().splitlines()[-1])
        assert out["readonly"] is True and out["records"] == ["S1", "S2"]
        assert out["store"] == f"FindDB {d}/wal.sqlite is read-only (its directory {d} is not writable)"
        assert out["sub/new.sqlite"] == (f"FindDB {d}/sub/new.sqlite cannot be created: cannot make the directory "
                                         f"{d}/sub (Permission denied)")
        assert out["wal-with-log.sqlite"].startswith(f"FindDB {d}/wal-with-log.sqlite cannot be read from the "
                                                     f"read-only directory {d}: its write-ahead log")
        for cmd in ("db stats --json", "db show", "db verify"):
            code, stdout, stderr, exc = out[cmd]
            # db verify exits 1 on the problems it reports (these records carry a made-up trust key)
            assert code == (1 if cmd == "db verify" else 0), (cmd, stdout, stderr, exc)
            assert "corrupt" not in stderr + stdout and "Traceback" not in stderr
        assert "checked 2 find records" in out["db verify"][1]
        assert '"S2": 1' in out["db stats --json"][1]
        for cmd, want in (("db prune new.sqlite", "cannot make the directory"),
                          ("db stats wal-with-log.sqlite", "write-ahead log")):
            code, stderr, exc = out[cmd]
            assert code == 1 and stderr.startswith("miofind: FindDB ") and want in stderr, (cmd, stderr, exc)
            assert stderr.count("\n") == 1, stderr
        d.chmod(0o755)
        assert {p.name: p.read_bytes() for p in d.iterdir()} == before  # nothing written, moved or added
    finally:
        d.chmod(0o755)
        shutil.rmtree(d)


# -- db verify and prune finish on keys with sizes of 10^16 --------------------------------------------

def test_verify_and_prune_of_huge_fft_keys_finish(tmp_path):
    """One imported MIOpen line with a 10^16 padding hung `db verify` and `db prune` in smooth_size."""
    from click.testing import CliRunner

    from miofind.cli import main
    from records import rec

    key = "3-32-32-3x3-32-20000000000000030-20000000000000030-100-10000000000000000x10000000000000000-1x1-1x1-0-NCHW-FP32-F"
    db = tmp_path / "huge.sqlite"
    with FindDB(str(db)) as h:
        h.store([rec("ConvFFTFwd", key=key, config={"FT": 16, "TN": 1, "TI": 1, "GN": 4, "GI": 4, "JC": 4}),
                 rec("ConvDirectNaiveConvFwd", key=key)])
    for cmd in (["db", "verify"], ["db", "prune", "--dry-run"]):
        t = time.perf_counter()
        r = CliRunner().invoke(main, [*cmd, "--db", str(db)])
        assert time.perf_counter() - t < 10, cmd
        assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
        assert ("FFT grid of at least" if cmd[1] == "verify" else "find: not applicable") in r.output, r.output
