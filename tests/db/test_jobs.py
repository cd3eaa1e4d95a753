"""The tuning job queue on SQLite and PostgreSQL: enqueue, claim with leases, expiry, failure, workers."""

from __future__ import annotations

import threading
import time

import pytest

from miofind.db import FindDB
from miofind.db.jobs import JobQueue
from miofind.tuning.run import worker_loop
from miofind.tuning.tuner import ProblemOutcome


def test_enqueue_is_idempotent_and_claims_in_order(anydb):
    q = JobQueue(anydb)
    assert q.enqueue(["k1", "k2", "k3"], {"strategy": "guided"}) == 3
    assert q.enqueue(["k1", "k2", "k4"], {"strategy": "guided"}) == 1
    assert q.enqueue(["k1"], {"strategy": "random"}) == 1  # other options: another job
    j = q.claim("w1", "dev", lease_s=60)
    assert (j.problem_key, j.status, j.worker, j.attempts, j.options) == ("k1", "running", "w1", 1, {"strategy": "guided"})
    assert q.claim("w2", "dev").problem_key == "k2"
    assert q.complete(j) and q.counts() == {"queued": 3, "running": 1, "done": 1, "failed": 0}


def test_expired_lease_is_reclaimed_and_old_holder_loses_it(anydb):
    q = JobQueue(anydb)
    q.enqueue(["k1"])
    # a lease long enough that a loaded CI host's PostgreSQL round trip cannot outlast it (50 ms did)
    j1 = q.claim("dead", "dev", lease_s=2.0)
    assert q.claim("w2", "dev", lease_s=60) is None  # still leased
    time.sleep(2.2)
    j2 = q.claim("w2", "dev", lease_s=60)
    assert j2 is not None and j2.id == j1.id and j2.attempts == 2 and j2.worker == "w2"
    assert not q.renew(j1) and not q.complete(j1)  # the dead worker's late answer is refused
    assert q.renew(j2) and q.complete(j2)


def test_leases_follow_the_database_clock_on_postgresql(anydb, monkeypatch):
    # a host whose clock runs an hour fast must not take over a job leased a moment ago elsewhere
    q = JobQueue(anydb)
    q.enqueue(["k1"])
    j1 = q.claim("w1", "dev", lease_s=60)
    monkeypatch.setattr(time, "time", lambda real=time.time: real() + 3600)
    stolen = q.claim("fast-clock", "dev", lease_s=60)
    if anydb.url.startswith("postgresql"):
        assert stolen is None and q.renew(j1) and q.complete(j1)
    else:  # one host's processes share one clock; a skew on SQLite is the host's own
        assert stolen is not None and stolen.worker == "fast-clock"


def test_failures_requeue_then_fail(anydb):
    q = JobQueue(anydb, max_attempts=2)
    q.enqueue(["k1"])
    j = q.claim("w", "dev")
    assert q.fail(j, "boom 1") and q.counts()["queued"] == 1
    j = q.claim("w", "dev")
    assert q.fail(j, "boom 2") and q.counts()["failed"] == 1
    assert q.jobs("failed")[0].error == "boom 2"
    assert q.claim("w", "dev") is None
    assert q.enqueue(["k1"]) == 1 and q.counts()["queued"] == 1  # re-queued by a new enqueue


def test_concurrent_claimers_never_share_a_job(any_url):
    with FindDB(any_url) as d:
        JobQueue(d).enqueue([f"k{i}" for i in range(40)])
    got, errors = [], []

    def claimer(i):
        try:
            with FindDB(any_url) as d:
                q = JobQueue(d)
                while (j := q.claim(f"w{i}", "dev")) is not None:
                    got.append(j.problem_key)
                    q.complete(j)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=claimer, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and sorted(got) == sorted(f"k{i}" for i in range(40))


class _FakeTuner:
    def __init__(self, fail_keys=()):
        self.fail_keys = set(fail_keys)
        self.seen = []

    def __call__(self, opts):
        self.opts = opts
        return self

    def tune_problem(self, p):
        self.seen.append(p.key())
        if p.key() in self.fail_keys:
            return ProblemOutcome(p.key(), "failed", error="no solution")
        return ProblemOutcome(p.key(), "done")


def test_worker_loop_runs_jobs_until_idle(any_url):
    from miofind.problem import ProblemDescription

    keys = [ProblemDescription.make("F", n=n, c=8, k=8, in_size=(8, 8)).key() for n in (1, 2, 3)]
    with FindDB(any_url) as d:
        JobQueue(d).enqueue(keys, {"strategy": "random", "max_configs": 4, "bogus": 1})
    fake = _FakeTuner(fail_keys=[keys[1]])
    n = worker_loop(any_url, name="w", idle_exit=0.0, poll_s=0.01, tuner_factory=fake, event=lambda m: None)
    assert n == 2 and fake.opts.strategy == "random" and fake.opts.max_configs == 4
    # queued before solvers had budgets of their own: the budget it was queued with, for every solver
    assert fake.opts.solver_budgets is False
    with FindDB(any_url) as d:
        c = JobQueue(d).counts()
    # the failing job went back to the queue twice, then failed for good after its third attempt
    assert c["done"] == 2 and c["failed"] == 1 and fake.seen.count(keys[1]) == 3


def test_a_job_queued_without_a_budget_lets_solvers_widen_it(any_url):
    from miofind.problem import ProblemDescription
    from miofind.tuning import TuneOptions

    with FindDB(any_url) as d:
        JobQueue(d).enqueue([ProblemDescription.make("F", n=1, c=8, k=8, in_size=(8, 8)).key()],
                            TuneOptions(max_configs=16, patience=8).as_json())
    fake = _FakeTuner()
    assert worker_loop(any_url, name="w", idle_exit=0.0, poll_s=0.01, tuner_factory=fake, event=lambda m: None) == 1
    assert fake.opts.solver_budgets is True and fake.opts.max_configs == 16


def test_bad_job_options_fail_the_job_not_the_worker(any_url):
    from miofind.problem import ProblemDescription

    with FindDB(any_url) as d:
        JobQueue(d).enqueue([ProblemDescription.make("F", n=1, c=8, k=8, in_size=(8, 8)).key()], {"strategy": "nope"})
        JobQueue(d).enqueue(["garbage"], {"strategy": "random"})
    n = worker_loop(any_url, name="w", idle_exit=0.0, poll_s=0.01, tuner_factory=_FakeTuner(), event=lambda m: None)
    assert n == 0
    with FindDB(any_url) as d:
        q = JobQueue(d)
        jobs = q.jobs()
    assert [j.status for j in jobs] == ["failed", "failed"]  # after three attempts each
    assert "strategy" in jobs[0].error and "garbage" in jobs[1].error


@pytest.mark.parametrize("status", ["bogus"])
def test_jobs_status_filter_is_validated(anydb, status):
    with pytest.raises(ValueError, match="status"):
        JobQueue(anydb).jobs(status)


# -- a worker that stalls past its lease ---------------------------------------------------------------

def _one_job(url) -> str:
    from miofind.problem import ProblemDescription

    key = ProblemDescription.make("F", n=1, c=8, k=8, in_size=(8, 8)).key()
    with FindDB(url) as d:
        JobQueue(d).enqueue([key], {"strategy": "random"})
    return key


@pytest.fixture
def clock(monkeypatch):
    """The queue's clock (the database's on PostgreSQL), moved by hand."""
    from miofind.db import jobs

    now = [1_000_000.0]
    monkeypatch.setattr(jobs, "_now", lambda con: now[0])
    return now


_STALL = threading.Lock()     # held by _StallingTuner from its clock jump to the thief's claim


def _renewing_after_the_steal(monkeypatch):
    """JobQueue.renew waits while a _StallingTuner jumps the clock and steals: a renewal between the two (the lease
    expired by the clock, not yet claimed) would keep the job, a race that a loaded machine's timing can win."""
    renew = JobQueue.renew

    def after(self, *a, **k):
        with _STALL:
            return renew(self, *a, **k)
    monkeypatch.setattr(JobQueue, "renew", after)


class _StallingTuner(_FakeTuner):
    """Stalls (SIGSTOP, say) for ``stall`` seconds of the queue's clock mid-tune; ``thief`` then
    claims the job if it is free, and ``wait`` real seconds pass before the tune returns."""

    def __init__(self, url, clock, stall, thief=True, wait=0.0, fail=False):
        super().__init__(fail_keys=["*"] if fail else ())
        self.url, self.clock, self.stall, self.thief, self.wait, self.fail = url, clock, stall, thief, wait, fail
        self.stolen = None

    def tune_problem(self, p):
        with _STALL:     # a renewal (``_renewing_after_the_steal``) waits for the steal
            self.clock[0] += self.stall
            if self.thief:
                with FindDB(self.url) as d:
                    self.stolen = JobQueue(d).claim("thief", "dev", lease_s=600)
        time.sleep(self.wait)
        if self.fail:
            return ProblemOutcome(p.key(), "failed", error="no solution")
        return super().tune_problem(p)


@pytest.mark.parametrize("fail", [False, True])
def test_a_stalled_worker_does_not_count_a_job_it_lost(any_url, clock, fail):
    key = _one_job(any_url)
    events = []
    tuner = _StallingTuner(any_url, clock, stall=700, fail=fail)
    n = worker_loop(any_url, name="w", lease_s=600, idle_exit=0.0, poll_s=0.01, tuner_factory=tuner, event=events.append)
    assert tuner.stolen is not None and tuner.stolen.attempts == 2  # the lease ran out and was taken over
    assert n == 0
    lost = [e for e in events if "lost the lease" in e]
    assert len(lost) == 1 and f"job {tuner.stolen.id} ({key})" in lost[0] and "stalled" in lost[0]
    with FindDB(any_url) as d:
        q = JobQueue(d)
        (job,) = q.jobs()
        # the late complete()/fail() changed nothing: the new holder still runs it and can finish it
        assert (job.status, job.worker, job.attempts, job.error) == ("running", "thief", 2, "")
        assert q.complete(tuner.stolen) and q.counts()["done"] == 1


def test_the_renewing_thread_reports_a_lease_lost_while_working(any_url, clock, monkeypatch):
    _one_job(any_url)
    _renewing_after_the_steal(monkeypatch)
    events = []
    # the lease (0.3 s) is renewed every 0.1 s of real time; the job is taken over mid-tune
    tuner = _StallingTuner(any_url, clock, stall=700, wait=0.5)
    n = worker_loop(any_url, name="w", lease_s=0.3, idle_exit=0.0, poll_s=0.01, tuner_factory=tuner, event=events.append)
    assert tuner.stolen is not None and n == 0
    lost = [e for e in events if "lost the lease" in e]
    assert len(lost) == 1 and "busy" in lost[0]


def test_a_late_worker_whose_job_was_not_taken_still_completes_it(any_url, clock):
    _one_job(any_url)
    tuner = _StallingTuner(any_url, clock, stall=700, thief=False)
    events = []
    n = worker_loop(any_url, name="w", lease_s=600, idle_exit=0.0, poll_s=0.01, tuner_factory=tuner, event=events.append)
    assert n == 1 and not [e for e in events if "lost the lease" in e]
    with FindDB(any_url) as d:
        assert JobQueue(d).counts()["done"] == 1


def test_the_lease_is_renewed_while_a_job_runs(any_url):
    _one_job(any_url)
    seen = []

    class Slow(_FakeTuner):
        def tune_problem(self, p):
            time.sleep(2.0)  # past the 1.2 s lease: only the renewals keep it
            with FindDB(any_url) as d:
                seen.append(JobQueue(d).claim("thief", "dev"))
            return super().tune_problem(p)

    n = worker_loop(any_url, name="w", lease_s=1.2, idle_exit=0.0, poll_s=0.01, tuner_factory=Slow(), event=lambda m: None)
    assert seen == [None] and n == 1
