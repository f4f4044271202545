"""DuckDB's doors: no source makes DuckDB install, load or download anything.

* every connection distpriv opens (frame, CSV/Parquet file, DuckDB database file, the
  in-memory row-level copy, :func:`load_frame`) has extensions' auto-install and auto-load
  off, external access off and its configuration locked — read back from DuckDB itself, and
  no other ``duckdb.connect`` call exists in the sources;
* an SQLite file given as a ``duckdb:`` source is one line, exit 2, and DuckDB never tried to
  fetch ``sqlite_scanner`` (a download first creates ``$HOME/.duckdb/extensions``: the
  subprocess runs with an empty ``HOME``, which must stay empty);
* the model and the released table in the same DuckDB file release what the same rows read
  from CSV release;
* a VIEW in the file that reads another file is one line naming the table, no traceback.
"""

from __future__ import annotations

import ast
import os
import shutil
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from distpriv.errors import ParameterError
from distpriv.modeling import engines
from distpriv.modeling.engines import LOCKED_SETTINGS, DuckDBEngine, locked_connection
from distpriv.modeling.tables import Table
from distpriv.pipeline import run_release

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
HOSPITAL = ROOT / "examples" / "hospital"


def _settings(conn: duckdb.DuckDBPyConnection) -> dict[str, str]:
    rows = conn.execute("SELECT name, value FROM duckdb_settings()").fetchall()
    return {k: str(v).lower() for k, v in rows if k in LOCKED_SETTINGS}


def _assert_locked(conn: duckdb.DuckDBPyConnection) -> None:
    assert _settings(conn) == LOCKED_SETTINGS
    for statement in (
        "SET autoload_known_extensions = true",
        "SET autoinstall_known_extensions = true",
        "SET enable_external_access = true",
        "SET lock_configuration = false",
    ):
        with pytest.raises(duckdb.Error, match="locked"):
            conn.execute(statement)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """The hospital example, its two tables also in one DuckDB file (with a view reading a
    file beside it) and in one SQLite file."""
    dest = tmp_path_factory.mktemp("doors") / "hospital"
    shutil.copytree(HOSPITAL, dest)
    (dest / "secret.csv").write_text("password\nhunter2\n")
    con = duckdb.connect(str(dest / "both.duckdb"))
    for name in ("model", "release"):
        con.register("f", pd.read_csv(dest / f"{name}.csv"))
        con.execute(f"CREATE TABLE {name}_rows AS SELECT * FROM f")
        con.unregister("f")
    con.execute(f"CREATE VIEW leak AS SELECT * FROM read_csv('{dest / 'secret.csv'}')")
    con.execute("CREATE VIEW passwd AS SELECT * FROM read_csv('/etc/passwd')")
    con.close()
    lite = sqlite3.connect(dest / "lite.db")
    for name in ("model", "release"):
        pd.read_csv(dest / f"{name}.csv").to_sql(f"{name}_rows", lite, index=False)
    lite.close()
    return dest


def _config(folder: Path, name: str, **data: str) -> Path:
    text = (folder / "hospital.toml").read_text()
    for key, value in data.items():
        text = "\n".join(
            f'{key} = "{value}"' if line.startswith(f"{key} = ") else line
            for line in text.splitlines()
        )
    path = folder / f"{name}.toml"
    path.write_text(text + "\n")
    return path


def _cli(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "distpriv", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC), "HOME": str(home)},
        timeout=300,
    )


def _one_line(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("distpriv: error: "), proc.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


# --- every connection is locked before it sees user input -----------------------------------


def test_every_kind_of_connection_is_locked(folder):
    frame = pd.read_csv(folder / "release.csv")
    from_frame = DuckDBEngine(frame, "frame")
    from_file = DuckDBEngine(folder / "release.csv", "file")
    from_db = DuckDBEngine.from_database(folder / "both.duckdb", "release_rows", "db")
    for engine in (from_frame, from_file, from_db):
        _assert_locked(engine.conn)
        assert engine.query("SELECT count(*) FROM data", "rows") == [(50,)]
    table = Table(folder / "release.csv", "release")
    _assert_locked(table._conn())
    _assert_locked(locked_connection())


def test_load_frame_reads_through_a_locked_connection(folder, monkeypatch):
    from distpriv.pipeline.stages import data as sources

    seen: list[dict[str, str]] = []

    def spy(paths=()):
        conn = locked_connection(paths)
        seen.append(_settings(conn))
        return conn

    monkeypatch.setattr(sources, "locked_connection", spy)
    frame = sources.load_frame(str(folder / "release.csv"))
    assert len(frame) == 50 and seen == [LOCKED_SETTINGS]


def test_no_other_duckdb_connect_in_the_sources():
    """Only :func:`locked_connection` opens a DuckDB connection (a new one elsewhere would
    start with auto-install on)."""
    calls = []
    for path in (SRC / "distpriv").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        owner = {
            id(node): fn.name
            for fn in ast.walk(tree)
            if isinstance(fn, ast.FunctionDef)
            for node in ast.walk(fn)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("connect", "sql", "query", "execute", "default_connection")
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "duckdb"
            ):
                calls.append((path.name, owner.get(id(node))))
    assert calls == [("engines.py", "locked_connection")]


def test_the_locked_settings_are_not_duckdb_defaults():
    """The check above can fail: a plain connection has auto-install and auto-load on."""
    plain = _settings(duckdb.connect())
    assert plain["autoinstall_known_extensions"] == "true"
    assert plain["autoload_known_extensions"] == "true"
    assert plain != LOCKED_SETTINGS


# --- an SQLite file as a duckdb: source -------------------------------------------------------


def test_sqlite_file_is_one_line_and_nothing_is_fetched(folder, tmp_path):
    cfg = _config(folder, "lite", model="duckdb:lite.db#model_rows")
    home = tmp_path / "home"
    home.mkdir()
    proc = _cli(["release", str(cfg), "--no-ledger", "--insecure-seed", "1"], home)
    _one_line(proc, "[data] model", "lite.db", "SQLite database", "never loads")
    assert list(home.iterdir()) == []  # a download attempt makes ~/.duckdb/extensions first
    assert "download" not in proc.stderr.lower() and "http" not in proc.stderr.lower()


def test_sqlite_file_past_the_header_check_still_loads_nothing(folder, monkeypatch):
    """Without distpriv's own header check, DuckDB itself refuses: the file is attached as
    TYPE duckdb to a connection where extension loading is off."""
    monkeypatch.setattr(engines, "_file_head", lambda path: b"")
    with pytest.raises(ParameterError) as info:
        DuckDBEngine.from_database(folder / "lite.db", "model_rows", "[data] model")
    text = str(info.value)
    assert "cannot read table 'model_rows'" in text and "not a valid DuckDB database" in text
    assert "download" not in text.lower()
    # And a locked connection asked to auto-detect the format refuses to load the extension.
    path = str(folder / "lite.db")
    conn = locked_connection([path, path + ".wal"])
    with pytest.raises(duckdb.Error, match="extensions is disabled"):
        conn.execute("ATTACH $p AS s (READ_ONLY)", {"p": path})
    with pytest.raises(duckdb.Error):
        conn.execute("INSTALL sqlite")
    with pytest.raises(duckdb.Error, match="disabled"):
        conn.execute("LOAD sqlite")


def test_directory_and_non_database_file_as_a_duckdb_source(folder):
    with pytest.raises(ParameterError, match="is a directory, not a database file"):
        DuckDBEngine.from_database(folder, "model_rows", "[data] model")
    with pytest.raises(ParameterError, match="not a valid DuckDB database"):
        DuckDBEngine.from_database(folder / "model.csv", "model_rows", "[data] model")


# --- two tables of one file; a view that reads another file -------------------------------


def _values(outcome) -> np.ndarray:
    return np.array([s["value"] for s in outcome.public["statistics"]])


def test_model_and_release_tables_in_the_same_duckdb_file(folder):
    both = _config(
        folder,
        "both",
        model="duckdb:both.duckdb#model_rows",
        release="duckdb:both.duckdb#release_rows",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        via_db = run_release(both, ledger=False, insecure_seed=5)
        via_csv = run_release(folder / "hospital.toml", ledger=False, insecure_seed=5)
    np.testing.assert_allclose(_values(via_db), _values(via_csv), rtol=1e-9)
    assert via_db.private["model"]["stratum_sizes"] == via_csv.private["model"]["stratum_sizes"]


@pytest.mark.parametrize("view", ["leak", "passwd"])
def test_view_reading_another_file_is_one_line(folder, tmp_path, view):
    cfg = _config(folder, f"view-{view}", model=f"duckdb:both.duckdb#{view}")
    out = tmp_path / "public.json"
    proc = _cli(
        ["release", str(cfg), "--no-ledger", "--insecure-seed", "1", "--out", str(out)], tmp_path
    )
    line = _one_line(proc, "[data] model", f"cannot read table '{view}'", "Permission Error")
    assert "hunter2" not in proc.stdout + proc.stderr and "root:" not in line
    assert not out.exists()


@pytest.mark.parametrize(
    "source",
    [
        "https://example.invalid/rows.csv",
        "s3://bucket/rows.parquet",
        "duckdb:https://example.invalid/db.duckdb#t",
        "duckdb:lite.db#model_rows",
    ],
)
def test_remote_and_foreign_sources_touch_no_network(folder, tmp_path, source):
    """A URL is a path that does not exist (never a download), and no source makes DuckDB
    prepare an extension download (its first step creates ~/.duckdb/extensions)."""
    cfg = _config(folder, f"remote-{abs(hash(source))}", model=source)
    home = tmp_path / "home"
    home.mkdir()
    proc = _cli(["release", str(cfg), "--no-ledger", "--insecure-seed", "1"], home)
    line = _one_line(proc, "[data] model")
    assert "not found" in line or "SQLite database" in line
    assert list(home.iterdir()) == []
