"""FindDB verify / prune (CPU only), on SQLite and PostgreSQL."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from miofind import __version__
from miofind.trust import trust_key as kernel_hash
from miofind.db import FindDB, FindDBError
from miofind.db import findb as findb_mod
from miofind.db.findb import PerfRecord, Record, TuneFailure
from miofind.db.maintenance import Problem, prune_db, verify_db
from miofind.problem import ProblemDescription
from miofind.registry import get_solver

DEV = "sm_90-132"
P_F = ProblemDescription.make("F", n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
P_T = ProblemDescription.make("F", n=8, c=16, k=32, in_size=(14, 14), filter_size=3, pads=1, strides=2,
                              transposed=True)
P_U = ProblemDescription.make("F", n=8, c=32, k=32, in_size=(14, 14), filter_size=1)
KEY, KEY_T, KEY_U = P_F.key(), P_T.key(), P_U.key()
BAD_KEY = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-Q"
NAIVE, IGEMM, WINO, GEMM = "ConvDirectNaiveConvFwd", "ConvImplicitGemmFwd", "ConvWinograd3x3F23Fwd", "GemmFwdRest"


def kh(sid: str) -> str:
    return kernel_hash(get_solver(sid))


def ws(sid: str, p=P_F, config=None) -> int:
    return get_solver(sid).workspace_bytes(p, config)


def rec(solver: str, key: str = KEY, **kw) -> Record:
    """A record this miofind trusts unless told otherwise."""
    base = dict(device=DEV, device_name="H100", problem_key=key, solver_id=solver, algorithm="x", time_ms=1.0,
                workspace_bytes=0, package_version=__version__, cuda_version="13.0")
    if "kernel_hash" not in kw:
        try:
            base["kernel_hash"] = kh(solver)
        except ValueError:
            base["kernel_hash"] = "none"
    base.update(kw)
    return Record(**base)


def perf(solver: str = IGEMM, key: str = KEY, config=None, **kw) -> PerfRecord:
    base = dict(device=DEV, problem_key=key, solver_id=solver, time_ms=0.5,
                config=config if config is not None else get_solver(IGEMM).default_config(P_F),
                package_version=__version__, kernel_hash=kh(IGEMM) if solver == IGEMM else "x")
    base.update(kw)
    return PerfRecord(**base)


def fail(solver: str = IGEMM, cfg=None, **kw) -> TuneFailure:
    base = dict(device=DEV, problem_key=KEY, solver_id=solver, config=cfg or {"BM": 1}, stage="compile",
                reason="boom", kernel_hash=kh(IGEMM))
    base.update(kw)
    return TuneFailure(**base)


IG_CFG = get_solver(IGEMM).default_config(P_F)
IGB_CFG = get_solver("ConvImplicitGemmBwd").default_config(P_T)

GOOD = [
    rec(NAIVE),
    rec(IGEMM, config=IG_CFG, workspace_bytes=ws(IGEMM, config=IG_CFG)),
    rec(WINO, workspace_bytes=ws(WINO), time_q20_ms=1.0, time_q80_ms=1.5),   # spread 1.5x: not flagged
    # a transposed problem: solvers see it as the equivalent backward-data convolution
    rec("ConvDirectNaiveConvBwd", key=KEY_T),
    rec("ConvImplicitGemmBwd", key=KEY_T, config=IGB_CFG, workspace_bytes=ws("ConvImplicitGemmBwd", P_T, IGB_CFG)),
    rec("GemmBwdRest", key=KEY_T, workspace_bytes=ws("GemmBwdRest", P_T)),
]
BAD = {  # check -> record
    "bad key": rec(NAIVE, key=BAD_KEY),
    "unknown solver": rec("ConvOclDirectFwd1x1"),
    "not applicable": rec("ConvDirectNaiveConvBwd"),
    "invalid config": rec("ConvFFTFwd", config={"FT": 3}),
    "workspace": rec(GEMM, workspace_bytes=ws(GEMM) + 4096),
    # most timed runs disturbed (a shipped record had these figures): pruned, a find measures it again
    "unstable timing": rec("GemmFwd1x1_0_1", key=KEY_U, workspace_bytes=ws("GemmFwd1x1_0_1", P_U), time_ms=10.37,
                           time_q20_ms=0.02, time_q80_ms=10.59),
}
STALE = [rec("ConvDirectTiledFwd", kernel_hash="src=00000000deadbeef;v=1"),  # other kernel sources
         rec("ConvWinograd3x3F43Fwd", kernel_hash="0123456789abcdef", workspace_bytes=ws("ConvWinograd3x3F43Fwd"))]


def fill(db: FindDB) -> None:
    db.store(GOOD + list(BAD.values()) + STALE)
    db.store_perf([perf(), perf("ConvImplicitGemmBwd", key=KEY_T, config={"BM": 3}),  # invalid config
                   perf(NAIVE, config={"x": 1}),                           # not tunable: no config validates
                   perf("ConvFFTFwd", config=get_solver("ConvFFTFwd").default_config(P_F), kernel_hash="old")])
    db.store_failures([fail(cfg={"BM": 1}), fail(cfg={"BM": 2}, kernel_hash="old"),
                       fail("ConvOclDirectFwd1x1", kernel_hash="x"), fail(cfg={"BM": 4}, problem_key=BAD_KEY)])


def test_good_records_verify_clean(anydb):
    anydb.store(GOOD)
    anydb.store_perf([perf()])
    assert verify_db(anydb) == []
    rep = prune_db(anydb)
    assert rep.counts == {} and rep.total == 0
    assert len(list(anydb.iter_records())) == len(GOOD)


def test_verify_flags_each_problem(anydb):
    fill(anydb)
    probs = verify_db(anydb)
    assert all(isinstance(p, Problem) for p in probs)
    find = {p.check: p for p in probs if p.kind == "find"}
    assert set(find) == set(BAD), probs
    for check, r in BAD.items():
        p = find[check]
        assert (p.device, p.key, p.solver_id) == (r.device, r.problem_key, r.solver_id)
    assert "direction F not supported" in find["not applicable"].message
    assert "ConvOclDirectFwd1x1" in find["unknown solver"].message
    assert "direction='Q'" in find["bad key"].message
    assert '{"FT":3}' in find["invalid config"].message
    assert str(ws(GEMM) + 4096) in find["workspace"].message and str(ws(GEMM)) in find["workspace"].message
    assert "0.02 ms (20%) to 10.59 ms (80%)" in find["unstable timing"].message
    perf_probs = sorted((p.solver_id, p.key, p.check) for p in probs if p.kind == "perf")
    assert perf_probs == sorted([("ConvImplicitGemmBwd", KEY_T, "invalid config"), (NAIVE, KEY, "invalid config")])
    assert len(probs) == len(BAD) + 2  # stale records and failed configs are not verify problems


def test_check_record_is_what_verify_flags(anydb):
    """RecordChecker.check_record (what `db import` runs before storing) flags a record exactly as
    verify_db flags it once stored, so verify never flags what an import accepted."""
    from miofind.db.maintenance import RecordChecker

    fill(anydb)
    stored = {(p.kind, p.device, p.key, p.solver_id, p.check, p.message) for p in verify_db(anydb)}
    checker = RecordChecker()
    before = {(p.kind, p.device, p.key, p.solver_id, p.check, p.message)
              for kind, objs in (("find", anydb.iter_records()), ("perf", anydb.iter_perf()))
              for r in objs for p in checker.check_record(kind, r)}
    assert before == stored and len(stored) == len(BAD) + 2


def test_prune_removes_exactly_flagged_and_stale(anydb):
    fill(anydb)
    before = {r.db_key for r in anydb.iter_records()}
    rep = prune_db(anydb, dry_run=True)
    assert rep.dry_run
    assert {r.db_key for r in anydb.iter_records()} == before  # dry run deletes nothing
    assert len(list(anydb.iter_perf())) == 4 and len(list(anydb.iter_failures())) == 4
    expect = {**{f"find: {c}": 1 for c in BAD}, "find: stale": 2, "perf: invalid config": 2, "perf: stale": 1,
              "failures: stale": 1, "failures: unknown solver": 1, "failures: bad key": 1}
    assert rep.counts == expect
    assert rep.total == sum(expect.values())

    rep2 = prune_db(anydb)
    assert not rep2.dry_run and rep2.counts == expect
    assert sorted(r.db_key for r in anydb.iter_records()) == sorted(r.db_key for r in GOOD)
    assert [(p.solver_id, p.problem_key) for p in anydb.iter_perf()] == [(IGEMM, KEY)]
    assert [f.config for f in anydb.iter_failures()] == [{"BM": 1}]
    assert verify_db(anydb) == []
    assert prune_db(anydb).total == 0


def test_prune_keep_stale(anydb):
    fill(anydb)
    rep = prune_db(anydb, stale=False)
    assert not any(k.endswith("stale") for k in rep.counts)
    left = {r.solver_id for r in anydb.iter_records()}
    assert {"ConvDirectTiledFwd", "ConvWinograd3x3F43Fwd"} <= left
    assert len(list(anydb.iter_failures())) == 2  # the stale-hash failure stays; unknown solver / bad key go


def test_invalid_rows_are_reported_and_pruned(anydb):
    anydb.store(GOOD[:1])
    row = dict(device=DEV, device_name="H100", problem_key=KEY, solver_id=WINO, algorithm="x", time_ms=-5.0,
               workspace_bytes=0, config=None, verified=False, package_version=__version__,
               kernel_hash="k", driver_version="", cuda_version="", cupy_version="", created_at=1.0)
    eng = sa.create_engine(anydb.url)
    try:
        with eng.begin() as con:
            con.execute(sa.insert(findb_mod._records).values(row))
    finally:
        eng.dispose()
    with pytest.warns(findb_mod.FindDBWarning):
        assert len(list(anydb.iter_records())) == 1  # FindDB skips the row it cannot read
    (p,) = verify_db(anydb)
    assert (p.check, p.solver_id) == ("invalid row", WINO) and "time_ms" in p.message
    assert prune_db(anydb).counts == {"find: invalid row": 1}
    assert verify_db(anydb) == []


def test_prune_spares_a_record_rewritten_meanwhile(anydb, monkeypatch):
    from miofind.db import maintenance

    anydb.store([BAD["not applicable"]])
    real = maintenance._verify

    def verify_then_rewrite(db, checker):
        out = real(db, checker)
        db.store([rec("ConvDirectNaiveConvBwd", created_at=time.time() + 100)])  # a concurrent writer
        return out
    monkeypatch.setattr(maintenance, "_verify", verify_then_rewrite)
    rep = prune_db(anydb)
    assert rep.counts == {"find: not applicable": 1}
    assert len(list(anydb.iter_records())) == 1  # the newer row was not the one examined


def test_retired_solver(anydb, monkeypatch):
    import miofind.registry as reg
    from miofind.solver import SolverInfo

    rows = reg.registry()
    monkeypatch.setattr(reg, "registry", lambda: rows + (SolverInfo(99, "ConvRetiredFwd", None),))
    anydb.store([rec("ConvRetiredFwd")])
    (p,) = verify_db(anydb)
    assert p.check == "retired solver"
    assert prune_db(anydb).counts == {"find: retired solver": 1}


def test_prune_readonly(tmp_path):
    path = str(tmp_path / "x.sqlite")
    with FindDB(path) as d:
        fill(d)
    with FindDB(path, readonly=True) as ro:
        assert prune_db(ro, dry_run=True).total > 0
        with pytest.raises(FindDBError, match="read-only"):
            prune_db(ro)


def test_verify_10k_records_takes_seconds(tmp_path):
    import dataclasses

    recs = []
    for n in range(1, 201):  # 200 problems x 5 solvers
        p = ProblemDescription.make("F", n=n, c=16, k=16, in_size=(14, 14), filter_size=3, pads=1)
        for sid in (NAIVE, IGEMM, WINO, GEMM, "ConvDirectTiledFwd"):
            cfg = get_solver(sid).default_config(p)
            recs.append(rec(sid, key=p.key(), config=cfg, workspace_bytes=get_solver(sid).workspace_bytes(p, cfg)))
    many = [dataclasses.replace(r, device=f"sm_90-{d}") for d in range(10) for r in recs]  # on 10 devices
    assert len(many) == 10_000
    with FindDB(str(tmp_path / "big.sqlite")) as d:
        d.store(many)
        t0 = time.perf_counter()
        assert verify_db(d) == []
        took = time.perf_counter() - t0
    assert took < 15, took


def test_cudnn_records_not_judged_by_what_this_machine_lacks(anydb):
    """Without the cuDNN frontend, cuDNN records are not flagged as not applicable; their workspace
    (known only after building the plan on the GPU) is never checked; their config shape still is."""
    key2 = ProblemDescription.make("F", n=4, c=8, k=8, in_size=(20, 20), filter_size=3, pads=1).key()
    anydb.store([rec("ConvCudnnFwd", config={"plan": "eng0_k2=1"}, workspace_bytes=12345),
                 rec("ConvCudnnFwd", key=key2, config={"engine": 3})])
    probs = verify_db(anydb)
    assert [(p.key, p.check) for p in probs] == [(key2, "invalid config")]


# -- recorded find failures -------------------------------------------------------------------------

def ffail(solver: str = IGEMM, key: str = KEY, config=None, **kw):
    from miofind.db.findb import FindFailure

    base = dict(device=DEV, problem_key=key, solver_id=solver, config=config, stage="verify", reason="boom",
                kernel_hash=kh(solver) if solver in (IGEMM, NAIVE, WINO, "ConvFFTFwd") else "x", cuda_version="13.0")
    base.update(kw)
    return FindFailure(**base)


def _store_ffail(db, *fs):
    for f in fs:
        db.store_find_failures(f.device, f.problem_key, [f.solver_id], [f])


def test_prune_removes_find_failures_of_an_older_trust_key(anydb, monkeypatch, request):
    """A find failure under another trust key than the solver's current one is stale: pruned (a find
    measures that candidate again anyway); one under the current key stays, as does one whose library
    version cannot be read here (cuFFT without a GPU); bad keys and unknown solvers go."""
    from miofind.solvers import fft_cufft

    # cuFFT's version unreadable, as on a machine without the library (CI's venv has it)
    monkeypatch.setattr(fft_cufft, "version", lambda: None)
    kernel_hash.cache_clear()
    request.addfinalizer(kernel_hash.cache_clear)   # keys cached without cuFFT's version must not outlive the patch
    fft_gpu_key = kh("ConvFFTFwd").replace("cufft=?", "cufft=12000")
    assert fft_gpu_key != kh("ConvFFTFwd")   # the CPU key cannot read cuFFT's version
    _store_ffail(anydb,
                 ffail(IGEMM),                                                    # current: stays
                 ffail(NAIVE, kernel_hash="src=00000000deadbeef;v=1"),            # older source: stale
                 ffail(WINO, kernel_hash=kh(WINO).replace("v=1", "v=0")),         # older version: stale
                 ffail("ConvFFTFwd", kernel_hash=fft_gpu_key),                    # library unknown here: stays
                 ffail("ConvOclDirectFwd1x1"),                                    # unknown solver
                 ffail(IGEMM, key=BAD_KEY))                                       # bad key
    rows = lambda: sorted((f.solver_id, f.problem_key) for f in  # noqa: E731
                          [*anydb.find_failures(DEV, KEY), *anydb.find_failures(DEV, BAD_KEY)])
    assert len(rows()) == 6
    expect = {"find_failures: stale": 2, "find_failures: unknown solver": 1, "find_failures: bad key": 1}
    assert prune_db(anydb, dry_run=True).counts == expect and len(rows()) == 6
    kept = prune_db(anydb, stale=False)
    assert kept.counts == {"find_failures: unknown solver": 1, "find_failures: bad key": 1}
    assert rows() == sorted([("ConvFFTFwd", KEY), (IGEMM, KEY), (NAIVE, KEY), (WINO, KEY)])
    rep = prune_db(anydb)
    assert rep.counts == {"find_failures: stale": 2} and rep.total == 2
    assert rows() == sorted([("ConvFFTFwd", KEY), (IGEMM, KEY)])
    assert prune_db(anydb).total == 0


def test_prune_dry_run_of_a_schema_2_file_read_only(tmp_path):
    """A read-only handle on a schema-2 file (no find_failures table) prunes dry without error and
    without writing."""
    from db_files import downgrade_to_schema_2

    path = tmp_path / "v2.sqlite"
    with FindDB(str(path)) as d:
        fill(d)
    downgrade_to_schema_2(path)
    before = path.read_bytes()
    with FindDB(str(path), readonly=True) as ro:
        rep = prune_db(ro, dry_run=True)
        assert rep.total > 0 and not any(k.startswith("find_failures") for k in rep.counts)
    assert path.read_bytes() == before
