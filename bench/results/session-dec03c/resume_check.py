"""Session dec03c: are the deferred solvers a stopped exit leaves measured later? Fresh processes run ResNet-50's
first training step (batch 48) one after another on one user DB and one kernel cache (fresh copies of `miofind
warmup`'s): the first two with the default stop at exit, the third with MIOFIND_EXIT_WAIT=inf (every job done before
it ends), the fourth with the default again. After each, the user DB's find records and deferred marks are counted.
Usage: python resume_check.py CONFIG KERNEL_CACHE CUPY_CACHE [LABEL:VAR=VALUE,... ...] (the processes, in order; by
default call 3's four above). With MIOFIND_BENCH_DRAIN=1 a process waits for its background jobs after the step and
reports how long (drain_s)."""

import json
import os
import shutil
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench"))
import bench_models  # noqa: E402

config, kc, cupy = sys.argv[1:4]
PLAN = [("p1", {}), ("p2", {}), ("p3", {"MIOFIND_EXIT_WAIT": "inf"}), ("p4", {})]
if sys.argv[4:]:
    PLAN = [(a.split(":", 1)[0], dict(kv.split("=", 1) for kv in a.split(":", 1)[1].split(",") if kv))
            for a in sys.argv[4:]]


def counts(path):
    con = sqlite3.connect(path)
    try:
        one = lambda q: con.execute(q).fetchone()[0]    # noqa: E731
        return {"records": one("select count(*) from find_records"),
                "problems": one("select count(distinct problem_key) from find_records"),
                "deferred_marks": one("select count(*) from find_failures where stage = 'deferred'"),
                "other_failures": one("select count(*) from find_failures where stage != 'deferred'"),
                "specialized_records": one("select count(*) from find_records where build = 'specialized'"),
                "generic_records": one("select count(*) from find_records where build = 'generic'")}
    finally:
        con.close()


with tempfile.TemporaryDirectory(prefix="resume_") as d:
    shutil.copytree(kc, f"{d}/kc")
    shutil.copytree(cupy, f"{d}/cupy")
    base = dict(os.environ, MIOFIND_DB=f"sqlite:///{d}/user.sqlite", MIOFIND_KERNEL_CACHE=f"{d}/kc",
                CUPY_CACHE_DIR=f"{d}/cupy")
    for label, extra in PLAN:
        r = bench_models.first_iteration("resnet50", config, "miofind", dict(base, **extra))
        st = r["stats"]
        print(json.dumps({"label": label, "config": config, "env": extra, "first_s": r["first_s"],
                          "exit_s": r["exit_s"], "process_s": r["process_s"],
                          "background_pending": r.get("background_pending"), "db_hits": st.get("db_hits"),
                          "finds_run": st.get("finds_run"), "replaced": st.get("replaced"),
                          "drain_s": r.get("drain_s"),
                          "db": counts(f"{d}/user.sqlite")}), flush=True)
