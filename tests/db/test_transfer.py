"""FindDB export / import / merge (CPU only), on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import io
import json
import re
from pathlib import Path

import pytest

from miofind.db import FindDB
from miofind.db import transfer
from miofind.db.findb import PerfRecord, Record
from miofind.db.transfer import ImportReport, export_records, import_records, merge_into
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from records import DEV, rec

DEV2 = "sm_80-108"
P_F = ProblemDescription.make("F", n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
P_B = ProblemDescription.make("B", n=16, c=32, k=64, in_size=(28, 28), filter_size=3, pads=1)
KEY, KEY_B = P_F.key(), P_B.key()  # records.KEY is P_F's key
IGEMM = "ConvImplicitGemmFwd"
IGEMM_CFG = get_solver(IGEMM).default_config(P_F)
# MIOpen's text FindDB line: KEY=Solver:time,workspace,algorithm;...
MIOPEN_LINE = re.compile(r"^[0-9A-Za-z_x\-]+=([A-Za-z0-9_]+:\d+(\.\d+)?(e[-+]\d+)?,\d+,[A-Za-z0-9_]+)"
                         r"(;[A-Za-z0-9_]+:\d+(\.\d+)?(e[-+]\d+)?,\d+,[A-Za-z0-9_]+)*$")


def perf(solver: str = IGEMM, t: float = 0.5, key: str = KEY, device: str = DEV, **kw) -> PerfRecord:
    base = dict(device=device, problem_key=key, solver_id=solver, config=dict(IGEMM_CFG), time_ms=t,
                default_time_ms=0.7, strategy="random", configs_tried=17, tune_seconds=3.25,
                device_name="NVIDIA H100 80GB HBM3", package_version="0.1.0", kernel_hash="abc", cuda_version="13.0")
    base.update(kw)
    return PerfRecord(**base)


def sample_records() -> list[Record]:
    return [
        rec("ConvDirectNaiveConvFwd", 2.718281828459045, created_at=1700000000.123456789),
        rec(IGEMM, 0.1 + 0.2, config=dict(IGEMM_CFG), verified=True, max_error=1.2345678901234567e-7,
            driver_version="580.65", cupy_version="14.0.0", time_q20_ms=0.29, time_q80_ms=0.31, created_at=1.5),
        rec("ConvWinograd3x3F23Fwd", 1e-5, workspace_bytes=205783040, algorithm="miopenConvolutionFwdAlgoWinograd"),
        rec("ConvDirectNaiveConvBwd", 3.0, key=KEY_B, algorithm="miopenConvolutionBwdDataAlgoDirect"),
        rec("ConvDirectNaiveConvFwd", 1 / 3, device=DEV2, device_name="A100", created_at=2.0),
    ]


def all_records(db: FindDB) -> list[Record]:
    return sorted(db.iter_records(), key=lambda r: r.db_key)


def all_perf(db: FindDB) -> list[PerfRecord]:
    return sorted(db.iter_perf(), key=lambda r: r.db_key)


# -- miofind format ---------------------------------------------------------------------------------

SIGN_KEY = b"a shared secret of 32 bytes long"


def test_signed_miofind_round_trip_is_identical(anydb, tmp_path):
    recs = sample_records()
    perfs = [perf(), perf(IGEMM, 0.3 + 1e-12, device=DEV2, default_time_ms=None, created_at=3.0)]
    anydb.store(recs)
    anydb.store_perf(perfs)
    buf = io.StringIO()
    n = export_records(anydb, buf, fmt="miofind", sign_key=SIGN_KEY)
    lines = buf.getvalue().splitlines()
    assert n == len(lines) == 1 + len(recs) + len(perfs) + 1
    assert json.loads(lines[0]) == {"format": "miofind-db", "version": 1}
    assert [json.loads(ln)["type"] for ln in lines[1:]] == ["find"] * len(recs) + ["perf"] * len(perfs) + ["signature"]
    sig = json.loads(lines[-1])
    assert sig["algorithm"] == "hmac-sha256" and sig["lines"] == n - 1
    assert sig["hmac"] == hmac.new(SIGN_KEY, "".join(ln + "\n" for ln in lines[:-1]).encode(), hashlib.sha256).hexdigest()

    with FindDB(str(tmp_path / "copy.sqlite")) as other:
        rep = import_records(other, io.StringIO(buf.getvalue()), fmt="miofind", sign_key=SIGN_KEY)
        total = len(recs) + len(perfs)
        assert rep == ImportReport(find=len(recs), perf=len(perfs), skipped=[], trusted=total)
        assert all_records(other) == sorted(recs, key=lambda r: r.db_key)
        assert all_perf(other) == sorted(perfs, key=lambda r: r.db_key)
        # and exporting the copy gives the same bytes (deterministic order)
        buf2 = io.StringIO()
        export_records(other, buf2, fmt="miofind", sign_key=SIGN_KEY)
        assert buf2.getvalue() == buf.getvalue()

    # back into a fresh database of the same backend: records come back equal (floats bit for bit)
    anydb.delete()
    anydb.delete(what="perf")
    rep = import_records(anydb, io.BytesIO(buf.getvalue().encode()), sign_key=SIGN_KEY)
    assert (rep.find, rep.perf, rep.skipped, rep.trusted) == (len(recs), len(perfs), [], len(recs) + len(perfs))
    got = all_records(anydb)
    assert got == sorted(recs, key=lambda r: r.db_key)
    assert [r.time_ms for r in got] == [r.time_ms for r in sorted(recs, key=lambda r: r.db_key)]
    assert all_perf(anydb) == sorted(perfs, key=lambda r: r.db_key)


def test_unsigned_import_is_stored_untrusted(anydb, tmp_path):
    """Without a (matching) signature every record keeps its values but loses trust: verified=False
    and the trust key "imported:<key>"; a signed file imported without the key likewise."""
    recs = sample_records()
    perfs = [perf()]
    with FindDB(str(tmp_path / "src.sqlite")) as src:
        src.store(recs)
        src.store_perf(perfs)
        plain, signed = io.StringIO(), io.StringIO()
        export_records(src, plain)
        export_records(src, signed, sign_key=SIGN_KEY)
    for text, notes in ((plain.getvalue(), 0), (signed.getvalue(), 1)):
        anydb.delete()
        anydb.delete(what="perf")
        rep = import_records(anydb, io.StringIO(text))
        assert (rep.find, rep.perf, rep.trusted, rep.skipped) == (len(recs), len(perfs), 0, [])
        assert len(rep.notes) == notes and (not notes or "no key was given" in rep.notes[0])
        want = sorted((dataclasses.replace(r, verified=False, kernel_hash="imported:" + r.kernel_hash) for r in recs),
                      key=lambda r: r.db_key)
        assert all_records(anydb) == want
        assert all_perf(anydb) == [dataclasses.replace(perfs[0], kernel_hash="imported:abc")]
    # importing an export of imported records does not stack prefixes
    again = io.StringIO()
    export_records(anydb, again)
    anydb.delete()
    import_records(anydb, io.StringIO(again.getvalue()))
    assert {r.kernel_hash for r in anydb.iter_records()} == {"imported:abc"}


def test_miofind_export_one_device_and_failures_left_out(anydb):
    from miofind.db.findb import TuneFailure

    anydb.store(sample_records())
    anydb.store_failures([TuneFailure(device=DEV, problem_key=KEY, solver_id=IGEMM, config={"BM": 1},
                                      stage="compile", reason="boom")])
    buf = io.StringIO()
    export_records(anydb, buf, device=DEV2)
    objs = [json.loads(ln) for ln in buf.getvalue().splitlines()[1:]]
    assert [(o["type"], o["device"]) for o in objs] == [("find", DEV2)]


def test_miofind_import_device_filter(tmp_path):
    with FindDB(str(tmp_path / "a.sqlite")) as a, FindDB(str(tmp_path / "b.sqlite")) as b:
        a.store(sample_records())
        buf = io.StringIO()
        export_records(a, buf)
        rep = import_records(b, io.StringIO(buf.getvalue()), device=DEV2)
        assert rep.find == 1 and len(rep.skipped) == 4
        assert all("is not the requested" in s for s in rep.skipped)
        assert [r.device for r in b.iter_records()] == [DEV2]


def _good_line(**over) -> str:
    obj = {"type": "find", **{f: getattr(rec(), f) for f in transfer._RECORD_FIELDS}}
    obj.update(over)
    return json.dumps(obj)


def test_malformed_miofind_lines_are_skipped_with_reasons(anydb):
    header = json.dumps(transfer.HEADER)
    good = [_good_line(solver_id="ConvDirectNaiveConvFwd", time_ms=1.25),
            _good_line(solver_id="ConvWinograd3x3F23Fwd", time_ms=0.5, workspace_bytes=205783040)]
    bad = {
        "not valid JSON": '{"type": "find", "device": ',
        "time_ms=-1.0: must not be negative": _good_line(solver_id="GemmFwdRest", time_ms=-1.0),
        "time_ms={'a': 1}: expected a number": _good_line(solver_id="GemmFwdRest", time_ms={"a": 1}),
        "workspace_bytes=[1]: expected an integer": _good_line(solver_id="GemmFwdRest", workspace_bytes=[1]),
        "problem_key": _good_line(problem_key="64-56-56-3x3-garbage"),
        "groups=1 must not be written": _good_line(problem_key=KEY + "_g1"),
        "time_ms=nan: expected a finite number": _good_line(solver_id="GemmFwdRest", time_ms=float("nan")),
        "max_error=nan": _good_line(solver_id="GemmFwdRest", max_error=float("nan")),
        "unknown solver": _good_line(solver_id="ConvOclDirectFwd1x1"),
        "unknown field(s) 'evil'": _good_line(evil="__import__('os')"),
        "type='pickle'": _good_line(type="pickle"),
        "expected a JSON object": "[1, 2, 3]",
        "expected a bool": _good_line(solver_id="GemmFwdRest", verified="yes"),
        "device_name=": _good_line(solver_id="GemmFwdRest", device_name=7),
        "config=": _good_line(solver_id="GemmFwdRest", config=[1, 2]),
        "too large": _good_line(solver_id="GemmFwdRest", workspace_bytes=2**70),
        "NUL": _good_line(solver_id="GemmFwdRest", algorithm="a\x00b"),
        "more than the 64": _good_line(solver_id="GemmFwdRest", device="d" * 100),
        "solver_id=7: expected a string": _good_line(solver_id=7),
    }
    lines = [header, good[0], *bad.values(), "", good[1]]
    rep = import_records(anydb, io.StringIO("\n".join(lines) + "\n"))
    assert (rep.find, rep.perf) == (2, 0), rep.skipped
    assert len(rep.skipped) == len(bad), rep.skipped
    for no, (why, skipped) in enumerate(zip(bad, rep.skipped), 3):
        assert skipped.startswith(f"line {no}: ") and why in skipped, (why, skipped)
    got = sorted((r.solver_id, r.time_ms) for r in anydb.iter_records())
    assert got == [("ConvDirectNaiveConvFwd", 1.25), ("ConvWinograd3x3F23Fwd", 0.5)]


def test_bad_bytes_and_batches(tmp_path, monkeypatch):
    monkeypatch.setattr(transfer, "BATCH", 3)
    lines = [json.dumps(transfer.HEADER).encode()]
    for i in range(10):
        lines.append(_good_line(problem_key=ProblemDescription.make("F", n=i + 1, c=8, k=8, in_size=(9, 9)).key())
                     .encode())
    lines.insert(4, b'{"type": "find", "device": "\xff\xfe"}')
    with FindDB(str(tmp_path / "x.sqlite")) as d:
        rep = import_records(d, io.BytesIO(b"\n".join(lines)))
        assert rep.find == 10 and len(rep.skipped) == 1 and rep.skipped[0].startswith("line 5: not UTF-8")
        assert len(list(d.iter_records())) == 10


def test_a_record_the_database_refuses_stops_the_import_and_names_its_line(anydb, monkeypatch):
    """Were a bad value to get past validation, the database's refusal is fatal: nothing is written,
    not even the good lines before it, and the error names the line."""
    from miofind.db import FindDBError

    keys = [ProblemDescription.make("F", n=i + 1, c=8, k=8, in_size=(9, 9)).key() for i in range(6)]
    anydb.store([rec(key=keys[0], time_ms=9.0, verified=True)])
    lines = [json.dumps(transfer.HEADER)] + [_good_line(problem_key=k) for k in keys]
    if anydb.url.startswith("postgresql"):  # PostgreSQL refuses a NUL in text
        monkeypatch.setattr(transfer, "_column_problem", lambda obj, table: None)
        lines[4] = _good_line(problem_key=keys[3], algorithm="a\x00b")
    else:  # SQLite refuses nothing we could send, so a trigger plays the refusing database
        with anydb._engine.begin() as con:
            con.exec_driver_sql("CREATE TRIGGER refuse BEFORE INSERT ON find_records WHEN NEW.time_ms = 0.125 "
                                "BEGIN SELECT RAISE(ABORT, 'refused by the test trigger'); END")
        lines[4] = _good_line(problem_key=keys[3], time_ms=0.125)
    monkeypatch.setattr(transfer, "BATCH", 2)  # the refused row is in the second statement
    with pytest.raises(FindDBError, match=r"^line 5: the database refused it: .*nothing imported"):
        import_records(anydb, io.StringIO("\n".join(lines)))
    assert [(r.problem_key, r.time_ms, r.verified) for r in anydb.iter_records()] == [(keys[0], 9.0, True)]


@pytest.mark.parametrize("first", [
    '{"format": "miofind-db", "version": 2}',
    '{"format": "other", "version": 1}',
    '{"format": "miofind-db", "version": true}',
    '{"format": "miofind-db"}',
    _good_line(),  # no header at all
    "not json",
])
def test_unknown_header_raises(tmp_path, first):
    with FindDB(str(tmp_path / "x.sqlite")) as d:
        with pytest.raises(ValueError, match="line 1"):
            import_records(d, io.StringIO(first + "\n" + _good_line() + "\n"))
        assert list(d.iter_records()) == []


def test_byte_order_mark_is_ignored(tmp_path):
    with FindDB(str(tmp_path / "x.sqlite")) as d:
        text = "\ufeff" + json.dumps(transfer.HEADER) + "\n" + _good_line() + "\n"
        assert import_records(d, io.BytesIO(text.encode())).find == 1
        text = "\ufeff" + f"{KEY_B}=ConvDirectNaiveConvBwd:1.0,0,x\n"
        assert import_records(d, io.StringIO(text), fmt="miopen", device=DEV).find == 1


def test_bad_arguments(tmp_path):
    with FindDB(str(tmp_path / "x.sqlite")) as d:
        with pytest.raises(ValueError, match="fmt="):
            export_records(d, io.StringIO(), fmt="csv")
        with pytest.raises(ValueError, match="fmt="):
            import_records(d, io.StringIO(), fmt="csv")
        with pytest.raises(ValueError, match="device"):
            import_records(d, io.StringIO(f"{KEY}=ConvDirectNaiveConvFwd:1.0,0,x\n"), fmt="miopen")
        assert import_records(d, io.StringIO("")) == ImportReport()


# -- MIOpen format ----------------------------------------------------------------------------------

def test_miopen_export_format_and_reimport(anydb, tmp_path):
    anydb.store(sample_records())
    with pytest.raises(ValueError, match=f"device.*{DEV2}.*{DEV}|device.*{DEV}.*{DEV2}") as ei:
        export_records(anydb, io.StringIO(), fmt="miopen")
    assert "device" in str(ei.value)
    buf = io.StringIO()
    n = export_records(anydb, buf, fmt="miopen", device=DEV)
    lines = buf.getvalue().splitlines()
    assert n == len(lines) == 2
    for ln in lines:
        assert MIOPEN_LINE.match(ln), ln
    assert lines == sorted(lines)
    # fastest first within a line
    f_line = next(ln for ln in lines if ln.startswith(KEY + "="))
    assert [e.split(":")[0] for e in f_line.split("=", 1)[1].split(";")] == \
        ["ConvWinograd3x3F23Fwd", IGEMM, "ConvDirectNaiveConvFwd"]
    assert ":1e-05,205783040,miopenConvolutionFwdAlgoWinograd" in f_line

    want = {(r.problem_key, r.solver_id, r.time_ms, r.workspace_bytes, r.algorithm)
            for r in sample_records() if r.device == DEV}
    with FindDB(str(tmp_path / "m.sqlite")) as other:
        rep = import_records(other, io.StringIO(buf.getvalue()), fmt="miopen", device="sm_90-132",
                             device_name="H100")
        assert (rep.find, rep.perf, rep.skipped) == (len(want), 0, [])
        got = list(other.iter_records())
        assert {(r.problem_key, r.solver_id, r.time_ms, r.workspace_bytes, r.algorithm) for r in got} == want
        for r in got:  # untrusted hints
            assert (r.verified, r.package_version, r.kernel_hash, r.config, r.device, r.device_name) == \
                (False, "", "", None, DEV, "H100")
        from miofind.trust import is_trusted
        assert not any(is_trusted(r, get_solver(r.solver_id), "13.0")[0] for r in got)
        # a re-import never replaces what is there
        rep = import_records(other, io.StringIO(buf.getvalue()), fmt="miopen", device=DEV)
        assert rep.find == 0 and len(rep.skipped) == len(want)
        assert all("already holds" in s for s in rep.skipped)


def test_miopen_export_single_device_needs_no_device(tmp_path):
    with FindDB(str(tmp_path / "x.sqlite")) as d:
        d.store([r for r in sample_records() if r.device == DEV])
        assert export_records(d, io.StringIO(), fmt="miopen") == 2


def test_malformed_miopen_lines(anydb):
    good = f"{KEY}=ConvDirectNaiveConvFwd:0.059578,0,miopenConvolutionFwdAlgoDirect;GemmFwdRest:1e-3,231211264,miopenConvolutionFwdAlgoGEMM"
    lines = [
        good,
        "no equals sign here",                                              # 2
        "64-56-56-3x3-garbage=ConvDirectNaiveConvFwd:1.0,0,x",               # 3
        f"{KEY_B}=ConvDirectNaiveConvBwd:-1.0,0,x;ConvDirectNaiveConvBwd:nan,0,x",  # 4: two entries
        f"{KEY_B}=ConvDirectNaiveConvBwd:1.0,{{'a':1}},x",                  # 5
        f"{KEY_B}=ConvOclDirectFwd1x1:1.0,0,x;ConvWinograd3x3F23Bwd:2.5,19398656,wino",  # 6: one good
        f"{KEY_B}=ConvDirectNaiveConvBwd:1.0,0",                           # 7
        f"{KEY_B}=ConvDirectNaiveConvBwd:1_0.0,0,x",                       # 8
        f"{KEY_B}=26:1.0,0,x",                                             # 9: a number is not a solver id
        "",
    ]
    rep = import_records(anydb, io.StringIO("\n".join(lines)), fmt="miopen", device=DEV)
    assert rep.find == 3, rep.skipped
    expect = ["line 2: expected KEY=", "line 3: problem_key", "line 4: entry 1 (ConvDirectNaiveConvBwd): time_ms='-1.0'",
              "line 4: entry 2 (ConvDirectNaiveConvBwd): time_ms='nan'", "line 5: entry 1 (ConvDirectNaiveConvBwd): workspace_bytes",
              "line 6: entry 1 (ConvOclDirectFwd1x1): solver_id='ConvOclDirectFwd1x1': unknown solver",
              "line 7: entry 1 (ConvDirectNaiveConvBwd): expected Solver:", "line 8: entry 1 (ConvDirectNaiveConvBwd): time_ms",
              "line 9: entry 1 (26): solver_id='26': unknown solver"]
    assert len(rep.skipped) == len(expect), rep.skipped
    for e, s in zip(expect, rep.skipped):
        assert s.startswith(e), (e, s)
    got = sorted((r.problem_key, r.solver_id, r.time_ms) for r in anydb.iter_records())
    assert got == sorted([(KEY, "ConvDirectNaiveConvFwd", 0.059578), (KEY, "GemmFwdRest", 0.001),
                          (KEY_B, "ConvWinograd3x3F23Bwd", 2.5)])


def test_older_miopen_entry_form(anydb):
    """MIOpen's older text FindDB: algorithm:Solver,time,workspace,kcache_algorithm,kcache_config."""
    lines = [
        f"{KEY}=miopenConvolutionFwdAlgoDirect:ConvDirectNaiveConvFwd,2.5,0,miopenConvolutionFwdAlgoDirect,<unused>;"
        f"miopenConvolutionFwdAlgoGEMM:GemmFwdRest,13.3594,231211264,MIOpenGEMM,0_0_49_2048_49_49_512_2048",
        f"{KEY_B}=miopenConvolutionBwdDataAlgoDirect:ConvOclDirectFwd,6.79,0,miopenConvolutionBwdDataAlgoDirect,not used",
        f"{KEY_B}=miopenConvolutionBwdDataAlgoGEMM:GemmBwdRest,x,0,a,b;a:b,1,2,3",          # 3
    ]
    rep = import_records(anydb, io.StringIO("\n".join(lines)), fmt="miopen", device=DEV)
    got = sorted((r.problem_key, r.solver_id, r.time_ms, r.workspace_bytes, r.algorithm) for r in anydb.iter_records())
    assert got == sorted([(KEY, "ConvDirectNaiveConvFwd", 2.5, 0, "miopenConvolutionFwdAlgoDirect"),
                          (KEY, "GemmFwdRest", 13.3594, 231211264, "miopenConvolutionFwdAlgoGEMM")])
    assert rep.find == 2
    assert [s.split(":")[0] + ":" + s.split(":")[1] for s in rep.skipped] == [
        "line 2: entry 1 (ConvOclDirectFwd)", "line 3: entry 1 (GemmBwdRest)", "line 3: entry 2 (a)"]
    assert "unknown solver" in rep.skipped[0] and "time_ms='x'" in rep.skipped[1]
    assert "expected Solver:time_ms,workspace_bytes,algorithm (or algorithm:Solver," in rep.skipped[2]


# Real lines of MIOpen's shipped text FindDBs (github.com/ROCm/MIOpen, MIT license, src/kernels/ at
# commit 2d1fd997): every line of the 460 keys that did not round-trip before, up to 25 per kind with a
# solver miofind has and 3 without, and 150-200 other lines; gfx906_64 is in MIOpen's older entry form.
REAL_FILES = {"miopen_gfx90a68.HIP.fdb.txt": False, "miopen_gfx906_64.HIP.fdb.txt": True}


def _entries(path: Path, older: bool):
    """Every entry of a MIOpen file as (line, entry, key, solver, time, workspace, algorithm), from the text alone."""
    for no, line in enumerate(path.read_text().splitlines(), 1):
        key, rest = line.split("=", 1)
        for i, entry in enumerate(rest.split(";"), 1):
            head, vals = entry.split(":", 1)
            v = vals.split(",")
            solver, t, ws, algo = (v[0], v[1], v[2], head) if older else (head, *v)
            yield no, i, key, solver, float(t), int(ws), algo


@pytest.mark.parametrize("name,older", REAL_FILES.items())
def test_real_miopen_file_keeps_every_entry_verify_accepts(name, older, tmp_path):
    """Every entry is either stored or skipped with its line, entry and reason; what is stored is
    exactly what the file says and `db verify` finds nothing wrong with it; an entry is skipped only
    for an unknown solver or a check of `db verify` (AMD's workspace sizes are not ours)."""
    from miofind.db.maintenance import verify_db
    from miofind.registry import registry

    path = Path(__file__).with_name(name)
    entries = list(_entries(path, older))
    live = {r.id for r in registry() if r.solver is not None}
    with FindDB(str(tmp_path / "x.sqlite")) as d:
        with path.open("rb") as fh:
            rep = import_records(d, fh, fmt="miopen", device="gfx90a-104")
        got = {(r.problem_key, r.solver_id, r.time_ms, r.workspace_bytes, r.algorithm) for r in d.iter_records()}
        assert verify_db(d) == []
    assert rep.find == len(got) and rep.n_skipped == len(rep.skipped) == len(entries) - len(got)
    assert got <= {e[2:] for e in entries}
    skipped = {re.match(r"line (\d+): entry (\d+) ", s).groups(): s for s in rep.skipped}
    assert len(skipped) == len(rep.skipped)
    for no, i, key, solver, t, ws, algo in entries:
        why = skipped.get((str(no), str(i)))
        assert (why is None) == ((key, solver, t, ws, algo) in got), (no, i)
        if solver not in live:
            assert why.endswith(f"solver_id={solver!r}: unknown solver")
        elif why is not None:
            assert re.search(r"\(db verify: (not applicable|workspace|invalid config)\)$", why), why
    assert len(got) >= 60 and sum("(db verify: workspace)" in s for s in rep.skipped) >= 80


# -- merge ------------------------------------------------------------------------------------------

def test_merge_keeps_verified_then_faster(anydb, tmp_path):
    N, W = "ConvDirectNaiveConvFwd", "ConvWinograd3x3F23Fwd"
    G, T = "GemmFwdRest", "ConvDirectTiledFwd"
    anydb.store([rec(N, 1.0, verified=True), rec(W, 1.0, verified=False), rec(G, 2.0, verified=True)])
    anydb.store_perf([perf(t=0.5)])
    a, b = str(tmp_path / "a.sqlite"), str(tmp_path / "b.sqlite")
    with FindDB(a) as da:
        da.store([rec(N, 0.5, verified=False),           # faster but unverified: loses
                  rec(W, 2.0, verified=True),            # verified beats unverified although slower
                  rec(G, 1.5, verified=True),            # both verified, faster: wins
                  rec(T, 9.0, device=DEV2)])             # new
        da.store_perf([perf(t=0.6), perf(t=0.9, device=DEV2)])
    with FindDB(b) as dbb:
        dbb.store([rec(G, 1.2, verified=True, created_at=42.0),  # faster still: wins over a's
                   rec(W, 1.9, verified=False)])         # unverified: loses to a's verified
        dbb.store_perf([perf(t=0.25, created_at=7.0)])
    srcs = [FindDB(a, readonly=True), b]
    try:
        rep = merge_into(anydb, srcs)
    finally:
        srcs[0].close()
    assert (rep.find_considered, rep.perf_considered) == (6, 3)
    assert (rep.find_written, rep.perf_written) == (3, 2)
    assert (rep.considered, rep.written) == (9, 5)
    got = {r.db_key: r for r in anydb.iter_records()}
    assert {k[2] if k[0] == DEV else (k[0], k[2]): (r.time_ms, r.verified) for k, r in got.items()} == {
        N: (1.0, True), W: (2.0, True), G: (1.2, True), (DEV2, T): (9.0, False)}
    assert got[(DEV, KEY, G)] == rec(G, 1.2, verified=True, created_at=42.0)
    assert {(p.device, p.time_ms) for p in anydb.iter_perf()} == {(DEV, 0.25), (DEV2, 0.9)}
    # merging again changes nothing
    rep = merge_into(anydb, [a, b])
    assert rep.written == 0 and rep.considered == 9


def test_merge_readonly_source_missing(tmp_path):
    from miofind.db import FindDBError

    with FindDB(str(tmp_path / "d.sqlite")) as d:
        with pytest.raises(FindDBError, match="does not exist"):
            merge_into(d, [str(tmp_path / "nope.sqlite")])
    assert not (tmp_path / "nope.sqlite").exists()


# -- untrusted input: no code-executing deserialisers anywhere near the DB -----------------------------

def test_no_pickle_eval_exec_marshal_in_db_code():
    """Code only: names in docstrings and comments (which say "no pickle") do not count."""
    import tokenize

    root = Path(__file__).resolve().parents[2] / "miofind"
    files = sorted((root / "db").glob("*.py")) + [root / "cli_db.py"]
    assert {"findb.py", "transfer.py", "maintenance.py", "cli_db.py"} <= {f.name for f in files}
    banned = {"pickle", "cPickle", "dill", "marshal", "shelve", "eval", "exec", "literal_eval", "__import__"}
    offenders = []
    for f in files:
        with open(f, "rb") as fh:
            toks = list(tokenize.tokenize(fh.readline))
        for tok in toks:
            if tok.type == tokenize.NAME and tok.string in banned:
                offenders.append(f"{f.name}:{tok.start[0]}: {tok.line.strip()}")
        code = "".join(t.string + " " for t in toks if t.type not in (tokenize.STRING, tokenize.COMMENT))
        for pat in ("pickle", "eval(", "exec(", "marshal"):
            if pat in code.replace(" ", ""):
                offenders.append(f"{f.name}: {pat!r} in code")
    assert offenders == []
