"""DB fixtures: ``anydb`` runs a test on SQLite and, where $MIOFIND_TEST_PG_URL names a server
(CI starts one with scripts/start-postgres), on PostgreSQL. With MIOFIND_REQUIRE_PG=1 a missing
server fails the PostgreSQL cases instead of skipping them."""

import os

import pytest
import sqlalchemy as sa

from miofind.db import FindDB
from miofind.db import findb as findb_mod


def pg_url() -> str:
    url = os.environ.get("MIOFIND_TEST_PG_URL", "")
    if not url:
        if os.environ.get("MIOFIND_REQUIRE_PG") == "1":
            pytest.fail("MIOFIND_REQUIRE_PG=1 but MIOFIND_TEST_PG_URL is not set")
        pytest.skip("no PostgreSQL server (set MIOFIND_TEST_PG_URL, e.g. via scripts/start-postgres)")
    return url


def reset_pg(url: str) -> None:
    """Drop our tables so each test starts from an empty database."""
    eng = sa.create_engine(url)
    try:
        with eng.begin() as con:
            findb_mod._md.drop_all(con)
    finally:
        eng.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'finddb.sqlite'}"
    url = pg_url()
    reset_pg(url)
    return url


@pytest.fixture
def anydb(any_url):
    with FindDB(any_url) as d:
        yield d
