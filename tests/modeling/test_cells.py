"""Histograms and marginals as statistics (modeling/cells.py): the cells' counts against
numpy and pandas, their names, where rows outside go, and the one-line refusals."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import distpriv
from distpriv.errors import ConfigError, ParameterError
from distpriv.modeling import Query, as_table
from distpriv.modeling.cells import MAX_CELLS, expand_cells, histogram_cells, marginal_cells
from distpriv.pipeline.config import load_release_config


def _counts(frame: pd.DataFrame, cells) -> np.ndarray:
    return np.asarray(Query(cells.query()).evaluate(frame), dtype=float)


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(
        st.floats(-50, 150, allow_nan=False).map(lambda x: round(x, 1)), min_size=1, max_size=60
    ),
    bins=st.integers(1, 12),
    lo=st.integers(-20, 40),
    width=st.integers(1, 80),
)
def test_bins_count_as_numpy_histogram_and_the_outer_cells_take_the_rest(values, bins, lo, width):
    frame = pd.DataFrame({"x": values})
    cells = histogram_cells("x", bins=bins, range=[lo, lo + width])
    got = _counts(frame, cells)
    ref, _ = np.histogram(values, bins=bins, range=(lo, lo + width))
    arr = np.array(values)
    np.testing.assert_array_equal(got[:bins], ref)
    np.testing.assert_array_equal(got[bins:], [(arr < lo).sum(), (arr > lo + width).sum()])
    assert cells.partition and got.sum() == len(values)  # the cells partition the rows


def test_edges_from_the_modelling_table_are_numpys_and_the_outside_goes_nowhere():
    rng = np.random.default_rng(1)
    model = pd.DataFrame({"age": rng.integers(17, 91, 2000)})
    cells = histogram_cells("age", bins=7, table=as_table(model))
    assert len(cells.names) == 7 and not cells.partition
    assert "counted in no cell" in cells.note
    ref, _ = np.histogram(model["age"], bins=7)
    np.testing.assert_array_equal(_counts(model, cells), ref)
    # A released row outside the modelling range is in no cell (said in the note).
    released = pd.DataFrame({"age": [16, 17, 90, 95]})
    assert _counts(released, cells).sum() == 2


def test_names_are_readable_and_kept_in_order():
    h = histogram_cells("age", edges=[17, 30, 50.5])
    assert h.names == ("age in [17, 30)", "age in [30, 50.5]", "age < 17", "age > 50.5")
    m = marginal_cells(["sex", "race"], values={"sex": ["Female", "Male"], "race": ["White"]})
    assert m.names[0] == "sex=Female & race=White"
    assert m.names[-1] == "sex=(other) & race=(other)"


def test_a_two_way_marginal_counts_as_a_pandas_crosstab():
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(
        {"a": rng.choice(["x", "y", "z"], 300), "b": rng.choice(["p", "q", "it's"], 300)}
    )
    cells = marginal_cells(["a", "b"], table=as_table(frame))
    ref = pd.crosstab(frame["a"], frame["b"]).sort_index().sort_index(axis=1).to_numpy().ravel()
    np.testing.assert_array_equal(_counts(frame, cells), ref)
    assert cells.names[0] == "a=x & b=it's"  # a quote is a value, never SQL
    # Listed values with others: an unseen value lands in (other), the rows stay partitioned.
    listed = marginal_cells(["a"], values={"a": ["x", "y"]})
    got = _counts(frame, listed)
    assert got[-1] == (frame["a"] == "z").sum() and got.sum() == len(frame)


def test_integer_edges_stay_integers_and_float_edges_are_exact():
    h = histogram_cells("x", edges=[0, 0.1, 0.3])
    assert h.expressions[0] == 'count_if("x" >= 0 AND "x" < 0.1)'
    frame = pd.DataFrame({"x": [0.1, 0.3, 0.30000000000000004, 0.0]})
    np.testing.assert_array_equal(_counts(frame, h), [1, 2, 0, 1])


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"bins": 0}, "bins must be an integer >= 1, got 0"),
        ({"bins": 2.5}, "bins must be an integer >= 1"),
        ({"edges": [1, 3, 2]}, "strictly increasing, got 3 then 2"),
        ({"edges": [1]}, "at least two numbers"),
        ({"edges": [0, float("inf")]}, "finite"),
        ({"values": ["a", "a"]}, "distinct"),
        ({"bins": 3, "edges": [0, 1]}, "exactly one of bins, edges, values"),
        ({"bins": MAX_CELLS + 1, "range": [0, 1]}, f"more than {MAX_CELLS} cells (MAX_CELLS)"),
        ({"bins": 3}, "needs the modelling table"),
        ({"edges": [0, 1], "outside": "clip"}, "outside must be one of cell, drop"),
    ],
)
def test_bad_histograms_are_one_line_naming_the_key(kwargs, words):
    with pytest.raises(ParameterError, match=re.escape(words)) as info:
        histogram_cells("age", **kwargs)
    assert "\n" not in str(info.value) and "'age'" in str(info.value)


def test_unknown_columns_and_the_cap_on_distinct_values():
    frame = pd.DataFrame({"id": np.arange(MAX_CELLS + 5), "x": np.ones(MAX_CELLS + 5)})
    with pytest.raises(ParameterError, match="unknown column 'agee'"):
        histogram_cells("agee", bins=3, table=as_table(frame))
    with pytest.raises(ParameterError, match=f"more than {MAX_CELLS} distinct values"):
        marginal_cells(["id"], table=as_table(frame))
    with pytest.raises(ParameterError, match="single value 1"):
        histogram_cells("x", bins=3, table=as_table(frame))
    with pytest.raises(ParameterError, match="cap of 2048"):
        marginal_cells(["a", "b"], values={"a": list(range(50)), "b": list(range(50))})


def test_expand_keeps_plain_statistics_and_refuses_a_clash():
    q, tables = expand_cells(
        {"n": "count(*)", "histogram": [{"column": "x", "edges": [0, 1]}], "marginal": ["s"]},
        table=as_table(pd.DataFrame({"x": [0.5], "s": ["a"]})),
    )
    assert list(q) == ["n", "x in [0, 1]", "x < 0", "x > 1", "s=a"]
    assert [t.kind for t in tables] == ["histogram", "marginal"]
    with pytest.raises(ParameterError, match="named like another statistic"):
        expand_cells({"s=a": "count(*)", "marginal": {"columns": ["s"], "values": {"s": ["a"]}}})


def test_the_library_front_exports_them():
    assert distpriv.histogram_cells is histogram_cells
    assert distpriv.marginal_cells is marginal_cells


def _write(tmp_path, query: str):
    model = pd.DataFrame(
        {
            "age": [20, 30, 40, 50, 60, 70] * 5,
            "sex": ["F", "M", "F", "M", "F", "M"] * 5,
            "y": [1, 0, 0, 1, 0, 1] * 5,
        }
    )
    model.to_csv(tmp_path / "m.csv", index=False)
    path = tmp_path / "c.toml"
    path.write_text(
        '[data]\nmodel = "m.csv"\n[query]\n'
        + query
        + '\n[secret]\npredicate = "y = 1"\nvalues = [0.4, 0.6]\n[model]\nsubset_size = 10\n'
        '[mechanism]\nname = "expm-g"\nepsilon = 1.0\ndelta = 1e-3\n'
    )
    return path


def test_a_release_config_expands_histograms_and_marginals(tmp_path):
    cfg = load_release_config(
        _write(tmp_path, 'histogram = { column = "age", bins = 5 }\nmarginal = ["sex"]')
    )
    assert list(cfg.query) == [
        "age in [20, 30)",
        "age in [30, 40)",
        "age in [40, 50)",
        "age in [50, 60)",
        "age in [60, 70]",
        "sex=F",
        "sex=M",
    ]


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ('histogram = { column = "agee", bins = 5 }', "histogram of 'agee': unknown column"),
        ('histogram = { column = "age", bins = 0 }', "bins must be an integer >= 1, got 0"),
        ('histogram = { column = "age", edges = [3, 1] }', "strictly increasing"),
        ('histogram = { column = "age", bin = 3 }', "unknown key 'bin'"),
        ('histogram = "age"', "[query] histogram must be a table"),
        ('marginal = ["sex", "sex"]', "a column is named twice"),
        ('marginal = ["a", "b", "c"]', "one or two column names"),
    ],
)
def test_config_errors_are_one_line_naming_file_and_key(tmp_path, query, words):
    with pytest.raises(ConfigError, match=re.escape(words)) as info:
        load_release_config(_write(tmp_path, query))
    assert "\n" not in str(info.value) and "c.toml" in str(info.value)
