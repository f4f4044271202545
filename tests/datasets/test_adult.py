"""The bundled UCI Adult data: integrity, the cleaning of Chen & Ohrimenko 2023 §5.1, splits."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
from importlib import resources

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from distpriv.datasets import (
    ADULT_ATTRIBUTION,
    ADULT_COLUMNS,
    PAPER_SPLIT,
    load_adult,
    paper_split,
    split,
)
from distpriv.errors import ParameterError, ParameterTypeError

COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
    "income",
]
INT_COLUMNS = ["age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week"]
STR_COLUMNS = [c for c in COLUMNS if c not in INT_COLUMNS]

# MD5s of the original files, from SOURCE.md.
MD5 = {
    "adult.data.gz": "5d7c39d7b8804f071cdd1f2a7c460872",
    "adult.test.gz": "35238206dfdf7f1fe215bbb874adecdc",
}
DATA = resources.files("distpriv.datasets").joinpath("data")


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return load_adult()


def _raw_bytes(name: str) -> bytes:
    return gzip.decompress(DATA.joinpath(name).read_bytes())


# --- the bundled files ---------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MD5))
def test_gz_files_decompress_to_the_original_md5(name):
    assert hashlib.md5(_raw_bytes(name)).hexdigest() == MD5[name]


@pytest.mark.parametrize("name", sorted(MD5))
def test_gz_files_are_reproducible(name):
    # mtime=0 and no embedded file name: recompressing gives the same bytes on any machine.
    header = DATA.joinpath(name).read_bytes()[:10]
    assert header[:3] == b"\x1f\x8b\x08"
    assert header[3] & 0x08 == 0  # FNAME flag unset
    assert int.from_bytes(header[4:8], "little") == 0


def test_attribution_ships_with_the_data():
    source = DATA.joinpath("SOURCE.md").read_text(encoding="utf-8")
    names = DATA.joinpath("adult.names").read_text(encoding="utf-8")
    for text in (source, ADULT_ATTRIBUTION):
        for needle in ("Becker", "Kohavi", "1996", "UCI Machine Learning Repository",
                       "https://doi.org/10.24432/C5XW20", "CC BY 4.0"):  # fmt: skip
            assert needle in text
    assert "gzip-compressed" in source
    assert "adult" in names.lower()


# --- load_adult ----------------------------------------------------------------------


def test_row_counts_match_the_paper(adult):
    # Chen & Ohrimenko 2023 §5.1 and SOURCE.md: 45,222 clean rows.
    assert len(adult) == 45_222
    assert int((adult["income"] == ">50K").sum()) == 11_208
    assert int((adult["workclass"] == "Private").sum()) == 33_307


def test_columns_index_and_dtypes(adult):
    assert list(adult.columns) == COLUMNS
    assert list(ADULT_COLUMNS) == COLUMNS
    assert isinstance(adult.index, pd.RangeIndex)
    assert adult.index.equals(pd.RangeIndex(45_222))
    for col in INT_COLUMNS:
        assert adult[col].dtype == np.int64, col
    for col in STR_COLUMNS:
        assert adult[col].dtype == object, col
        assert all(type(v) is str for v in adult[col].to_numpy()), col


def test_cleaning(adult):
    assert not adult.isna().any().any()
    for col in STR_COLUMNS:
        values = adult[col].to_numpy()
        assert not any(v == "?" or v != v.strip() or v == "" for v in values), col
    assert set(adult["income"]) == {">50K", "<=50K"}
    assert adult["age"].between(17, 90).all()
    # Train rows come first: the first row of adult.data.
    assert adult.iloc[0].tolist() == [
        39, "State-gov", 77516, "Bachelors", 13, "Never-married", "Adm-clerical",
        "Not-in-family", "White", "Male", 2174, 0, 40, "United-States", "<=50K",
    ]  # fmt: skip


def test_matches_an_independent_parse(adult):
    # The same cleaning with the csv module instead of pandas.
    rows = []
    for name, skip in (("adult.data.gz", 0), ("adult.test.gz", 1)):
        text = _raw_bytes(name).decode("ascii")
        for record in list(csv.reader(io.StringIO(text)))[skip:]:
            fields = [f.strip() for f in record]
            if not record or "?" in fields:
                continue
            fields[-1] = fields[-1].rstrip(".")
            rows.append(fields)
    expected = pd.DataFrame(rows, columns=COLUMNS, dtype=object)
    expected = expected.astype({c: np.int64 for c in INT_COLUMNS})
    assert len(rows) == 45_222
    pd.testing.assert_frame_equal(adult, expected)


def test_returns_independent_copies():
    first = load_adult()
    first.loc[0, "age"] = -1
    first.loc[1, "sex"] = "changed"
    first["income"] = "x"
    second = load_adult()
    assert len(second) == 45_222
    assert second.loc[0, "age"] == 39
    assert second.loc[1, "sex"] == "Male"
    assert set(second["income"]) == {">50K", "<=50K"}
    assert second is not load_adult()


def test_duckdb_scans_the_frame(adult):
    df = adult  # noqa: F841 - DuckDB finds the frame by its Python name
    (females,) = duckdb.sql("select count_if(sex = 'Female') from df").fetchall()[0]
    assert females == int((adult["sex"] == "Female").sum())
    counts = dict(duckdb.sql("select income, count(*) from df group by income").fetchall())
    assert counts == {">50K": 11_208, "<=50K": 45_222 - 11_208}
    (mean_age,) = duckdb.sql("select avg(age) from df").fetchall()[0]
    assert mean_age == pytest.approx(adult["age"].mean(), rel=1e-12)


# --- split / paper_split -------------------------------------------------------------


def test_paper_split_sizes_disjoint_and_covering(adult):
    parts = paper_split(adult, rng=0)
    assert list(parts) == ["auxiliary", "test", "modeling"]
    assert [len(p) for p in parts.values()] == [10_000, 10_000, 25_222]
    index = np.concatenate([p.index.to_numpy() for p in parts.values()])
    assert len(np.unique(index)) == len(adult)
    assert set(index) == set(adult.index)
    for part in parts.values():
        # Each row keeps its original label and content.
        pd.testing.assert_frame_equal(part, adult.loc[part.index])


def test_paper_split_defaults_to_load_adult(adult):
    default = paper_split(rng=3)
    explicit = paper_split(adult, rng=3)
    for name in PAPER_SPLIT:
        pd.testing.assert_frame_equal(default[name], explicit[name])


def test_paper_split_constant():
    assert dict(PAPER_SPLIT) == {"auxiliary": 10_000, "test": 10_000, "modeling": None}
    with pytest.raises(TypeError):
        PAPER_SPLIT["test"] = 5  # type: ignore[index]


def test_split_is_seeded(adult):
    a = paper_split(adult, rng=11)
    b = paper_split(adult, rng=11)
    c = paper_split(adult, rng=12)
    for name in PAPER_SPLIT:
        assert a[name].index.equals(b[name].index)
    assert not a["auxiliary"].index.equals(c["auxiliary"].index)
    # A Generator is used as given: seed 11 and default_rng(11) draw the same permutation.
    g = paper_split(adult, rng=np.random.default_rng(11))
    assert g["test"].index.equals(a["test"].index)


def test_split_consumes_a_generator(adult):
    gen = np.random.default_rng(5)
    first = split(adult, {"a": 100}, rng=gen)
    second = split(adult, {"a": 100}, rng=gen)
    assert not first["a"].index.equals(second["a"].index)


def test_split_keeps_index_labels_and_leaves_input_alone():
    df = pd.DataFrame({"x": range(10)}, index=list("abcdefghij"))
    before = df.copy()
    parts = split(df, {"one": 3, "two": 2}, rng=1)
    assert [len(p) for p in parts.values()] == [3, 2]
    for part in parts.values():
        assert set(part.index) <= set(df.index)
        assert (part["x"] == df.loc[part.index, "x"]).all()
    assert not set(parts["one"].index) & set(parts["two"].index)
    pd.testing.assert_frame_equal(df, before)


def test_split_rest_can_come_first():
    df = pd.DataFrame({"x": range(10)})
    parts = split(df, {"rest": None, "b": 4}, rng=0)
    assert [len(p) for p in parts.values()] == [6, 4]
    assert sorted(np.concatenate([p.index for p in parts.values()])) == list(range(10))


@given(
    n=st.integers(1, 40),
    counts=st.lists(st.integers(1, 10), min_size=1, max_size=5),
    rest=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_split_partitions_rows(n, counts, rest, seed):
    df = pd.DataFrame({"x": np.arange(n)})
    sizes: dict[str, int | None] = {f"p{i}": c for i, c in enumerate(counts)}
    if rest:
        sizes["rest"] = None
    total = sum(counts)
    if total > n or (rest and total == n):
        with pytest.raises(ParameterError, match="sizes"):
            split(df, sizes, rng=seed)
        return
    parts = split(df, sizes, rng=seed)
    assert list(parts) == list(sizes)
    expected = [*counts, n - total] if rest else counts
    assert [len(p) for p in parts.values()] == expected
    index = np.concatenate([p.index.to_numpy() for p in parts.values()])
    assert len(np.unique(index)) == len(index)
    assert set(index) <= set(range(n))


SMALL = pd.DataFrame({"x": range(5)})


@pytest.mark.parametrize(
    ("df", "sizes", "rng", "error", "match"),
    [
        ([[1, 2]], {"a": 1}, 0, ParameterTypeError, r"^df must be a pandas\.DataFrame"),
        (np.zeros((3, 2)), {"a": 1}, 0, ParameterTypeError, r"^df must be a pandas\.DataFrame"),
        (SMALL["x"], {"a": 1}, 0, ParameterTypeError, r"^df must be a pandas\.DataFrame"),
        (SMALL.iloc[:0], {"a": 1}, 0, ParameterError, r"^df must have at least one row"),
        (SMALL, [("a", 1)], 0, ParameterTypeError, r"^sizes must be a mapping.*list"),
        (SMALL, 3, 0, ParameterTypeError, r"^sizes must be a mapping.*int 3"),
        (SMALL, {}, 0, ParameterError, r"^sizes must have at least one entry"),
        (SMALL, {"a": 0}, 0, ParameterError, r"^sizes\['a'\] must be >= 1, got 0"),
        (SMALL, {"a": -2}, 0, ParameterError, r"^sizes\['a'\] must be >= 1, got -2"),
        (SMALL, {"a": 1.5}, 0, ParameterTypeError, r"^sizes\['a'\] must be a positive int.*1\.5"),
        (SMALL, {"a": 2.0}, 0, ParameterTypeError, r"^sizes\['a'\] must be a positive int"),
        (SMALL, {"a": "2"}, 0, ParameterTypeError, r"^sizes\['a'\] must be a positive int"),
        (SMALL, {"a": True}, 0, ParameterTypeError, r"^sizes\['a'\] must be a positive int"),
        (SMALL, {1: 2}, 0, ParameterTypeError, r"^sizes keys must be strings, got int 1"),
        (SMALL, {"a": None, "b": None}, 0, ParameterError, r"^sizes may have at most one None"),
        (SMALL, {"a": 4, "b": 2}, 0, ParameterError, r"^sizes ask for 6 rows.*only 5"),
        (SMALL, {"a": 6}, 0, ParameterError, r"^sizes ask for 6 rows.*only 5"),
        (SMALL, {"a": 5, "b": None}, 0, ParameterError, r"^sizes leave no rows for sizes\['b'\]"),
        (SMALL, {"a": 1}, "seed", ParameterTypeError, r"^rng must be None, an int seed"),
        (SMALL, {"a": 1}, 1.0, ParameterTypeError, r"^rng must be None, an int seed"),
        (SMALL, {"a": 1}, -1, ParameterError, r"^rng seed must be non-negative"),
    ],
)
def test_split_rejects_bad_input(df, sizes, rng, error, match):
    with pytest.raises(error, match=match):
        split(df, sizes, rng=rng)


def test_split_accepts_numpy_integer_counts():
    parts = split(SMALL, {"a": np.int64(2), "b": np.int32(3)}, rng=0)
    assert [len(p) for p in parts.values()] == [2, 3]


def test_split_requires_rng_keyword():
    with pytest.raises(TypeError):
        split(SMALL, {"a": 1})  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        split(SMALL, {"a": 1}, 0)  # type: ignore[misc]


def test_paper_split_rejects_a_too_small_table(adult):
    with pytest.raises(ParameterError, match=r"^sizes leave no rows for sizes\['modeling'\]"):
        paper_split(adult.iloc[:20_000], rng=0)
    with pytest.raises(ParameterError, match=r"^sizes ask for 20000 rows"):
        paper_split(adult.iloc[:100], rng=0)
    with pytest.raises(ParameterTypeError, match=r"^df must be a pandas\.DataFrame"):
        paper_split(adult.to_numpy(), rng=0)
