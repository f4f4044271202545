"""Locked-down SQL: hostile statistics and predicates are refused before execution."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from distpriv import DistPrivError
from distpriv.modeling import ProportionSecret, Query, model_query
from distpriv.modeling.engines import DuckDBEngine
from distpriv.modeling.expressions import ALLOWED_FUNCTIONS, parse_expression
from distpriv.modeling.tables import Table

MARKER = "TOP-SECRET-7f3a"


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A working directory holding a secret file; returns (dir, secret path, data frame)."""
    monkeypatch.chdir(tmp_path)
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text(f"{MARKER}\n")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=60), "s": np.arange(60) % 2 == 0})
    return tmp_path, secret_file, frame


def hostile(secret: str, out: str) -> list[str]:
    """Statistics that would read ``secret`` or write ``out`` if they reached DuckDB."""
    return [
        f"max(length(read_text('{secret}')))",
        f"(SELECT max(content) FROM read_text('{secret}'))",
        f"count(*) + (SELECT count(*) FROM read_csv_auto('{secret}'))",
        f"avg(x); COPY (SELECT 1) TO '{out}'",
        f"avg(x) /* */ ; COPY (SELECT 1) TO '{out}' --",
        f"COPY (SELECT 1) TO '{out}'",
        f"ATTACH '{out}' AS evil",
        "avg(x); SET enable_external_access = true",
        f"max(\"read_text\"('{secret}'))",
        "max(getenv('HOME'))",
        "max(current_setting('threads'))",
        f"count(*) FILTER (WHERE x IN (SELECT 1 FROM read_text('{secret}')))",
        f"avg(x) + len(glob('{secret}'))",
        "avg(x) OVER ()",
        "avg(evil.x)",
        f"max(read_parquet('{secret}'))",
        "avg(x) + $1",
    ]


def test_hostile_statistics_refused_and_nothing_written(sandbox):
    tmp, secret_file, frame = sandbox
    out = tmp / "pwned.csv"
    table = Table(frame)
    before = set(os.listdir(tmp))
    for text in hostile(str(secret_file), str(out)):
        with pytest.raises(DistPrivError) as err:
            Query({"s": text}).evaluate(table)
        assert MARKER not in str(err.value)
        with pytest.raises(DistPrivError):
            parse_expression(text, what="statistic", kind="aggregate")
    assert set(os.listdir(tmp)) == before
    assert not out.exists()


def test_hostile_predicates_refused(sandbox):
    tmp, secret_file, _ = sandbox
    out = tmp / "pwned.csv"
    for text in [
        f"x > (SELECT count(*) FROM read_text('{secret_file}'))",
        f"s; COPY (SELECT 1) TO '{out}'",
        f"read_text('{secret_file}') IS NOT NULL",
        "contains(getenv('HOME'), 'a')",
        "count(*) > 1",
    ]:
        with pytest.raises(DistPrivError) as err:
            ProportionSecret(text, values=[0.25, 0.5])
        assert MARKER not in str(err.value)
    assert not out.exists()


def test_table_methods_validate_raw_text(sandbox):
    """A caller passing user text straight to a Table method (e.g. the Monte Carlo sampler)
    is still refused before DuckDB sees it."""
    tmp, secret_file, frame = sandbox
    table = Table(frame)
    with pytest.raises(DistPrivError, match="not allowed"):
        table.predicate(f"x > (SELECT count(*) FROM read_text('{secret_file}'))", "pred")
    with pytest.raises(DistPrivError, match="not allowed"):
        table.row_values([f"length(read_text('{secret_file}'))"], ["row"])
    with pytest.raises(DistPrivError, match="not allowed"):
        table.aggregate([f"avg(x); COPY (SELECT 1) TO '{tmp / 'w.csv'}'"], ["agg"])
    assert not (tmp / "w.csv").exists()


def test_engine_is_locked_even_for_generated_sql(sandbox, tmp_path):
    """Second wall: the DuckDB connection itself cannot read other files or unlock itself."""
    tmp, secret_file, frame = sandbox
    path = tmp / "data.parquet"
    frame.to_parquet(path)
    engine = DuckDBEngine(path, str(path))
    # The table's own file stays readable, nothing else.
    assert engine.query("SELECT count(*) FROM data", "count")[0][0] == 60
    for sql in [
        f"SELECT * FROM read_text('{secret_file}')",
        f"COPY (SELECT 1) TO '{tmp / 'w.csv'}'",
        "SET enable_external_access = true",
        "SET lock_configuration = false",
        f"ATTACH '{tmp / 'evil.db'}'",
    ]:
        with pytest.raises(DistPrivError) as err:
            engine.query(sql, "generated")
        assert MARKER not in str(err.value)
    assert not (tmp / "w.csv").exists() and not (tmp / "evil.db").exists()


def test_unknown_column_named(sandbox):
    _, _, frame = sandbox
    with pytest.raises(DistPrivError, match=r"unknown column 'agee'.*columns: s, x"):
        Query({"a": "avg(agee)"}).evaluate(frame)
    with pytest.raises(DistPrivError, match=r"secret predicate.*unknown column 'flag'"):
        model_query(
            frame,
            {"a": "avg(x)"},
            ProportionSecret("flag", values=[0.25, 0.5]),
            subset_size=8,
            method="analytic",
        )


def test_quoted_identifiers_are_columns_not_code():
    """A column whose name looks like SQL is quoted by sqlglot, never interpreted."""
    frame = pd.DataFrame({'x"); DROP TABLE data; --': [1.0, 2.0, 3.0], "X Y": [1, 1, 0]})
    q = Query({"a": 'avg("x""); DROP TABLE data; --")', "b": 'sum("X Y")'})
    np.testing.assert_allclose(q.evaluate(frame), [2.0, 2.0])


def test_linear_recognised_from_the_tree():
    q = Query(
        {
            "m": "mean(x)",
            "a": "AVG((x + 1))",
            "c": "count(*)",
            "ci": "count_if(x > 0 AND s)",
            "md": "median(x)",
            "d": "count(DISTINCT x)",
            "r": "sum(x) / count(*)",
        }
    )
    lin = {s.name: s.linear for s in q.statistics}
    assert lin == {"m": True, "a": True, "c": True, "ci": True, "md": False, "d": False, "r": False}
    assert {s.name: s.scale for s in q.statistics if s.linear} == {
        "m": "mean",
        "a": "mean",
        "c": "sum",
        "ci": "sum",
    }
    frame = pd.DataFrame({"x": [-1.0, 2.0, 5.0], "s": [True, True, False]})
    np.testing.assert_allclose(q.evaluate(frame), [2.0, 3.0, 3.0, 1.0, 2.0, 3.0, 2.0], rtol=1e-12)


def test_spark_translation_of_allowed_functions():
    text = "avg(CASE WHEN x > 0 THEN ln(x) ELSE 0 END) + count_if(s) + sum(x::DOUBLE)"
    parsed = parse_expression(text, what="statistic", kind="aggregate")
    spark = parsed.sql("spark")
    assert "COUNT_IF" in spark and "CAST(x AS DOUBLE)" in spark and "LN(x)" in spark
    assert "read_text" not in ALLOWED_FUNCTIONS and "getenv" not in ALLOWED_FUNCTIONS


@given(st.text(max_size=60))
def test_arbitrary_text_is_parsed_or_refused_cleanly(text):
    """Any string either parses to an allowed expression or raises a DistPrivError."""
    try:
        parsed = parse_expression(text, what="statistic")
    except DistPrivError:
        return
    # Whatever is accepted re-parses to the same allowed tree (rendering is a fixed point).
    again = parse_expression(parsed.sql(), what="statistic")
    assert again.sql() == parsed.sql()
