"""FindDB schema 4: find_records.build says which build a record measured ('specialized' or
'generic', miofind.tiered). Older files read as 'specialized' read-only and migrate when writable."""

from __future__ import annotations

import io
import json
import sqlite3

import pytest

from miofind.db import FindDB
from miofind.db import findb as findb_mod
from miofind.db.transfer import export_records, import_records
from records import DEV, KEY, rec


def _schema_3_file(path):
    """A file as schema 3 wrote it: find_records without the build column."""
    with FindDB(str(path)) as d:
        d.store([rec("S1"), rec("S2", 2.0)])
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE find_records DROP COLUMN build")
    con.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    con.commit()
    con.close()


def test_default_and_validation():
    assert rec("S1").build == "specialized"
    assert rec("S1", build="generic").build == "generic"
    with pytest.raises(ValueError, match="build='fast'"):
        rec("S1", build="fast")


def test_schema_3_reads_read_only_and_migrates(tmp_path):
    p = tmp_path / "v3.sqlite"
    _schema_3_file(p)
    before = p.read_bytes()
    with FindDB(str(p), readonly=True) as d:
        got = d.lookup(DEV, KEY)
        assert [r.build for r in got] == ["specialized", "specialized"] and d.stats()["schema_version"] == 3
        assert [r.solver_id for r in d.iter_records()] == ["S1", "S2"]
    assert p.read_bytes() == before                # a read-only open never writes
    with FindDB(str(p)) as d:
        assert d.stats()["schema_version"] == findb_mod.SCHEMA_VERSION == 4
        assert [r.build for r in d.lookup(DEV, KEY)] == ["specialized", "specialized"]
        d.store([rec("S3", 0.5, build="generic")])
        assert {r.solver_id: r.build for r in d.lookup(DEV, KEY)} == {"S1": "specialized", "S2": "specialized",
                                                                     "S3": "generic"}
        d.store([rec("S3", 0.4)])                  # the specialised measurement replaces the generic one
        assert {r.solver_id: r.build for r in d.lookup(DEV, KEY)}["S3"] == "specialized"


def test_export_names_build_only_for_generic_records(tmp_path):
    with FindDB(str(tmp_path / "a.sqlite")) as d:
        d.store([rec("ConvDirectTiledFwd"), rec("ConvImplicitGemmFwd", 2.0, build="generic")])
        buf = io.StringIO()
        export_records(d, buf)
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    finds = {o["solver_id"]: o for o in lines if o.get("type") == "find"}
    assert "build" not in finds["ConvDirectTiledFwd"] and finds["ConvImplicitGemmFwd"]["build"] == "generic"
    with FindDB(str(tmp_path / "b.sqlite")) as d:
        rep = import_records(d, io.StringIO(buf.getvalue()))
        assert rep.find == 2, rep.skipped
        assert {r.solver_id: r.build for r in d.lookup(DEV, KEY)} == {"ConvDirectTiledFwd": "specialized",
                                                                     "ConvImplicitGemmFwd": "generic"}
