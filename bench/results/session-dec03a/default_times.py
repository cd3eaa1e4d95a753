"""A copy of a FindDB whose find records of tuned (problem, solver) pairs hold the default config's time, and no
PerfDB: the time an unseen problem runs, whose tunable solvers have no tuned config, as the training labels and the
truth of ``bench/eval_costmodel.py --default-configs`` (whose features are the default configs already).

The default config's time is the PerfDB's ``default_time_ms`` scaled by the find record's time over the PerfDB's time
of the tuned config: 4424 of the shipped DB's 5225 PerfDB entries were timed on the wall clock before 765b8f1 (their
tuned time a median 1.14x the find record's device time), the find records on the GPU. ``truths.py`` reads the same
times through ``default_times``.

``python bench/results/session-dec03a/default_times.py <FindDB in> <FindDB out>``
"""
import shutil
import sqlite3
import sys

SCALED = ("select f.id, f.problem_key, f.solver_id, p.default_time_ms * f.time_ms / p.time_ms from find_records f "
          "join perf_records p on f.problem_key=p.problem_key and f.solver_id=p.solver_id and f.device=p.device "
          "where p.default_time_ms > 0 and p.time_ms > 0")


def default_times(c: sqlite3.Connection) -> list[tuple[int, str, str, float]]:
    """(find record id, problem key, solver id, its default config's time) of every tuned find record."""
    return c.execute(SCALED).fetchall()


if __name__ == "__main__":
    src, out = sys.argv[1], sys.argv[2]
    shutil.copyfile(src, out)
    c = sqlite3.connect(out)
    rows = default_times(c)
    with c:
        c.executemany("update find_records set time_ms=? where id=?", [(t, i) for i, _, _, t in rows])
        c.execute("delete from perf_records")
    c.execute("vacuum")
    print(out, "records set to default times:", len(rows))
