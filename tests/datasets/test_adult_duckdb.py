"""The bundled Adult data parsed by DuckDB (the pipeline's ``adult:<split>`` sources) equals
pandas' parse, row by row and in order (``distpriv verify`` without pandas).

The reference is :func:`distpriv.datasets.load_adult` / :func:`paper_split`: pandas' C
parser, a different reader and cleaning code (only the split's permutation is shared, by
design: the same seed must select the same rows).
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

from distpriv.datasets import PAPER_SPLIT, load_adult, paper_split
from distpriv.datasets.adult_duckdb import _ALL, _instance, adult_engine, bundled_paths
from distpriv.errors import ParameterError
from distpriv.modeling.engines import LOCKED_SETTINGS
from distpriv.pipeline.scope import command_scope
from distpriv.pipeline.stages.data import open_table


def _rows(engine) -> pd.DataFrame:
    return engine.fetch_arrow("*", None, "test").to_pandas()


def _same(got: pd.DataFrame, ref: pd.DataFrame) -> None:
    ref = ref.reset_index(drop=True)
    assert list(got.columns) == list(ref.columns)
    assert len(got) == len(ref)
    for c in ref.columns:
        # As Python objects: ints equal as ints, strings equal as strings, in row order.
        assert got[c].astype(object).tolist() == ref[c].astype(object).tolist(), c


@pytest.mark.parametrize("seed", [0, 7, 2**31 - 1])
@pytest.mark.parametrize("part", [*PAPER_SPLIT])
def test_every_split_equals_pandas_parse(part, seed):
    _same(_rows(adult_engine(part, seed)), paper_split(rng=seed)[part])


def test_all_equals_load_adult():
    engine = adult_engine("all", 0)
    _same(_rows(engine), load_adult())
    types = engine.types
    assert types["age"] == "BIGINT" and types["income"] == "VARCHAR"


def test_the_cleaning_drops_and_normalises_as_documented():
    engine = adult_engine("all", 0)
    (n, high, private, dots, qs) = engine.query(
        "SELECT count(*), count(*) FILTER (WHERE income = '>50K'), "
        "count(*) FILTER (WHERE workclass = 'Private'), "
        "count(*) FILTER (WHERE income LIKE '%.'), "
        "count(*) FILTER (WHERE workclass = '?' OR occupation = '?' OR native_country = '?')"
        " FROM data",
        "test",
    )[0]
    assert (n, high, private, dots, qs) == (45222, 11208, 33307, 0, 0)


def test_the_parsing_connection_reads_only_the_two_files(tmp_path):
    other = tmp_path / "x.csv"
    other.write_text("a\n1\n")
    engine = adult_engine("test", 0)
    settings = dict(
        engine.conn.execute(
            "SELECT name, value FROM duckdb_settings() WHERE name IN "
            f"({', '.join(repr(k) for k in LOCKED_SETTINGS)})"
        ).fetchall()
    )
    assert settings == LOCKED_SETTINGS
    with pytest.raises(duckdb.PermissionException, match="Cannot access file"):
        engine.conn.execute(f"SELECT * FROM read_csv('{other}')").fetchall()
    paths = bundled_paths()
    assert paths is not None and all(p.is_file() for p in paths)


def test_one_parse_per_command():
    with command_scope() as cache:
        a = open_table("adult:modeling")
        b = open_table("adult:test")
        base = _instance(cache)
        assert a.n_rows == 25222 and b.n_rows == 10000
        # Both parts are cursors of the one instance that parsed the files.
        assert base.execute(f"SELECT count(*) FROM {_ALL}").fetchall() == [(45222,)]
        assert len([k for k in cache if k == ("adult-duckdb",)]) == 1


def test_unknown_split_is_refused():
    with pytest.raises(ParameterError, match="unknown Adult split 'train'"):
        adult_engine("train", 0)
    with pytest.raises(ParameterError, match="unknown Adult split"):
        open_table("adult:train")


def test_open_table_rows_reach_the_row_level_path_in_order():
    # The check's row-level path (Table._conn) gets the rows as Arrow with their
    # positions: the same values, in the same order, as from the pandas frame.
    from distpriv.modeling.tables import Table

    new = open_table("adult:modeling", split_seed=3)
    old = Table(paper_split(rng=3)["modeling"], "adult:modeling")
    exprs = ["age", "CAST(sex = 'Female' AS DOUBLE)", "hours_per_week * education_num"]
    np.testing.assert_array_equal(new.row_values(exprs, exprs), old.row_values(exprs, exprs))
    np.testing.assert_array_equal(
        new.predicate("income = '>50K'", "p"), old.predicate("income = '>50K'", "p")
    )
