"""FindDB upkeep without a GPU: find what is wrong with stored records (``verify_db``) and delete it
(``prune_db``).

A record is wrong when its problem key does not re-serialise to itself, its solver is unknown or
retired, the solver does not apply to the problem, its config does not validate, or (find records)
its workspace size is not what the solver asks for now: MIOpen users see runs crash on a stale
workspace size. A find record whose timed runs spread over ``miofind.harness.UNSTABLE_SPREAD`` (80% quantile
over 20%) holds a disturbed measurement (its median may be many times the solver's time): pruned, a find
measures that solver again. A row the FindDB cannot even read back (what ``FindDB`` skips with a FindDBWarning)
is reported as well. Every check is CPU-only; parsed problems, applicability, config validity,
workspace sizes and kernel hashes are cached, so 10k records take seconds.

Checks that depend on what is installed are not judged where it is missing: cuDNN records are not
checked for applicability while the cuDNN frontend is not importable, and their workspace size
(which comes from building the cuDNN plan on the GPU) is never checked here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

import sqlalchemy as sa

from . import findb as _findb
from .findb import FindDB, FindDBError, FindFailure, PerfRecord, Record, TuneFailure, config_key

__all__ = ["Problem", "PruneReport", "RecordChecker", "verify_db", "prune_db", "trust_summary", "migrate_trust_keys",
           "CHECKS"]

# the checks, in the order they run; a record is reported under its first failing check and, for the
# config and workspace checks, each failing one
CHECKS = ("invalid row", "bad key", "unknown solver", "retired solver", "not applicable", "invalid config",
          "workspace", "unstable timing")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one stored record. ``kind`` is "find" or "perf"; ``check`` one of CHECKS."""

    kind: str
    device: str
    key: str
    solver_id: str
    message: str
    check: str = ""


@dataclass
class PruneReport:
    """What ``prune_db`` deleted (or, with ``dry_run``, would delete): counts per "kind: reason",
    e.g. ``{"find: not applicable": 2, "perf: stale": 1, "failures: stale": 3, "find_failures: stale": 1}``
    ("failures": failed configs of tuning; "find_failures": failed find candidates)."""

    counts: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False

    @property
    def total(self) -> int:
        return sum(self.counts.values())


_TABLES = {"find": (_findb._records, Record), "perf": (_findb._perf, PerfRecord),
           "failures": (_findb._failures, TuneFailure), "find_failures": (_findb._find_failures, FindFailure)}


@dataclass
class _Row:
    kind: str
    id: int
    device: str
    key: str
    solver_id: str
    created_at: Any
    obj: Any = None          # the validated record, None if the row is invalid
    error: str = ""


def _read_rows(db: FindDB, kind: str) -> list[_Row]:
    """Every row of one table, validated as FindDB does, but keeping the invalid ones (with why)."""
    table, cls = _TABLES[kind]
    if not db._has(table):
        return []   # a read-only handle on an older schema
    q = sa.select(*_findb._raw_cols(table, db._version)).order_by(table.c.device, table.c.problem_key, table.c.solver_id,
                                                     table.c.id)
    rows = db._run(f"read the {table.name} table", lambda con: con.execute(q).mappings().all())
    out = []
    for row in rows:
        r = _Row(kind, row["id"], *(str(row[c]) for c in ("device", "problem_key", "solver_id")),
                 created_at=row["created_at"])
        try:
            r.obj = _findb._from_row(row, cls)
        except (ValueError, TypeError) as e:
            r.error = str(e)
        out.append(r)
    return out


def unstable_timing(rec: Record) -> str | None:
    """Why a find record's timing is not to be trusted (its timed runs spread over UNSTABLE_SPREAD), or None."""
    from ..harness import UNSTABLE_SPREAD, spread_too_wide

    q20, q80 = rec.time_q20_ms, rec.time_q80_ms
    if not q20 or not q80 or q20 <= 0 or not spread_too_wide(q20, q80):
        return None
    return (f"timed runs spread from {q20:.4g} ms (20%) to {q80:.4g} ms (80%), over {UNSTABLE_SPREAD}x: a disturbed "
            f"measurement (median {rec.time_ms:.4g} ms); prune it and a find measures {rec.solver_id} again")


class RecordChecker:
    """The checks ``verify_db`` runs, with their caches (parsed keys, applicability, config validity,
    workspace sizes, trust keys), for stored rows and for records about to be stored (``check_record``)."""

    def __init__(self) -> None:
        from ..registry import registry

        self.solvers = {row.id: row.solver for row in registry()}
        self._keys: dict[str, Any] = {}
        self._appl: dict[tuple[str, str], str | None] = {}
        self._valid: dict[tuple[str, str, str], str | None] = {}
        self._ws: dict[tuple[str, str, str], Any] = {}
        self._hash: dict[str, str] = {}
        self._env: dict[str, str | None] = {}

    @staticmethod
    def _cached(cache: dict, k: Any, fn: Callable[[], Any]) -> Any:
        try:
            return cache[k]
        except KeyError:
            v = cache[k] = fn()
            return v

    def problem(self, key: str) -> tuple[Any, str | None]:
        """(ProblemDescription, None) or (None, why the key is bad)."""
        def parse():
            from ..problem import ProblemDescription

            try:
                p = ProblemDescription.from_key(key)
                again = p.key()
            except ValueError as e:
                return None, str(e)
            except Exception as e:  # a parser bug on a strange key
                return None, f"key does not parse ({e.__class__.__name__}: {e})"
            if again != key:
                return None, f"key is not canonical: it re-serialises to {again!r}"
            return p, None
        return self._cached(self._keys, key, parse)

    def env_missing(self, solver) -> str | None:
        """Why this solver's applicability cannot be judged on this machine (a library it needs is
        missing), or None."""
        def probe():
            if solver.family != "cudnn":
                return None
            try:
                ok, why = importlib.import_module("miofind.solvers.cudnn_base").frontend_status()
            except Exception as e:
                return f"cuDNN status unknown ({e.__class__.__name__}: {e})"
            return None if ok else why
        return self._cached(self._env, solver.id, probe)

    def applicability(self, solver, key: str, p) -> str | None:
        def check():
            try:
                a = solver.applicability(p)
            except Exception as e:
                return f"applicability check failed: {e.__class__.__name__}: {e}"
            return None if a else f"{solver.id} does not apply: {getattr(a, 'reason', '') or 'no reason given'}"
        return self._cached(self._appl, (solver.id, key), check)

    def config(self, solver, key: str, p, config: dict) -> str | None:
        def check():
            try:
                ok = solver.is_valid_config(p, config)
            except Exception as e:
                return f"config {config_key(config)} check failed: {e.__class__.__name__}: {e}"
            return None if ok else f"config {config_key(config)} is not valid for {solver.id}"
        return self._cached(self._valid, (solver.id, key, config_key(config)), check)

    def workspace(self, solver, key: str, p, config: dict | None, stored: int) -> str | None:
        if solver.family == "cudnn":
            return None  # the plan's workspace is known only after building it on the GPU

        def compute():
            try:
                return int(solver.workspace_bytes(p, config)), None
            except Exception as e:
                return None, f"workspace size check failed: {e.__class__.__name__}: {e}"
        want, err = self._cached(self._ws, (solver.id, key, config_key(config)), compute)
        if err:
            return err
        if want != stored:
            return f"workspace_bytes={stored}, but {solver.id} needs {want} bytes now"
        return None

    def trust_key(self, solver) -> str:
        from ..trust import trust_key

        return self._cached(self._hash, solver.id, lambda: trust_key(solver))

    def trusted(self, row: _Row) -> tuple[str, str]:
        """("yes" | "no" | "unknown", why) for a valid row's trust key against the installed code."""
        from ..trust import compare

        solver = self.solvers.get(row.solver_id)
        if solver is None:
            return "no", f"solver {row.solver_id!r} is unknown or retired"
        return compare(row.obj.kernel_hash, self.trust_key(solver))

    def check(self, row: _Row) -> list[Problem]:
        def problem(check: str, message: str) -> Problem:
            return Problem(row.kind, row.device, row.key, row.solver_id, message, check)

        if row.obj is None:
            return [problem("invalid row", f"row id={row.id} is invalid: {row.error}")]
        p, why = self.problem(row.key)
        if why:
            return [problem("bad key", why)]
        if row.solver_id not in self.solvers:
            return [problem("unknown solver", f"unknown solver {row.solver_id!r}")]
        solver = self.solvers[row.solver_id]
        if solver is None:
            return [problem("retired solver", f"solver {row.solver_id!r} is retired")]
        if not self.env_missing(solver):
            why = self.applicability(solver, row.key, p)
            if why:
                return [problem("not applicable", why)]
        out = []
        cfg = row.obj.config
        if cfg:
            why = self.config(solver, row.key, p, cfg)
            if why:
                out.append(problem("invalid config", why))
        if row.kind == "find" and not out:
            why = self.workspace(solver, row.key, p, cfg or None, row.obj.workspace_bytes)
            if why:
                out.append(problem("workspace", why))
        if row.kind == "find":
            why = unstable_timing(row.obj)
            if why:
                out.append(problem("unstable timing", why))
        return out

    def check_record(self, kind: str, obj: Any) -> list[Problem]:
        """What ``verify_db`` would flag in a Record (``kind`` "find") or PerfRecord ("perf") were it
        stored: the same checks in the same order; empty when it would pass. ``db import`` uses it, so
        that verify never flags what an import accepted."""
        row = _Row(kind, 0, obj.device, obj.problem_key, obj.solver_id, obj.created_at, obj=obj)
        return self.check(row)

    def stale(self, row: _Row) -> bool:
        """Whether a valid record is certainly not trusted by this miofind (another trust key; a
        library version unreadable here does not make a record stale)."""
        solver = self.solvers.get(row.solver_id)
        if solver is None:
            return True
        if row.kind == "failures":
            return row.obj.kernel_hash != self.trust_key(solver)
        if row.kind == "find_failures":
            # a library version unreadable here (no GPU) does not make a recorded failure stale
            from ..trust import compare

            return compare(row.obj.kernel_hash, self.trust_key(solver))[0] == "no"
        return self.trusted(row)[0] == "no"


def _verify(db: FindDB, checker: RecordChecker) -> tuple[list[Problem], dict[str, list[_Row]]]:
    rows = {kind: _read_rows(db, kind) for kind in ("find", "perf")}
    problems = [pr for kind in ("find", "perf") for row in rows[kind] for pr in checker.check(row)]
    return problems, rows


def verify_db(db: FindDB) -> list[Problem]:
    """Everything wrong with the find records and tuned configs of ``db`` (see the module doc),
    ordered by kind, device, key and solver; empty when all is well. Reads only; needs no GPU."""
    return _verify(db, RecordChecker())[0]


def prune_db(db: FindDB, *, dry_run: bool = False, stale: bool = True) -> PruneReport:
    """Delete what ``verify_db`` flags and, with ``stale``, the records this miofind does not trust
    (a trust key other than the solver's current one, ``miofind.trust``: never used by a find, e.g.
    imported MIOpen hints), failed configs of tuning recorded under another trust key, and recorded
    find failures under another trust key (a find measures such a candidate again anyway). Failed
    configs and find failures of a bad key or an unknown or retired solver go too.
    ``dry_run`` counts without deleting. Each row is deleted only if it is still the row examined (same
    id and ``created_at``), so a record rewritten meanwhile by a find survives. One transaction."""
    if db.readonly and not dry_run:
        raise FindDBError(f"FindDB {db.url} is read-only")
    checker = RecordChecker()
    problems, rows = _verify(db, checker)
    rows["failures"] = _read_rows(db, "failures")
    rows["find_failures"] = _read_rows(db, "find_failures")
    flagged: dict[tuple[str, str, str, str], str] = {}
    for pr in problems:
        flagged.setdefault((pr.kind, pr.device, pr.key, pr.solver_id), pr.check)
    report = PruneReport(dry_run=dry_run)
    doomed: dict[str, list[_Row]] = {kind: [] for kind in rows}
    for kind, kind_rows in rows.items():
        for row in kind_rows:
            reason = flagged.get((kind, row.device, row.key, row.solver_id))
            if kind in ("failures", "find_failures") and reason is None:
                if row.obj is None:
                    reason = "invalid row"
                elif checker.problem(row.key)[1]:
                    reason = "bad key"
                elif row.solver_id not in checker.solvers:
                    reason = "unknown solver"
                elif checker.solvers[row.solver_id] is None:
                    reason = "retired solver"
            if reason is None and stale and row.obj is not None and checker.stale(row):
                reason = "stale"
            if reason is not None:
                doomed[kind].append(row)
                k = f"{kind}: {reason}"
                report.counts[k] = report.counts.get(k, 0) + 1
    if dry_run or not any(doomed.values()):
        return report

    def delete(con: sa.Connection) -> None:
        for kind, kind_rows in doomed.items():
            if not kind_rows:
                continue
            t = _TABLES[kind][0]
            stmt = sa.delete(t).where(t.c.id == sa.bindparam("rid"), t.c.created_at == sa.bindparam("at"))
            stmt_null = sa.delete(t).where(t.c.id == sa.bindparam("rid"))
            exact = [{"rid": r.id, "at": r.created_at} for r in kind_rows if isinstance(r.created_at, float)]
            loose = [{"rid": r.id} for r in kind_rows if not isinstance(r.created_at, float)]
            if exact:
                con.execute(stmt, exact)
            if loose:  # an invalid row whose created_at is not even a number
                con.execute(stmt_null, loose)

    db._run("prune records", delete, write=True)
    return report


# -- trust keys ----------------------------------------------------------------------------------

# Kernel-source digests that a source edit replaced while leaving every specialised build's code as
# it was, old -> new: records under the old digest measured the same binaries. Issue 18's generic
# builds of gemm_im2col.cu and the depthwise kernels (constexpr sizes became macros or consts): for
# every specialised build of tests/shapes.py and of the shipped DB's (problem, config) pairs (1654
# kernels, NVRTC 13.5, sm_90) the code, kernel attributes, shared memory and parameters of the
# cubin are identical; only unreferenced global copies of the former namespace-scope constexprs
# left the ELF. The shipped DB's records were re-keyed in place.
# Today's digests of the Hopper F/B sources that the renames from session nov29h on map to: an edit that leaves their
# binaries as they were changes them here, once, and adds their previous values as one _hopper_renames group below.
# Re-keying the shipped file (`miofind db migrate-trust --db finddb/sm_90-132.sqlite`) leaves it in WAL mode, which a
# read-only install directory cannot open: put it back with `PRAGMA journal_mode=DELETE`
# (tests/cli/test_cli_db_readonly.py reads it from such a directory)
HOPPER_F = "d6cf7ef49e83c884"           # implicit_gemm_hopper_fwd.cu: Hopper F, the fused F
HOPPER_B = "60a002216d286e62"           # Hopper B
HOPPER_TMA_STORE = "8c3f8c2db5498bb3"   # the copy-engine-store F
HOPPER_NCHW_F = "0043537e4e3b21fc"      # the NCHW F
HOPPER_NCHW_B = "1242d1c61788fd98"      # the NCHW B
HOPPER_TF32_B = "707223c90240d89f"      # the TF32 B
HOPPER_SOURCES = (HOPPER_F, HOPPER_B, HOPPER_TMA_STORE, HOPPER_NCHW_F, HOPPER_NCHW_B, HOPPER_TF32_B)


def _hopper_renames(*olds: str) -> dict[str, str]:
    """SOURCE_RENAMES' entries of one byte-identical edit of implicit_gemm_hopper_fwd.cu: the six sources' digests
    before it, in HOPPER_SOURCES' order (Hopper F and the fused F, Hopper B, the copy-engine-store F, the NCHW F, the
    NCHW B, the TF32 B), each to today's."""
    return dict(zip(olds, HOPPER_SOURCES, strict=True))


SOURCE_RENAMES = {"88c4490855edbe3c": "932ecfdffa26fafc",     # gemm_im2col.cu
                  "44d476d84375064b": "cec7fa95c3213d51",     # depthwise_*.cu
                  # implicit_gemm_hopper_fwd.cu's fused epilogue (EPI_BIAS/EPI_ACT, off by default): the Hopper
                  # F and B builds of every stored config compile to byte-identical cubins (bench/results/
                  # session-fused/cubins_identical.txt); then the copy-engine loads (TMA, off by default) of the
                  # forward and W kernels: every stored Hopper F/B/W config's cubins byte-identical again
                  # (bench/results/session-tma/cubins_identical.txt); then the producers' stage wait as one
                  # helper (producer_stage): byte-identical again (bench/results/session-cpu/cubins_identical.txt);
                  # then the persistent copy-engine forward (PERSIST with TMA): every stored Hopper F/B config's
                  # cubins byte-identical again (bench/results/session-ptma/cubins_identical.txt); then the TMA
                  # producers' stage copies as one helper (tma_fill) and one consumer loop for both persistent kinds:
                  # byte-identical again, the persistent TMA configs included (session-ptma/cubins_identical_review.txt);
                  # then the copy engine for backward data (B_MN with TMA) and a 3-D box helper in the TMA header:
                  # every stored Hopper F/B/W config's cubins byte-identical again (session-btma/cubins_identical.txt)
                  "e441f17ba9b54075": "41be1c4ec06e49b9",     # Hopper F (before the fused epilogue)
                  "52f6cba2317015bb": "ebf66703f4b2b8a4",     # Hopper B (before the fused epilogue)
                  "014572832c77b32c": "41be1c4ec06e49b9",     # Hopper F (before TMA)
                  "78707bc1105e721f": "ebf66703f4b2b8a4",     # Hopper B (before TMA)
                  "aff7ee6f69feadba": "41be1c4ec06e49b9",     # Hopper F (before the producers' stage wait)
                  "b64b2f6e5900b567": "ebf66703f4b2b8a4",     # Hopper B (before the producers' stage wait)
                  "7ba9a9588f0da422": "41be1c4ec06e49b9",     # Hopper F (before the persistent copy engine)
                  "812acdeea5d96990": "ebf66703f4b2b8a4",     # Hopper B (before the persistent copy engine)
                  "5443a5728c287b7b": "41be1c4ec06e49b9",     # Hopper F (before tma_fill)
                  "6dc9123e93d0beb8": "ebf66703f4b2b8a4",     # Hopper B (before tma_fill)
                  "dc3b407d736d3a77": "41be1c4ec06e49b9",     # Hopper F
                  "53a711548c45f073": "ebf66703f4b2b8a4",     # Hopper B
                  # implicit_gemm_hopper_fwd.cu's padded copy-engine K tiles (TAP_K, under TMA with C % 64 != 0, which
                  # no stored config has): every distinct stored Hopper F/B config of the shipped DB and the default
                  # and two alternates of the fused, copy-engine-store and NCHW forward and the NCHW and TF32 backward
                  # on ResNet-50's layers, 571 kernels, byte-identical
                  # (bench/results/session-nov29h/cubins_identical.txt); mapped to today's digests (HOPPER_*)
                  **_hopper_renames("c9edf938d04ab711", "c0d287934a044702", "6225f923c8a8e673",
                                    "425a6819028289e3", "002425b38eb4529b", "60b760b191912200"),
                  # then a tap's last padded K tile multiplying its live k16 steps only (mma_steps<LIVE_K16>, under
                  # TMA with C % 64 != 0 again), and 32-wide forward tiles (BN = 32, a config value no stored record
                  # has): the same 430 stored-config kernels byte-identical, and the TF32 backward data's: 571 of 571
                  # (bench/results/session-nov29i/cubins_identical.txt). The padded configs' own binaries changed (fewer
                  # wgmma, the same sums): a padded config's record measured under the previous digest (a find of
                  # session nov29h's code; the shipped DB holds none) is re-keyed with its older, slower time
                  **_hopper_renames("26b4d60cc60aff55", "1e5b5aee0622ebe4", "635d86348295fc66",
                                    "112506455e2f520d", "124cec60515e2771", "710de7f522c207af"),
                  # (the live k steps alone, committed before the 32-wide tiles, and both before mma_tile and the live
                  # steps became one template, mma_steps: the same kernels, the padded and 32-wide ones too,
                  # bench/results/session-nov29i/cubins_identical.txt)
                  **_hopper_renames("dbd94c93fda84074", "efc7a5d86c53e347", "28f66de2d584866c",
                                    "2395ba04c836d781", "bf17d4cb5f479019", "86b0c62d30a69179"),
                  **_hopper_renames("7278b43c2ccf01fa", "eee4cb9abd4eb545", "679c07932422d73a",
                                    "fb4033bda0e963e9", "37d78aa2f4ce7a39", "077c71a054f10418"),
                  # then 32-deep 16-bit K tiles (ROW64, under TMA = 2, a config value no stored record has; forward,
                  # then backward data), then backward data's 32-wide tiles (BN = 32 with B_MN, which no stored record
                  # has): the same 571 stored-config kernels and the 178 padded and 32-wide ones byte-identical each
                  # time
                  # (bench/results/session-nov29j/cubins_identical.txt)
                  **_hopper_renames("17515bde694e99ca", "24c32702e23bedb1", "1c7245dd5dc8f21d",
                                    "5ad469bad81e7df5", "dcd8b5940e7d9be2", "98e9c518c31db8aa"),
                  # (the forward's 32-deep tiles alone, committed before backward data's: the same kernels)
                  **_hopper_renames("094025f9ba68c303", "84f8071062788c6b", "8c2751718da6c586",
                                    "6abfd5cf22ac93ba", "4048ab31f6336b57", "e66da20d2608b0c6"),
                  # (then backward data's 32-deep tiles, committed before its 32-wide ones: the same kernels)
                  **_hopper_renames("693a0425cc91d33e", "31cb6522f292cd96", "b4768394f07cd18f",
                                    "cebc6f760eaf3fa6", "24d9f050e4653f43", "28ebf60b6379c324"),
                  # (then backward data's 32-wide tiles, before the review's one 64-byte-swizzle descriptor for both
                  # new tile kinds: the same kernels, the 32-deep and 32-wide ones too, bench/results/session-nov29j/
                  # cubins_identical.txt)
                  **_hopper_renames("28457f3e1c572cc6", "6f6aac621b04b252", "6f227627fc72e22b",
                                    "3b75b9c363a6f407", "9027f1b371eafcad", "9d2d24c4797dc750"),
                  # implicit_gemm_hopper_wrw.cu's padded columns (W_PAD, under TMA with C % 64 != 0, which no stored
                  # config has): every distinct stored Hopper W config of the shipped DB and the NCHW W's default and
                  # two alternates on ResNet-50's layers, 401 kernels, byte-identical
                  # (bench/results/session-nov29h/cubins_identical.txt)
                  "029156cac0a10315": "da8be2afb7bae76e",     # Hopper W
                  "87dcdc3b04e763fe": "35740b06e8f5316b",     # the NCHW W
                  # implicit_gemm_hopper_fwd_tma_store.cu's 32-wide output boxes (under BN < 64, which no stored config
                  # has): the store's find configs and a sample of its 64-deep space on nine ResNet-, Inception-,
                  # MobileNetV2- and DenseNet-like layers, FP16 and BF16, 152 kernels, byte-identical
                  # (bench/results/session-nov30a/cubins_tstore.txt)
                  "b6cd2a958a912a11": HOPPER_TMA_STORE,       # the copy-engine-store F
                  # implicit_gemm_hopper_fwd.cu's resident B on the copy engine, F and B (under PERSIST == 2, which
                  # no stored config has): every distinct stored Hopper F/B config of the shipped DB on its first
                  # problem, and the find configs of padded, 32-deep, 32-wide, TF32, split, fused, store and NCHW
                  # cases, 285 kernels, byte-identical (bench/results/session-nov30b/cubins_fwd.txt)
                  **_hopper_renames("cc49278500e60d65", "37760f6068b2ccfa", "455eef9b5f4758e2",
                                    "9d2d60f172e16739", "5f0b72a135020ce5", "1b5199531b599268"),
                  # then the forward's 192-wide tiles (wgmma_n192 under BN == 192, which no stored config has): the
                  # same kinds of configs as above, the resident-B twins included, 305 kernels, byte-identical
                  # (bench/results/session-nov30c/cubins_fwd.txt)
                  **_hopper_renames("04d27802a41fa6ea", "cfa857b8bc2938d3", "d5d455a605a98563",
                                    "a81990ce17be6b68", "25668da61d572e37", "e6db274e7127b51a"),
                  # then backward data's 192-wide tiles (the static_asserts admit BN == 192 with B_MN, which no stored
                  # config has): the same kinds of configs, 305 kernels, byte-identical
                  # (bench/results/session-nov30d/cubins_fwd.txt)
                  **_hopper_renames("743c9abee3d8f68b", "4bee0c38372b22e3", "a018265d745135df",
                                    "d6253cc6b2bf0638", "2002b46e71096445", "e4191c6f10e1974c"),
                  # then tma_fill's and tma_fill_b's filter boxes as one helper (tma_filter_tile): those 305 kernels
                  # and 338 more of resident, 192-wide and copy-engine F and B configs, byte-identical
                  # (bench/results/session-nov30d/cubins_filter_tile.txt)
                  **_hopper_renames("c5de84d0d00f37c5", "bf76525cf7aa1c3c", "9ca47d5624df2b58",
                                    "27b6c242d03ddcc8", "63a1a471ef5da65b", "d513245d7bdecd16")}
# Hopper W's earlier digests are not renamed: the reduce-scatter cluster split changed the binaries of its CLUSTER > 1
# configs (bench/results/session-wrw/cubins_w.txt), so records under them are re-measured; the shipped DB's were.
# Since the programmatic dependent launches (griddepcontrol in the Hopper F/B/W kernels, solver versions bumped) the
# Hopper entries above rename to nothing: today's digests differ from their targets, and the records under them were
# re-measured (bench/results/session-pdl/).


def renamed_trust_changes() -> dict[tuple[str, str], str]:
    """The trust keys of records written before a SOURCE_RENAMES edit (same ``version``), mapped to
    today's keys."""
    from ..registry import registry
    from ..trust import parse_key, trust_key

    out = {}
    for row in registry():
        if row.solver is None:
            continue
        key = trust_key(row.solver)
        for old, new in SOURCE_RENAMES.items():
            if parse_key(key)["src"] == new:
                out[(row.id, key.replace(f"src={new}", f"src={old}", 1))] = key
    return out


def legacy_trust_changes() -> dict[tuple[str, str], str]:
    """The kernel hashes miofind 0.1.0 wrote, mapped to today's trust keys, for the solvers whose
    kernel sources are unchanged since (legacy_trust.json: the hash, the source digest and library
    versions the shipped records were measured with; a digest SOURCE_RENAMES replaced counts as
    unchanged) and whose ``version`` is still 1."""
    import json
    from importlib import resources

    from ..registry import registry
    from ..trust import source_digest

    table = json.loads(resources.files("miofind.db").joinpath("legacy_trust.json").read_text())["solvers"]
    out = {}
    for row in registry():
        s, old = row.solver, table.get(row.id)
        if s is None or old is None or s.version != 1:
            continue
        src = source_digest(getattr(s, "kernel_files", ()))
        if src != SOURCE_RENAMES.get(old["src"], old["src"]):
            continue
        key = ";".join([f"src={src}", "v=1"] + [f"{k}={v}" for k, v in sorted(old["libs"].items())])
        out[(row.id, old["kernel_hash"])] = key
    return out


def migrate_trust_keys(db: FindDB) -> dict[str, int]:
    """Give the records a 0.1.0 miofind wrote (kernel hashes) today's trust keys where their kernel
    sources are byte-identical to today's, and the records written before a SOURCE_RENAMES edit
    theirs, so they stay trusted; returns the rows changed per table."""
    return db.rekey({**legacy_trust_changes(), **renamed_trust_changes()})


def trust_summary(db: FindDB) -> dict[str, dict[str, int]]:
    """Per solver, how many find records and tuned configs the installed code trusts: counts of
    "yes", "no" and "unknown" (a library version this machine cannot read, e.g. without a GPU)."""
    checker = RecordChecker()
    out: dict[str, dict[str, int]] = {}
    for kind in ("find", "perf"):
        for row in _read_rows(db, kind):
            if row.obj is None:
                continue
            verdict = checker.trusted(row)[0]
            counts = out.setdefault(row.solver_id, {"yes": 0, "no": 0, "unknown": 0})
            counts[verdict] += 1
    return dict(sorted(out.items()))
