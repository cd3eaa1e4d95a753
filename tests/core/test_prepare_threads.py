"""find.prepare_all's kept preparation threads (CPU: _prepare and the reference replaced)."""
import threading

from miofind import find


def _fake(monkeypatch, seen):
    def prepare(problem, solver, config=None, memo=None, first_runs=True):
        seen.append(threading.current_thread())
        return ("sol", config), ("inv", config), 0.0

    monkeypatch.setattr(find, "_prepare", prepare)
    monkeypatch.setattr(find, "_timed_reference", lambda problem: (("ref", problem), 0.0))
    monkeypatch.setattr(find, "_caller_device", lambda: None)


def test_prepare_all_keeps_the_order_and_the_reference(monkeypatch):
    seen = []
    _fake(monkeypatch, seen)
    times = {}
    out, ref = find.prepare_all("P", [(None, c) for c in range(20)], times=times)
    assert [sol for sol, _ in out] == [("sol", c) for c in range(20)]
    assert [inv for _, inv in out] == [("inv", c) for c in range(20)]
    assert ref == ("ref", "P") and times["candidates"] == [0.0] * 20 and times["reference_compile_ms"] == 0.0
    assert all(t is not threading.current_thread() for t in seen)


def test_later_finds_prepare_on_the_same_threads(monkeypatch):
    seen = []       # the Thread objects themselves (kept, so none is collected and its id reused)
    _fake(monkeypatch, seen)
    for _ in range(12):
        find.prepare_all("P", [(None, c) for c in range(3)], verify=False)
    # fresh threads per call (each made its own cuBLAS handle and copy stream) would be 12 or more, all ended
    assert len({id(t) for t in seen}) <= find.PREPARE_THREADS
    assert all(t.name.startswith("miofind-prepare") and t.is_alive() for t in seen)


def test_a_failing_reference_is_raised(monkeypatch):
    seen = []
    _fake(monkeypatch, seen)

    def boom(problem):
        raise RuntimeError("reference broke")

    monkeypatch.setattr(find, "_timed_reference", boom)
    try:
        find.prepare_all("P", [(None, 0)])
    except RuntimeError as e:
        assert "reference broke" in str(e)
    else:
        raise AssertionError("prepare_all swallowed the reference's error")
