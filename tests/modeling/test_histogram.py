"""Histogram statistics: the generated count_if expressions and the worked example config."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from distpriv.errors import ParameterError
from distpriv.modeling import parse_expression
from distpriv.modeling.histogram import histogram_queries
from distpriv.modeling.queries import Query
from distpriv.pipeline.config import load_release_config

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "adult-histogram.toml"


def test_counts_match_a_pandas_group_by():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"age": rng.integers(17, 80, size=500), "sex": rng.choice(["Female", "Male"], 500)}
    )
    edges = [17, 25, 40, 66]
    stats = histogram_queries("age", edges=edges, by="sex", by_values=["Female", "Male"])
    values = Query(stats).evaluate(frame)
    # Independent reference: pandas cut + groupby, same half-open bins.
    ref = (
        frame.assign(bin=pd.cut(frame["age"], edges, right=False))
        .groupby(["bin", "sex"], observed=False)
        .size()
        .to_numpy()
    )
    np.testing.assert_array_equal(np.asarray(values, dtype=float), ref.astype(float))


def test_values_are_literals_not_sql():
    stats = histogram_queries("workclass", values=["Private", "x'); DROP TABLE t; --"])
    for expr in stats.values():
        parse_expression(expr, what="statistic", columns=["workclass"])
    with pytest.raises(ParameterError, match="increasing"):
        histogram_queries("age", edges=[3, 2])
    with pytest.raises(ParameterError, match="exactly one"):
        histogram_queries("age")
    with pytest.raises(ParameterError, match="by_values is required"):
        histogram_queries("age", edges=[1, 2], by="sex")


def test_example_config_is_the_generated_histogram():
    cfg = load_release_config(EXAMPLE)
    expected = histogram_queries("age", edges=range(17, 68), by="sex", by_values=["Female", "Male"])
    assert cfg.query == expected
    assert len(cfg.query) == 100
    assert cfg.mechanism == "auto"
