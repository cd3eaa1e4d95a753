"""Re-measure the FindDB records of solvers whose measured time has drifted from what today's code measures (issue
20's noise-ceiling run, session-sweep call 1: the GEMM and Winograd solvers, whose host path changed after their
records were made, measured 0.59-0.87x of their shipped times at N=1 while the own single-kernel solvers stayed
within 1-3%).

``prepare``: a copy of the DB without those solvers' find records (and their recorded find failures) for the
problems of the given data types, and the MIOpenDriver lines of those problems (``miofind tune --no-tune --file``
then finds only the solvers that lost their record: ``Tuner.stale``), in a seeded random order per data-type
group so that a run stopped by its time budget has refreshed a sample of every preset.
``contradicted``: as ``prepare``, for the find records whose PerfDB entry holds the same config at a time more
than ``--ratio`` away (the tune and the find measured the same kernel and disagree): only those records are removed,
and they are listed with both times.
``agreement``: over the find records of ``--db`` whose PerfDB entry holds the same config (those made since
``--since``, a Unix time, where given), how far the two times are apart: median and 90th percentile of
max(find/tune, tune/find), how many beyond ``--ratio``.
``union``: a copy of ``--before`` with every find record and find failure of ``--after`` added (problems the
first lacks, e.g. the random layers of ``bench/sweep_problems.py layers``), for training and evaluating on both.
``merge``: the refreshed copy, with the old records and failures of those solvers put back for the problems a run
stopped by its budget did not reach (no record or failure of any of those solvers), so that no problem loses them;
with ``--all-solvers``, every old (problem, solver) record or failure the copy lacks.
``compare``: per solver, the median and spread of the new time over the old; how many problems' fastest solver
changed.

    python bench/refresh_records.py prepare --db finddb/sm_90-132.sqlite --out /tmp/refresh.sqlite --lines refresh.txt
    python bench/refresh_records.py prepare --all-solvers --models resnet50 --batches 32 --dtypes FP16 --layouts NHWC ...
    python bench/refresh_records.py contradicted --db finddb/sm_90-132.sqlite --out /tmp/refresh.sqlite --lines c.txt
    python bench/refresh_records.py merge --before finddb/sm_90-132.sqlite --after /tmp/refresh.sqlite --out merged.sqlite
    python bench/refresh_records.py prepare --all-solvers --tf32 --older-than 1764133200 ...   (every record, once)
    python bench/refresh_records.py merge --all-solvers ...   (old records back per problem and solver)
    python bench/refresh_records.py compare --before finddb/sm_90-132.sqlite --after /tmp/refresh.sqlite
"""
from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

STALE = ("GemmFwd1x1_0_1", "GemmFwdRest", "GemmBwd1x1_stride1", "GemmBwdRest", "GemmWrw1x1_stride1", "GemmWrwUniversal",
         "ConvWinograd3x3F23Fwd", "ConvWinograd3x3F43Fwd", "ConvWinograd3x3F23Bwd", "ConvWinograd3x3F43Bwd")
NAIVE = "ConvDirectNaive"


def _write_lines(path, header, keys) -> None:
    """MIOpenDriver lines of the problems ``keys``, after a ``# header`` line (``miofind tune --file``)."""
    from miofind.problem import ProblemDescription
    from sweep_problems import driver_line

    problems = [ProblemDescription.from_key(k) for k in keys]
    Path(path).write_text(f"# {header}\n" + "\n".join(driver_line(p, p.direction) for p in problems) + "\n")


def _columns(c, table) -> str:
    """The table's columns but its row id, comma-separated (rows copied between attached DBs get new ids)."""
    return ",".join(r[1] for r in c.execute(f"pragma main.table_info({table})") if r[1] != "id")


def _same_config(db, since=0.0):
    """(problem key, solver id, find ms, tuned ms) of the find records of ``db`` made at or after ``since`` whose
    PerfDB entry holds the same config (the tune and the find measured the same kernel)."""
    import json

    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        for key, sid, ft, pt, fc, pc in c.execute(
                "select f.problem_key, f.solver_id, f.time_ms, p.time_ms, f.config, p.config from find_records f "
                "join perf_records p on f.device = p.device and f.problem_key = p.problem_key "
                "and f.solver_id = p.solver_id where f.created_at >= ?", (since,)):
            if json.loads(fc or "{}") == json.loads(pc) and ft > 0 and pt > 0:
                yield key, sid, ft, pt
    finally:
        c.close()


def prepare(db, out, lines, dtypes, solvers, seed, only=None, tf32=False, older_than=None):
    """``solvers`` None: every solver's records but the naive ones' (the verification reference, which a find does
    not time unless asked: their records stay); ``only`` (a set of keys), where given: those problems alone;
    ``tf32``: FP32 problems with TF32 math too (last, with BF16); ``older_than`` (a Unix time), where given: only
    problems with a record of those solvers made before it (a run that refreshed some problems is not repeated)."""
    from miofind.problem import ProblemDescription

    shutil.copyfile(db, out)
    c = sqlite3.connect(out)
    if solvers is None:
        solvers = tuple(sid for (sid,) in c.execute("select distinct solver_id from find_records")
                        if not sid.startswith(NAIVE))
    marks = ",".join("?" * len(solvers))
    where, params = f"solver_id in ({marks})", list(solvers)
    if older_than is not None:
        where, params = where + " and created_at < ?", [*params, older_than]
    keys = [k for (k,) in c.execute(f"select distinct problem_key from find_records where {where}", params)]
    keys = [k for k in keys if (p := ProblemDescription.from_key(k)).dtype in dtypes and (tf32 or p.math != "tf32")
            and (only is None or k in only)]
    with c:
        for k in keys:
            c.execute(f"delete from find_records where problem_key=? and solver_id in ({marks})", (k, *solvers))
            c.execute(f"delete from find_failures where problem_key=? and solver_id in ({marks})", (k, *solvers))
    c.execute("VACUUM")
    c.close()
    rng = random.Random(seed)
    order = []
    last = lambda p: p.dtype == "BF16" or p.math == "tf32"   # noqa: E731  the LOPO test set is FP32 and FP16
    for group in (False, True):   # BF16 and TF32 last
        ks = sorted(k for k in keys if last(ProblemDescription.from_key(k)) == group)
        rng.shuffle(ks)
        order += ks
    _write_lines(lines, f"bench/refresh_records.py prepare: {len(order)} problems", order)
    print(f"{len(keys)} problems, their records of {len(solvers)} solvers removed; lines in {lines}")


def contradicted(db, out, lines, ratio):
    """The (problem, solver) pairs whose find record and PerfDB entry are the same config and whose times differ by
    more than ``ratio``, removed from a copy; their problems' driver lines written. Returns the pairs."""
    pairs = [(key, sid, ft, pt) for key, sid, ft, pt in _same_config(db) if max(ft / pt, pt / ft) > ratio]
    shutil.copyfile(db, out)
    c = sqlite3.connect(out)
    with c:
        for key, sid, _, _ in pairs:
            c.execute("delete from find_records where problem_key=? and solver_id=?", (key, sid))
    c.execute("VACUUM")
    c.close()
    keys = sorted({p[0] for p in pairs})
    _write_lines(lines, f"bench/refresh_records.py contradicted --ratio {ratio}: {len(keys)} problems", keys)
    for key, sid, ft, pt in sorted(pairs, key=lambda p: -max(p[2] / p[3], p[3] / p[2])):
        print(f"{key} {sid}: find {ft:.4f} ms, tune {pt:.4f} ms ({ft / pt:.2f}x)")
    print(f"{len(pairs)} find records of {len(keys)} problems contradicted by their PerfDB entry beyond {ratio}x, "
          f"removed from {out}; lines in {lines}")
    return pairs


def agreement(db, ratio, since=0.0):
    import math

    r = [math.exp(abs(math.log(ft / pt))) for _, _, ft, pt in _same_config(db, since)]
    if not r:
        print("no find record with a PerfDB entry of the same config")
        return
    q = statistics.quantiles(r, n=10) if len(r) > 1 else [r[0]] * 9
    print(f"{len(r)} find records with a PerfDB entry of the same config: apart by median {statistics.median(r):.3f}x, "
          f"p90 {q[-1]:.3f}x, max {max(r):.2f}x; beyond {ratio}x: {sum(x > ratio for x in r)}")


def union(before, after, out):
    shutil.copyfile(before, out)
    c = sqlite3.connect(out)
    c.execute("attach database ? as other", (str(after),))
    with c:
        for t in ("find_records", "find_failures"):
            names = _columns(c, t)
            c.execute(f"insert or ignore into main.{t} ({names}) select {names} from other.{t}")
    c.execute("detach database other")
    c.execute("VACUUM")
    print(out, "find records", c.execute("select count(*) from find_records").fetchone()[0], "problems",
          c.execute("select count(distinct problem_key) from find_records").fetchone()[0])
    c.close()


def merge_pairs(before, after, out):
    """Every (problem, solver) record or failure of ``before`` that ``after`` lacks (neither a record nor a failure
    of that pair: a problem the run did not reach, a naive solver the find did not time) put back; counted per
    solver."""
    shutil.copyfile(after, out)
    c = sqlite3.connect(out)
    c.execute("attach database ? as old", (str(before),))
    cols = {t: _columns(c, t) for t in ("find_records", "find_failures")}
    has = set(c.execute("select problem_key, solver_id from main.find_records "
                        "union select problem_key, solver_id from main.find_failures"))
    back = defaultdict(int)
    with c:
        for t, n in cols.items():
            for key, sid in c.execute(f"select problem_key, solver_id from old.{t}").fetchall():
                if (key, sid) in has:
                    continue
                c.execute(f"insert into main.{t} ({n}) select {n} from old.{t} where problem_key=? and solver_id=?",
                          (key, sid))
                back[(t, sid)] += 1
    c.execute("detach database old")
    c.execute("VACUUM")
    for (t, sid), n in sorted(back.items()):
        print(f"{t:13s} {sid:28s} {n:5d} put back")
    print(f"{sum(back.values())} old records and failures put back")
    c.close()


def merge(before, after, out, solvers):
    shutil.copyfile(after, out)
    c = sqlite3.connect(out)
    c.execute("attach database ? as old", (str(before),))
    marks = ",".join("?" * len(solvers))
    had = {k for (k,) in c.execute(f"select distinct problem_key from old.find_records where solver_id in ({marks})", solvers)}
    has = {k for (k,) in c.execute(f"select distinct problem_key from main.find_records where solver_id in ({marks}) "
                                   f"union select distinct problem_key from main.find_failures where solver_id in ({marks})",
                                   (*solvers, *solvers))}
    missing = sorted(had - has)
    cols = {t: _columns(c, t) for t in ("find_records", "find_failures")}
    with c:
        for k in missing:
            for t, n in cols.items():
                c.execute(f"insert into main.{t} ({n}) select {n} from old.{t} where problem_key=? and solver_id in ({marks})",
                          (k, *solvers))
    c.execute("detach database old")
    c.execute("VACUUM")
    print(f"{len(had)} problems held records of the {len(solvers)} solvers; {len(missing)} of them lacked those after the "
          f"run (not reached) and got their old records back")
    c.close()


def compare(before, after, solvers):
    from noise_ceiling import times

    a, b = times(before), times(after)
    ratio = defaultdict(list)
    groups = defaultdict(list)   # (N, dtype) -> the new fastest's time over the old pick's, both as re-measured
    changed = kept = 0
    for k in set(a) & set(b):
        new = [s for s in (solvers or sorted(b[k])) if s in b[k] and s in a[k] and b[k][s] != a[k][s]]
        if not new:
            continue
        parts = k.split("-")
        n = 1 if parts[7] == "1" else 32
        for s in new:
            ratio[(s, n)].append(b[k][s] / a[k][s])
        old_pick, new_pick = min(a[k], key=a[k].get), min(b[k], key=b[k].get)
        changed += old_pick != new_pick
        kept += old_pick == new_pick
        groups[(n, parts[-2])].append(b[k][new_pick] / b[k][old_pick] if old_pick != new_pick and old_pick in b[k]
                                      else None)
    for (s, n), v in sorted(ratio.items()):
        q = statistics.quantiles(v, n=10) if len(v) > 1 else [v[0]] * 9
        print(f"{s:24s} N={n:<2d} {len(v):4d} new/old median {statistics.median(v):.3f}  p10 {q[0]:.3f}  p90 {q[-1]:.3f}")
    print(f"problems re-measured: {changed + kept}; fastest solver changed in {changed}")
    for (n, dt), v in sorted(groups.items()):
        gains = [x for x in v if x is not None]
        print(f"N={n:<2d} {dt}: {len(v)} problems, fastest changed in {len(gains)}"
              + (f"; the new fastest over the old pick, both as re-measured: median {statistics.median(gains):.3f}"
                 if gains else ""))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["prepare", "contradicted", "agreement", "union", "merge", "compare"])
    ap.add_argument("--db", default="finddb/sm_90-132.sqlite")
    ap.add_argument("--out")
    ap.add_argument("--lines")
    ap.add_argument("--before")
    ap.add_argument("--after")
    ap.add_argument("--dtypes", default="FP32,FP16,BF16")
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--ratio", type=float, default=1.5, help="contradicted: find time over tuned time (or under)")
    ap.add_argument("--since", type=float, default=0.0, help="agreement: records made at or after this Unix time")
    ap.add_argument("--all-solvers", action="store_true",
                    help="prepare: every solver's records, not only the GEMM and Winograd ones (STALE)")
    ap.add_argument("--models", default=None,
                    help="prepare: only the problems of these presets (comma-separated), at --batches and --layouts")
    ap.add_argument("--batches", default="32")
    ap.add_argument("--layouts", default="NCHW,NHWC")
    ap.add_argument("--tf32", action="store_true", help="prepare: FP32 problems with TF32 math too (last, with BF16)")
    ap.add_argument("--older-than", type=float, default=None,
                    help="prepare: only problems with a record made before this Unix time")
    args = ap.parse_args(argv)
    if args.what == "prepare":
        dtypes, only = tuple(args.dtypes.split(",")), None
        if args.models:
            from miofind.models import model_problems
            only = {p.key() for m in args.models.split(",") for b in args.batches.split(",")
                    for p in model_problems(m, batch=int(b), dtypes=dtypes, layouts=tuple(args.layouts.split(",")))}
        prepare(args.db, args.out, args.lines, set(dtypes), None if args.all_solvers else STALE, args.seed, only,
                args.tf32, args.older_than)
    elif args.what == "contradicted":
        contradicted(args.db, args.out, args.lines, args.ratio)
    elif args.what == "agreement":
        agreement(args.db, args.ratio, args.since)
    elif args.what == "union":
        union(args.before, args.after, args.out)
    elif args.what == "merge":
        if args.all_solvers:
            merge_pairs(args.before, args.after, args.out)
        else:
            merge(args.before, args.after, args.out, STALE)
    else:
        compare(args.before, args.after, None if args.all_solvers else STALE)


if __name__ == "__main__":
    main()
