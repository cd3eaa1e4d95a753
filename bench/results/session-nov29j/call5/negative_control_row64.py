"""A negative control of the 32-deep (``row64``) padded cases of tests/implicit_gemm_hopper/test_index_boundaries.py
(session nov29h call 8's negative_control_pad.py with the loads an argument): one n = 342 case (64-bit offsets needed)
run with the solution's kernels rebuilt with 32-bit offsets (INDEX_T=int), which the test must catch (output elements
unwritten, sampled errors over the bound, or a CUDA error). One case per process, from the repo root on a GPU:
    python3 bench/results/session-nov29j/call5/negative_control_row64.py KEY N LOADS      e.g. Fpad 342 row64
Prints one JSON line; exit 0 when the test would fail on this build (caught), 1 when it would pass (blind)."""

import dataclasses
import json
import sys

sys.path[:0] = ["tests", "tests/implicit_gemm_hopper"]

import test_index_boundaries as t  # noqa: E402


def int_offsets(sol):
    kernels = [dataclasses.replace(k, macros=tuple((m, "int" if m == "INDEX_T" else v) for m, v in k.macros))
               for k in sol.kernels]
    return dataclasses.replace(sol, kernels=kernels)


key, n, loads = sys.argv[1], int(sys.argv[2]), sys.argv[3]
row = {"case": f"{key}-n{n}-{loads}", "build": "INDEX_T=int"}
try:
    unwritten, err, tol, what = t.run_case(key, n, loads, edit=int_offsets)
    row.update(unwritten=unwritten, err=err, tol=tol, what=what, caught=bool(unwritten or not err <= tol))
except Exception as e:      # noqa: BLE001 - an illegal address or the like: the test errors, so it is caught
    row.update(error=f"{type(e).__name__}: {str(e)[:300]}", caught=True)
print(json.dumps(row))
sys.exit(0 if row["caught"] else 1)
