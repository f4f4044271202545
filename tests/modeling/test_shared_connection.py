"""Tables over frames share one locked DuckDB instance (as cursors); file tables do not."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

from distpriv.modeling import engines
from distpriv.modeling.engines import LOCKED_SETTINGS, locked_connection
from distpriv.modeling.tables import Table


@pytest.fixture
def connects(monkeypatch):
    """Counts new DuckDB instances, starting from no shared one."""
    calls: list[str] = []
    real = duckdb.connect

    def spy(*args, **kwargs):
        calls.append(str(args[0]) if args else "")
        return real(*args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", spy)
    monkeypatch.setattr(engines, "_SHARED", None)
    return calls


def _settings(conn: duckdb.DuckDBPyConnection) -> dict[str, str]:
    rows = conn.execute(
        "SELECT name, value FROM duckdb_settings() WHERE list_contains($n, name)",
        {"n": list(LOCKED_SETTINGS)},
    ).fetchall()
    return {k: str(v).lower() for k, v in rows}


def test_frame_tables_are_cursors_of_one_instance_and_see_only_their_rows(connects, tmp_path):
    a = Table(pd.DataFrame({"x": [1.0, 2.0, 3.0], "s": ["a", "b", "a"]}), "a")
    b = Table(pd.DataFrame({"x": [10.0, 20.0], "s": ["b", "b"]}), "b")
    # Engine side (aggregates) and row-level side (the predicate, in row order).
    assert a.n_rows == 3 and b.n_rows == 2
    assert a.run(["sum(x)"], what="t")[0][0] == 6.0
    assert b.run(["sum(x)"], what="t")[0][0] == 30.0
    np.testing.assert_array_equal(a.predicate("s = 'a'", "p"), [True, False, True])
    np.testing.assert_array_equal(b.predicate("s = 'a'", "p"), [False, False])
    assert len(connects) == 1  # four connections, one instance
    # A table read from a file is its own instance (its allowed path is its own).
    path = tmp_path / "c.csv"
    pd.DataFrame({"x": [5.0]}).to_csv(path, index=False)
    c = Table(path, "c")
    assert c.run(["sum(x)"], what="t")[0][0] == 5.0
    assert len(connects) == 2


def test_every_cursor_is_locked_and_private(connects):
    first, second = locked_connection(), locked_connection()
    for conn in (first, second):
        assert _settings(conn) == LOCKED_SETTINGS
        for statement in (
            "SET enable_external_access = true",
            "SET lock_configuration = false",
            "SET autoinstall_known_extensions = true",
        ):
            with pytest.raises(duckdb.Error, match="locked"):
                conn.execute(statement)
        with pytest.raises(duckdb.Error):
            conn.execute("SELECT * FROM read_csv('/etc/hostname')").fetchall()
    first.execute("CREATE TEMP VIEW only_first AS SELECT 1 AS v")
    first.register("frame", pd.DataFrame({"v": [1]}))
    for name in ("only_first", "frame"):
        with pytest.raises(duckdb.CatalogException):
            second.execute(f"SELECT * FROM {name}").fetchall()
    assert len(connects) == 1


def test_a_forked_child_makes_its_own_instance(connects, monkeypatch):
    locked_connection()
    assert len(connects) == 1
    pid, instance = engines._SHARED
    # As in a child after fork: the recorded pid is not ours, so a new instance is made.
    monkeypatch.setattr(engines, "_SHARED", (pid + 1, instance))
    assert _settings(locked_connection()) == LOCKED_SETTINGS
    assert len(connects) == 2 and engines._SHARED[0] == pid
