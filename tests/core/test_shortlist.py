"""A shortlisted find (``shortlist=``, MIOFIND_FIND_SHORTLIST; miofind.torch's default) on the CPU:
a miss whose problem the FindDBs know at another batch size times only that batch neighbour's
fastest solvers, at the neighbour's configs, and records the others as not measured; a later
shortlisted find answers from the DB, a find without a shortlist measures the rest. The device,
the compilation and the measurements are faked as in test_cheap_find.py."""

from __future__ import annotations

import dataclasses

import pytest

import miofind.api as api
import miofind.find as find
from miofind.db import FindDB

from test_cheap_find import fake  # noqa: F401  (the fixture)
from test_find_modes import DEV, P, records

P48 = dataclasses.replace(P, n=48)


def _neighbour(url, p=P, order=None, device=DEV.db_name):
    """Store records of ``p`` whose times rank the candidates in ``order`` (ids, fastest first)."""
    recs = records(p, device=device)
    order = order or [r.solver_id for r in recs]
    FindDB(url).store([dataclasses.replace(r, time_ms=1.0 + order.index(r.solver_id)) for r in recs
                       if r.solver_id in order])
    return order


def test_a_miss_times_only_the_batch_neighbours_fastest(fake):
    times, order, _, url = fake
    cands = [s.id for s in find.candidates(P48)[0]]
    assert len(cands) > 4
    want = list(reversed(cands))
    _neighbour(url, order=want)
    r = api.find_solutions(P48, mode="normal", shortlist=3)
    assert r.source == "find" and sorted(order) == sorted(want[:3])
    left = {f.solver_id: f for f in r.failures if f.stage == "shortlist"}
    assert set(left) == set(cands) - set(want[:3])
    assert all(P.key() in f.reason for f in left.values())
    # recorded: the measured ones as records, the others as not measured
    db = FindDB(url)
    assert {x.solver_id for x in db.lookup(DEV.db_name, P48.key())} == set(want[:3])
    assert {f.solver_id for f in db.find_failures(DEV.db_name, P48.key()) if f.stage == "shortlist"} == set(left)
    # a second shortlisted find (another process: the memo cleared) answers from the DB
    api.clear_caches()
    order.clear()
    r2 = api.find_solutions(P48, mode="normal", shortlist=3)
    assert r2.source == "db" and order == []
    # a find without a shortlist measures the rest, and keeps the records it did not re-measure
    api.clear_caches()
    r3 = api.find_solutions(P48, mode="normal")
    assert r3.source == "find" and set(order) == set(cands)
    assert not [f for f in r3.failures if f.stage == "shortlist"]


def test_no_neighbour_or_no_shortlist_times_every_candidate(fake, monkeypatch):
    times, order, _, url = fake
    cands = {s.id for s in find.candidates(P48)[0]}
    api.find_solutions(P48, mode="normal", shortlist=3, store=False)      # no neighbour in the DBs
    assert set(order) == cands
    _neighbour(url)
    order.clear()
    api.find_solutions(P48, mode="normal", store=False)                   # shortlist off (the default)
    assert set(order) == cands
    order.clear()
    monkeypatch.setenv("MIOFIND_FIND_SHORTLIST", "2")
    api.find_solutions(P48, mode="normal", store=False)
    assert len(order) == 2
    order.clear()
    api.find_solutions(P48, mode="normal", store=False, solvers=sorted(cands))   # named solvers: all of them
    assert set(order) == cands
    order.clear()
    api.find_solutions(P48, mode="benchmark", store=False, shortlist=2)    # benchmark mode measures all
    assert set(order) == cands


def test_the_nearest_batch_wins_and_the_system_db_counts(fake, tmp_path, monkeypatch):
    times, order, _, url = fake
    cands = [s.id for s in find.candidates(P48)[0]]
    far, near = dataclasses.replace(P, n=1), dataclasses.replace(P, n=64)
    _neighbour(url, far, order=cands)
    sysdb = tmp_path / "sm_90-132.sqlite"
    with FindDB(str(sysdb)) as d:                                          # the system layer: any device
        d.store([dataclasses.replace(r, device="sm_90-132-OTHER", time_ms=1.0 + list(reversed(cands)).index(r.solver_id))
                 for r in records(near)])
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(sysdb))
    nb = find.batch_neighbour(P48, find.open_dbs(None, DEV), DEV)
    assert nb[0] == near.key()
    api.find_solutions(P48, mode="normal", shortlist=2, store=False)
    assert sorted(order) == sorted(list(reversed(cands))[:2])


def test_the_neighbours_config_is_timed_first(fake):
    times, order, _, url = fake
    tunable = next(s for s in find.candidates(P48)[0] if s.tunable)
    space = list(tunable.config_space(P48.as_conv()))
    cfg = next(c for c in space if c != tunable.default_config(P48.as_conv()))
    recs = [dataclasses.replace(r, time_ms=0.5, config=cfg) for r in records(P) if r.solver_id == tunable.id]
    FindDB(url).store(recs)
    seen = []
    real = find.benchmark

    def spy(problem, cands, *a, configs=None, **k):
        seen.extend((s.id, c) for s in cands for c in configs(s))
        return real(problem, cands, *a, configs=configs, **k)

    import unittest.mock as um
    usual = list(tunable.find_configs(P48))
    with um.patch.object(find, "benchmark", spy), um.patch.object(find, "needs_no_compilation", lambda *a: True):
        api.find_solutions(P48, mode="normal", shortlist=1, store=False)
    assert seen == [(tunable.id, cfg)] + [(tunable.id, c) for c in usual if c != cfg]
    seen.clear()
    # a neighbour's config that would need a new compilation is not timed: only the usual configs
    with um.patch.object(find, "benchmark", spy), um.patch.object(find, "needs_no_compilation", lambda *a: False):
        api.find_solutions(P48, mode="normal", shortlist=1, store=False)
    assert seen == [(tunable.id, c) for c in usual]


def test_bad_shortlist_values_name_the_argument(fake, monkeypatch):
    with pytest.raises(ValueError, match=r"^shortlist=-1: expected a whole number"):
        api.find_solutions(P48, shortlist=-1)
    monkeypatch.setenv("MIOFIND_FIND_SHORTLIST", "some")
    with pytest.raises(ValueError, match=r"^MIOFIND_FIND_SHORTLIST='some': expected a whole number"):
        api.find_solutions(P48)
