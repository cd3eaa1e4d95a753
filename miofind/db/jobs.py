"""The fleet's tuning job queue: a table in the FindDB itself, so any number of hosts can share one
PostgreSQL database with no protocol of our own.

``miofind tune --enqueue`` adds one job per problem; ``miofind worker`` claims jobs with
``SELECT ... FOR UPDATE SKIP LOCKED`` (on SQLite, ``BEGIN IMMEDIATE`` serialises claims instead), holds
each under a lease it renews while working, and marks it done. A worker that dies stops renewing;
once its lease expires another worker reclaims the job. A job that fails ``max_attempts`` times is
marked failed with its last error.

Lease times come from the database's clock on PostgreSQL, so hosts whose clocks disagree cannot
steal each other's leases or keep expired ones; a SQLite file is shared by one host's processes,
which read the host clock.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

import sqlalchemy as sa

from .findb import FindDB, FindDBError, jobs_table

__all__ = ["Job", "JobQueue", "STATUSES"]

_log = logging.getLogger(__name__)

STATUSES = ("queued", "running", "done", "failed")


@dataclass(frozen=True)
class Job:
    id: int
    problem_key: str
    options: dict
    status: str
    worker: str
    device: str
    lease_until: float
    attempts: int
    error: str


def _now(con: sa.Connection) -> float:
    """Seconds since the epoch by the database's clock (the host's for SQLite)."""
    if con.dialect.name == "postgresql":
        return float(con.execute(sa.text("SELECT EXTRACT(EPOCH FROM clock_timestamp())")).scalar_one())
    return time.time()


def _job(row) -> Job:
    try:
        opts = json.loads(row.options)
    except (TypeError, ValueError):
        opts = None
    if not isinstance(opts, dict):
        raise FindDBError(f"tune job {row.id}: options {row.options!r} are not a JSON object")
    return Job(row.id, row.problem_key, opts, row.status, row.worker, row.device, row.lease_until, row.attempts,
               row.error)


class JobQueue:
    """Jobs in one FindDB. ``options`` (a JSON object: strategy, budgets) travel with each job."""

    def __init__(self, db: FindDB, *, max_attempts: int = 3) -> None:
        if db.readonly:
            raise FindDBError(f"{db!r}: the job queue needs a writable database")
        self.db = db
        self.max_attempts = max_attempts

    def enqueue(self, problem_keys, options: dict | None = None) -> int:
        """Queue one job per key (a key already queued with the same options is left alone, a failed
        one is queued again); returns how many were added or re-queued."""
        opts = json.dumps(options or {}, sort_keys=True, separators=(",", ":"))
        keys = list(dict.fromkeys(problem_keys))

        def run(con: sa.Connection) -> int:
            t, now = jobs_table.c, _now(con)
            have = {k: s for k, s in con.execute(sa.select(t.problem_key, t.status).where(t.options == opts))}
            new = [dict(problem_key=k, options=opts, status="queued", worker="", device="", lease_until=0.0,
                        attempts=0, error="", created_at=now, updated_at=now) for k in keys if k not in have]
            if new:
                con.execute(sa.insert(jobs_table), new)
            again = [k for k in keys if have.get(k) == "failed"]
            if again:
                con.execute(sa.update(jobs_table).where(t.options == opts, t.problem_key.in_(again))
                            .values(status="queued", attempts=0, error="", updated_at=now))
            return len(new) + len(again)

        return self.db._run("queue tuning jobs", run, write=True)

    def claim(self, worker: str, device: str, lease_s: float = 600.0) -> Job | None:
        """Take the oldest queued job, or a running one whose lease expired; None when none is left."""
        def run(con: sa.Connection) -> Job | None:
            t, now = jobs_table.c, _now(con)
            con.execute(sa.update(jobs_table)
                        .where(t.status == "running", t.lease_until < now, t.attempts >= self.max_attempts)
                        .values(status="failed", updated_at=now,
                                error=sa.func.coalesce(t.error, "") + f" [lease expired after {self.max_attempts} attempts]"))
            q = (sa.select(jobs_table).where(sa.or_(t.status == "queued", sa.and_(t.status == "running", t.lease_until < now)))
                 .order_by(t.id).limit(1).with_for_update(skip_locked=True))
            row = con.execute(q).first()
            if row is None:
                return None
            con.execute(sa.update(jobs_table).where(t.id == row.id)
                        .values(status="running", worker=worker, device=device, lease_until=now + lease_s,
                                attempts=row.attempts + 1, updated_at=now))
            return _job(con.execute(sa.select(jobs_table).where(t.id == row.id)).one())

        return self.db._run("claim a tuning job", run, write=True)

    def _finish(self, job: Job, what: str, lease_s: float | None = None, **values) -> bool:
        # Changes the job only while this claim of it still holds: same worker, same attempt, running.
        # A claim whose lease expired and was taken over (attempts went up) or failed for good no
        # longer matches, whatever the old holder's clock says.
        def run(con: sa.Connection) -> bool:
            t, now = jobs_table.c, _now(con)
            if lease_s is not None:
                values["lease_until"] = now + lease_s
            res = con.execute(sa.update(jobs_table).where(t.id == job.id, t.status == "running", t.worker == job.worker,
                                                     t.attempts == job.attempts)
                              .values(updated_at=now, **values))
            return res.rowcount == 1

        held = self.db._run(what, run, write=True)
        if not held:
            _log.info("%s: job %s (attempt %s of %s) is no longer held by it", what, job.id, job.attempts, job.worker)
        return held

    def renew(self, job: Job, lease_s: float = 600.0) -> bool:
        """Extend the lease; False if the job was taken over (the lease had expired) or finished."""
        return self._finish(job, "renew a job lease", lease_s=lease_s)

    def complete(self, job: Job) -> bool:
        """Mark the job done. True only if this claim still held it; False if its lease was lost
        (another worker claimed it after the lease expired, or it was failed for good): the caller
        must then not count the job as its own."""
        return self._finish(job, "complete a tuning job", status="done", lease_until=0.0)

    def fail(self, job: Job, error: str) -> bool:
        """Give the job back (queued again) or, after ``max_attempts``, mark it failed; False (and
        nothing changed) if this claim no longer holds the job."""
        status = "failed" if job.attempts >= self.max_attempts else "queued"
        return self._finish(job, "fail a tuning job", status=status, error=error[:4000], lease_until=0.0)

    def jobs(self, status: str | None = None) -> list[Job]:
        q = sa.select(jobs_table).order_by(jobs_table.c.id)
        if status is not None:
            if status not in STATUSES:
                raise ValueError(f"status={status!r}: expected one of {', '.join(STATUSES)}")
            q = q.where(jobs_table.c.status == status)
        return [_job(r) for r in self.db._run("list tuning jobs", lambda con: con.execute(q).all())]

    def counts(self) -> dict[str, int]:
        q = sa.select(jobs_table.c.status, sa.func.count()).group_by(jobs_table.c.status)
        got = dict(self.db._run("count tuning jobs", lambda con: con.execute(q).all()))
        return {s: int(got.get(s, 0)) for s in STATUSES}
