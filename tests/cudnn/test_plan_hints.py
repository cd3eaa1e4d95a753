"""Plan hints (miofind.plan_hints) and a find's hinted cuDNN configs, on the CPU: keys split as the parser reads
them, the nearest recorded plans first, the same hints through SQLAlchemy and through sqlite3, the user layer's
device filter, and the find's fallback to the solver's own listing."""

from __future__ import annotations

import math
import sqlite3

import pytest

import miofind.find as find
from miofind import plan_hints
from miofind.db import FindDB
from miofind.db import fastread
from miofind.db.system import Overlay, system_db_files
from miofind.device import DeviceInfo
from miofind.problem import ProblemDescription

from db.records import rec

DEV = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "580.1", "13.0", "14.2.0")
SHIPPED = system_db_files()[("sm_90", 132)]


@pytest.fixture(autouse=True)
def _fresh():
    plan_hints.clear()
    yield
    plan_hints.clear()


def problem(c=64, k=64, hw=56, n=32, f=3, pad=1, stride=1, direction="F", layout="NCHW", dtype="FP32"):
    return ProblemDescription.make(direction, n=n, c=c, k=k, in_size=(hw, hw), filter_size=f, pads=pad,
                                   strides=stride, layout=layout, dtype=dtype)


@pytest.mark.parametrize("p", [
    problem(), problem(c=3, k=64, hw=224, f=7, pad=3, stride=2, direction="B"),
    problem(c=256, k=64, f=1, pad=0, direction="W", layout="NHWC", dtype="FP16"),
    ProblemDescription.make("F", n=2, c=8, k=16, in_size=(100,), filter_size=3),
    ProblemDescription.make("W", n=2, c=8, k=16, in_size=(8, 16, 16), filter_size=3, pads=1, dtype="FP16"),
    ProblemDescription.make("F", n=4, c=32, k=32, in_size=(28, 28), filter_size=3, pads=1, groups=32),
])
def test_split_key_reads_the_sizes_the_parser_reads(p):
    kind, sizes = plan_hints.split_key(p.key())
    q = ProblemDescription.from_key(p.key())
    assert sorted(sizes) == sorted(math.log2(v) for v in (q.n, q.c, q.k, *q.out_size)) or \
        sorted(sizes) == sorted(math.log2(v) for v in (q.n, q.c, q.k, *q.in_size))
    assert kind.startswith(f"{len(q.in_size)}|") and kind.endswith(p.key().rsplit("-", 1)[1])
    # what a kind holds: everything but the batch, channels and sizes
    assert plan_hints.split_key(problem(c=128, k=32, hw=28, n=8).key())[0] == plan_hints.split_key(problem().key())[0]
    for other in (problem(f=1, pad=0), problem(stride=2), problem(layout="NHWC"), problem(dtype="FP16"),
                  problem(direction="B")):
        assert plan_hints.split_key(other.key())[0] != plan_hints.split_key(problem().key())[0]


@pytest.mark.parametrize("key", ["", "a-b-c", "64-56-56-3x3-x-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F",
                                 "0-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"])
def test_split_key_refuses_what_is_not_a_key(key):
    assert plan_hints.split_key(key) is None


def _store(db, recs):
    db.store(recs)
    return db


def _records(device="sm_90-132"):
    """ConvCudnnFwd records of 3x3 problems at growing distance from problem(), one plan each, and records that
    must never be hinted: another kind, another solver, a config with no plan."""
    near = [(problem(c=64, k=128), "eng1_k2=1"), (problem(c=64, k=64, hw=28), "eng2"),
            (problem(c=512, k=512, hw=7, n=1), "eng3_k14=4"), (problem(c=64, k=64, hw=56, n=16), "eng1_k2=1")]
    out = [rec("ConvCudnnFwd", 1.0, p.key(), device, config={"plan": name}) for p, name in near]
    out += [rec("ConvCudnnFwd", 1.0, problem(f=1, pad=0).key(), device, config={"plan": "eng9"}),
            rec("ConvCudnnBwd", 1.0, problem(direction="B").key(), device, config={"plan": "eng8"}),
            rec("ConvCudnnFwd", 1.0, problem(c=32).key(), device, config=None)]
    return out


def test_nearest_plans_first_without_repeats(tmp_path):
    db = _store(FindDB(f"sqlite:///{tmp_path / 'u.sqlite'}"), _records())
    dbs = Overlay(user=db)
    got = plan_hints.plan_hints(dbs, "sm_90-132", problem(), "ConvCudnnFwd", 5)
    # n=16 (distance 1) and k=128 (1) both name eng1; hw=28 (2) eng2; the 7x7 n=1 problem last
    assert got == ["eng1_k2=1", "eng2", "eng3_k14=4"]
    assert plan_hints.plan_hints(dbs, "sm_90-132", problem(), "ConvCudnnFwd", 2) == ["eng1_k2=1", "eng2"]
    assert plan_hints.plan_hints(dbs, "sm_90-132", problem(direction="B"), "ConvCudnnBwd", 3) == ["eng8"]
    assert plan_hints.plan_hints(dbs, "sm_90-132", problem(stride=2), "ConvCudnnFwd", 3) == []
    # the user layer's records of another device are not read
    assert plan_hints.plan_hints(dbs, "sm_80-108", problem(), "ConvCudnnFwd", 3) == []
    db.close()


def test_sqlite3_reader_gives_the_sqlalchemy_hints(tmp_path):
    path = tmp_path / "u.sqlite"
    _store(FindDB(f"sqlite:///{path}"), _records() + _records("sm_80-108")).close()
    slow = FindDB(f"sqlite:///{path}")
    reader = fastread._reader(path, writable=False)
    assert isinstance(reader, fastread.Reader)
    for device in ("sm_90-132", "sm_80-108", None):
        assert reader.solver_configs(device, "ConvCudnnFwd") == slow.solver_configs(device, "ConvCudnnFwd")
    a = plan_hints.plan_hints(Overlay(user=slow), "sm_90-132", problem(), "ConvCudnnFwd", 4)
    plan_hints.clear()
    b = plan_hints.plan_hints(Overlay(user=reader), "sm_90-132", problem(), "ConvCudnnFwd", 4)
    assert a == b == ["eng1_k2=1", "eng2", "eng3_k14=4"]
    slow.close()


def test_shipped_db_hints_name_recorded_plans():
    reader = fastread._reader(SHIPPED, writable=False, immutable=True)
    p = problem(c=80, k=96, hw=35, n=16)   # not a shipped problem
    got = plan_hints.plan_hints(Overlay(user=None, system=reader), DEV.db_name, p, "ConvCudnnFwd", 4)
    assert 1 <= len(got) <= 4 and len(set(got)) == len(got)
    con = sqlite3.connect(f"file:{SHIPPED}?mode=ro&immutable=1", uri=True)
    recorded = {r[0] for r in con.execute("SELECT config FROM find_records WHERE solver_id = 'ConvCudnnFwd'")}
    assert all(f'{{"plan": "{name}"}}' in recorded for name in got)


def test_an_unreadable_db_gives_no_hints():
    class Broken:
        path = "broken"

        def solver_configs(self, device, solver_id):
            raise RuntimeError("no")

    assert plan_hints.plan_hints(Overlay(user=Broken()), "sm_90-132", problem(), "ConvCudnnFwd", 2) == []


class _Hinted:
    """A solver that takes hints: replays the names it knows, in order."""
    id = "ConvCudnnFwd"
    tunable = True
    configs_now = 2

    def __init__(self, known):
        self.known, self.asked = known, []

    def hinted_configs(self, problem, names, limit):
        self.asked.append(list(names))
        got = [{"plan": n} for n in names if n in self.known][:limit]
        return got if len(got) == limit else []


def test_find_takes_hinted_configs_where_enough_replay(tmp_path, monkeypatch):
    db = _store(FindDB(f"sqlite:///{tmp_path / 'u.sqlite'}"), _records(DEV.db_name))
    dbs = Overlay(user=db)
    monkeypatch.setattr(find, "tuned_config", lambda *a, **k: None)
    timing = {}
    s = _Hinted({"eng1_k2=1", "eng3_k14=4"})
    assert find.hinted_configs(dbs, DEV, problem(), s, 2, timing) == [{"plan": "eng1_k2=1"}, {"plan": "eng3_k14=4"}]
    assert s.asked == [["eng1_k2=1", "eng2", "eng3_k14=4"]] and timing == {"hinted": 1}
    # too few replay: the solver's own listing follows
    assert find.hinted_configs(dbs, DEV, problem(), _Hinted({"eng2"}), 2, timing) == []
    monkeypatch.setenv("MIOFIND_CUDNN_HINTS", "0")
    assert find.hinted_configs(dbs, DEV, problem(), _Hinted({"eng1_k2=1", "eng2"}), 2) == []
    monkeypatch.setenv("MIOFIND_CUDNN_HINTS", "2")
    with pytest.raises(ValueError, match="MIOFIND_CUDNN_HINTS='2'"):
        find.hinted_configs(dbs, DEV, problem(), _Hinted({"eng1_k2=1", "eng2"}), 2)
    monkeypatch.delenv("MIOFIND_CUDNN_HINTS")
    # a tuned PerfDB config wins over hints
    monkeypatch.setattr(find, "tuned_config", lambda *a, **k: {"plan": "eng5"})
    assert find.hinted_configs(dbs, DEV, problem(), _Hinted({"eng1_k2=1", "eng2"}), 2) == []
    db.close()


def test_solvers_without_hints_are_left_alone(tmp_path):
    from miofind.registry import get_solver

    dbs = Overlay(user=None)
    assert find.hinted_configs(dbs, DEV, problem(), get_solver("ConvImplicitGemmFwd"), 2) == []
    assert hasattr(get_solver("ConvCudnnFwd"), "hinted_configs")
