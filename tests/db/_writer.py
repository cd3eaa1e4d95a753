"""Child process for test_findb's concurrency test: store N records, one transaction each.

argv: db_path go_file ready_file prefix count. Exits non-zero on any exception or warning.
"""

import sys
import time
import warnings
from pathlib import Path


def main() -> int:
    warnings.simplefilter("error")
    db_path, go, ready, prefix, count = sys.argv[1:6]
    from miofind.db import FindDB, Record

    Path(ready).touch()
    deadline = time.time() + 30
    while not Path(go).exists():
        if time.time() > deadline:
            raise SystemExit("never told to go")
        time.sleep(0.001)
    with FindDB(db_path) as db:
        for i in range(int(count)):
            key = f"{prefix}-{i}"
            db.store([Record(device="sm_90-132", device_name="H100", problem_key=key, solver_id="S",
                             algorithm="direct", time_ms=float(i), workspace_bytes=i, config={"i": i})])
            if i % 20 == 0:
                assert [r.problem_key for r in db.lookup("sm_90-132", key)] == [key]
                db.stats()
    return 0


if __name__ == "__main__":
    sys.exit(main())
