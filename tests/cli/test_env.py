"""miofind.env: every variable's mapping (MIOpen's values included), precedence, and bad values."""

import logging
import re
from pathlib import Path

import pytest

from miofind import env

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for v in env.VARIABLES:
        monkeypatch.delenv(v.name, raising=False)


@pytest.mark.parametrize("value,mode", [
    ("normal", "normal"), ("FAST", "fast"), ("Hybrid", "hybrid"), ("dynamic_hybrid", "dynamic_hybrid"),
    ("benchmark", "benchmark"), (" fast ", "fast"),
    ("1", "normal"), ("2", "fast"), ("3", "hybrid"), ("4", "normal"), ("5", "dynamic_hybrid"),
])
def test_miofind_find_mode(monkeypatch, value, mode):
    monkeypatch.setenv("MIOFIND_FIND_MODE", value)
    assert env.find_mode() == mode


@pytest.mark.parametrize("value,mode", [
    ("NORMAL", "normal"), ("fast", "fast"), ("HYBRID", "hybrid"), ("DYNAMIC_HYBRID", "dynamic_hybrid"),
    ("1", "normal"), ("2", "fast"), ("3", "hybrid"), ("4", "normal"), ("5", "dynamic_hybrid"),
])
def test_miopen_find_mode(monkeypatch, value, mode):
    monkeypatch.setenv("MIOPEN_FIND_MODE", value)
    assert env.find_mode() == mode


def test_find_mode_default_and_precedence(monkeypatch):
    assert env.find_mode() == "normal"
    assert env.find_mode(default="fast") == "fast"
    monkeypatch.setenv("MIOFIND_FIND_MODE", "   ")  # blank is unset
    assert env.find_mode() == "normal"
    monkeypatch.setenv("MIOPEN_FIND_MODE", "2")
    assert env.find_mode() == "fast"
    monkeypatch.setenv("MIOFIND_FIND_MODE", "hybrid")  # miofind's wins
    assert env.find_mode() == "hybrid"
    monkeypatch.delenv("MIOFIND_FIND_MODE")
    monkeypatch.setenv("MIOPEN_FIND_ENFORCE", "SEARCH")  # enforcement makes MIOpen run NORMAL
    assert env.find_mode() == "normal"
    monkeypatch.setenv("MIOPEN_FIND_ENFORCE", "DB_UPDATE")
    assert env.find_mode() == "benchmark"
    monkeypatch.setenv("MIOFIND_FIND_MODE", "fast")  # and miofind's own still wins
    assert env.find_mode() == "fast"


@pytest.mark.parametrize("var,value", [
    ("MIOFIND_FIND_MODE", "quick"), ("MIOFIND_FIND_MODE", "0"), ("MIOFIND_FIND_MODE", "6"),
    ("MIOFIND_FIND_MODE", "-1"), ("MIOFIND_FIND_MODE", "2.0"),
    ("MIOPEN_FIND_MODE", "benchmark"), ("MIOPEN_FIND_MODE", "0"), ("MIOPEN_FIND_MODE", "7"),
    ("MIOPEN_FIND_MODE", "trust_verify"),
])
def test_bad_find_mode(monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError) as e:
        env.find_mode()
    msg = str(e.value)
    assert msg.startswith(f"{var}={value!r}: expected") and "\n" not in msg


@pytest.mark.parametrize("value,action,mode,retune", [
    ("NONE", "none", None, False), ("1", "none", None, False),
    ("db_update", "db_update", "benchmark", True), ("2", "db_update", "benchmark", True),
    ("Search", "search", "normal", False), ("3", "search", "normal", False),
    ("SEARCH_DB_UPDATE", "search_db_update", "benchmark", True), ("4", "search_db_update", "benchmark", True),
])
def test_find_enforce(monkeypatch, value, action, mode, retune):
    monkeypatch.setenv("MIOPEN_FIND_ENFORCE", value)
    e = env.find_enforce()
    assert (e.action, e.find_mode, e.retune) == (action, mode, retune)


def test_find_enforce_unset():
    assert env.find_enforce() == env.FindEnforce("none", None, False)


@pytest.mark.parametrize("value,why", [("DB_CLEAN", "not supported"), ("5", "not supported"), ("6", "expected"),
                                       ("0", "expected"), ("always", "expected")])
def test_bad_find_enforce(monkeypatch, value, why):
    monkeypatch.setenv("MIOPEN_FIND_ENFORCE", value)
    with pytest.raises(ValueError) as e:
        env.find_enforce()
    assert str(e.value).startswith(f"MIOPEN_FIND_ENFORCE={value!r}: ") and why in str(e.value)
    with pytest.raises(ValueError):  # find_mode consults it when MIOFIND_FIND_MODE is unset
        env.find_mode()


def test_user_db_url(monkeypatch, tmp_path):
    assert env.user_db_url() is None
    monkeypatch.setenv("MIOPEN_USER_DB_PATH", str(tmp_path))
    assert env.user_db_url() == str(tmp_path / "miofind-finddb.sqlite")
    monkeypatch.setenv("MIOPEN_USER_DB_PATH", str(tmp_path / "not-yet"))  # created when the DB is opened
    assert env.user_db_url() == str(tmp_path / "not-yet" / "miofind-finddb.sqlite")
    monkeypatch.setenv("MIOFIND_DB", "postgresql+psycopg://host/db")  # miofind's wins
    assert env.user_db_url() == "postgresql+psycopg://host/db"


def test_user_db_path_not_a_directory(monkeypatch, tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    monkeypatch.setenv("MIOPEN_USER_DB_PATH", str(f))
    with pytest.raises(ValueError, match=r"^MIOPEN_USER_DB_PATH='.*file': not a directory$"):
        env.user_db_url()


def test_findb_default_url_follows_env(monkeypatch, tmp_path):
    from miofind.db import FindDB, FindDBError, default_db_url

    monkeypatch.setenv("MIOPEN_USER_DB_PATH", str(tmp_path / "miopen"))
    assert default_db_url() == f"sqlite:///{tmp_path / 'miopen' / 'miofind-finddb.sqlite'}"
    db = FindDB()
    assert db.path == tmp_path / "miopen" / "miofind-finddb.sqlite" and db.path.is_file()
    db.close()
    monkeypatch.setenv("MIOFIND_DB", str(tmp_path / "mine.sqlite"))
    assert default_db_url() == f"sqlite:///{tmp_path / 'mine.sqlite'}"
    monkeypatch.delenv("MIOFIND_DB")
    (tmp_path / "f").write_text("")
    monkeypatch.setenv("MIOPEN_USER_DB_PATH", str(tmp_path / "f"))
    with pytest.raises(FindDBError, match="MIOPEN_USER_DB_PATH"):
        FindDB()


def test_system_db(monkeypatch, tmp_path):
    from miofind.db.system import system_db_path

    assert env.system_db() is None
    assert system_db_path("sm_90", 132).name == "sm_90-132.sqlite"
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", "None")
    assert env.system_db() == "none" and system_db_path("sm_90", 132) is None
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(tmp_path / "x.sqlite"))
    assert env.system_db() == tmp_path / "x.sqlite" == system_db_path("sm_90", 132)


@pytest.mark.parametrize("value,level", [
    ("debug", logging.DEBUG), ("INFO", logging.INFO), ("warning", logging.WARNING), ("warn", logging.WARNING),
    ("error", logging.ERROR), ("critical", logging.CRITICAL), ("quiet", env.QUIET), ("off", env.QUIET),
    ("0", logging.WARNING), ("1", env.QUIET), ("2", logging.CRITICAL), ("3", logging.ERROR), ("4", logging.WARNING),
    ("5", logging.INFO), ("6", logging.DEBUG), ("7", logging.DEBUG),
])
def test_miofind_log_level(monkeypatch, value, level):
    monkeypatch.setenv("MIOFIND_LOG_LEVEL", value)
    assert env.log_level() == level


@pytest.mark.parametrize("value,level", [
    ("0", logging.WARNING), ("1", env.QUIET), ("2", logging.CRITICAL), ("3", logging.ERROR), ("4", logging.WARNING),
    ("5", logging.INFO), ("6", logging.DEBUG), ("7", logging.DEBUG),
])
def test_miopen_log_level(monkeypatch, value, level):
    monkeypatch.setenv("MIOPEN_LOG_LEVEL", value)
    assert env.log_level() == level


def test_log_level_precedence(monkeypatch):
    assert env.log_level() is None
    monkeypatch.setenv("MIOPEN_LOG_LEVEL", "6")
    monkeypatch.setenv("MIOFIND_LOG_LEVEL", "error")
    assert env.log_level() == logging.ERROR


@pytest.mark.parametrize("var,value", [("MIOFIND_LOG_LEVEL", "loud"), ("MIOFIND_LOG_LEVEL", "8"),
                                       ("MIOFIND_LOG_LEVEL", "-1"), ("MIOPEN_LOG_LEVEL", "debug"),
                                       ("MIOPEN_LOG_LEVEL", "8"), ("MIOPEN_LOG_LEVEL", "4.5")])
def test_bad_log_level(monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError) as e:
        env.log_level()
    assert str(e.value).startswith(f"{var}={value!r}: expected") and "\n" not in str(e.value)


def test_kernel_cache_dir(monkeypatch, tmp_path):
    from miofind.compile import kernel_cache_dir

    assert env.kernel_cache_dir() is None
    assert kernel_cache_dir().name == "cubin"
    monkeypatch.setenv("MIOPEN_CUSTOM_CACHE_DIR", str(tmp_path / "miopen"))
    assert env.kernel_cache_dir() == tmp_path / "miopen" / "miofind-cubin" == kernel_cache_dir()
    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(tmp_path / "mine"))
    assert env.kernel_cache_dir() == tmp_path / "mine" == kernel_cache_dir()
    (tmp_path / "f").write_text("")
    monkeypatch.setenv("MIOFIND_KERNEL_CACHE", str(tmp_path / "f"))
    with pytest.raises(ValueError, match=r"^MIOFIND_KERNEL_CACHE='.*f': not a directory$"):
        env.kernel_cache_dir()


def test_cudnn_variables(monkeypatch):
    assert env.cudnn_plans() == 8 and env.cudnn_execute() == "backend"
    monkeypatch.setenv("MIOFIND_CUDNN_PLANS", "3")
    monkeypatch.setenv("MIOFIND_CUDNN_EXECUTE", "PUBLIC")
    assert env.cudnn_plans() == 3 and env.cudnn_execute() == "public"
    monkeypatch.setenv("MIOFIND_CUDNN_EXECUTE", "direct")
    assert env.cudnn_execute() == "direct"
    for bad in ("0", "-2", "many", "2.5"):
        monkeypatch.setenv("MIOFIND_CUDNN_PLANS", bad)
        with pytest.raises(ValueError, match=rf"^MIOFIND_CUDNN_PLANS={re.escape(repr(bad))}: expected a positive"):
            env.cudnn_plans()
    monkeypatch.setenv("MIOFIND_CUDNN_EXECUTE", "fast")
    with pytest.raises(ValueError, match=r"^MIOFIND_CUDNN_EXECUTE='fast': expected backend, direct or public$"):
        env.cudnn_execute()
    assert env.cudnn_prefetch() == "load"
    monkeypatch.setenv("MIOFIND_CUDNN_PREFETCH", "List")
    assert env.cudnn_prefetch() == "list"
    monkeypatch.setenv("MIOFIND_CUDNN_PREFETCH", "yes")
    with pytest.raises(ValueError, match=r"^MIOFIND_CUDNN_PREFETCH='yes': expected off, list, build or load$"):
        env.cudnn_prefetch()
    # a find names the bad value rather than passing over it (find.prefetch_cudnn reads it before anything else)
    from miofind import find
    with pytest.raises(ValueError, match="MIOFIND_CUDNN_PREFETCH"):
        find.prefetch_cudnn(None, None, None, [], True)


def test_readme_table_lists_every_variable():
    """The README's "Environment variables" table has one row per variable env.py reads, with its
    MIOpen equivalent, and no row for a variable env.py does not know."""
    text = README.read_text()
    section = text.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([A-Z][A-Z0-9_]*)` \|.*$", section, re.M)}
    known = {v.name for v in env.VARIABLES}
    assert known <= set(rows), known - set(rows)
    for v in env.VARIABLES:
        if v.miopen:
            assert f"`{v.miopen}`" in rows[v.name], v.name
    extra = set(rows) - known
    # variables of the test suite, not of miofind, are marked so
    assert all("tests only" in rows[n] for n in extra), extra
