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
