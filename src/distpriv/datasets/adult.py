"""The UCI Adult (Census Income) data set, bundled with the package, and seeded splits.

The raw files ship gzip-compressed in ``distpriv/datasets/data`` (docs/architecture.md §3, "Data"):
nothing is downloaded at run time. :func:`load_adult` applies the cleaning used by
Chen & Ohrimenko 2023, §5.1, and :func:`paper_split` reproduces their allocation of the
45,222 clean rows into auxiliary, test and modelling data.
"""

from __future__ import annotations

import functools
import gzip
import numbers
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..util.validation import _short, check_positive_int, check_rng

if TYPE_CHECKING:  # imported where a frame is made (``distpriv verify`` never needs pandas)
    import pandas as pd

__all__ = [
    "ADULT_ATTRIBUTION",
    "ADULT_COLUMNS",
    "PAPER_SPLIT",
    "load_adult",
    "paper_split",
    "split",
]

ADULT_ATTRIBUTION: str = (
    "Becker, B. and Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning Repository. "
    "https://doi.org/10.24432/C5XW20. Licensed under the Creative Commons Attribution 4.0 "
    "International (CC BY 4.0) license, https://creativecommons.org/licenses/by/4.0/. "
    "distpriv ships gzip-compressed, otherwise unchanged copies of adult.data, adult.test "
    "and adult.names; load_adult() removes rows with missing values, strips spaces and "
    "normalises the income labels."
)

#: Column names of :func:`load_adult`, in the order of the original files.
ADULT_COLUMNS: tuple[str, ...] = (
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
)

_INT_COLUMNS = frozenset(
    {"age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week"}
)

# (file name, number of leading lines to skip): adult.test opens with "|1x3 Cross validator".
_DATA_FILES: tuple[tuple[str, int], ...] = (("adult.data.gz", 0), ("adult.test.gz", 1))

# adult.test writes its labels with a trailing full stop.
_INCOME_LABELS = {">50K.": ">50K", "<=50K.": "<=50K", ">50K": ">50K", "<=50K": "<=50K"}

#: Chen & Ohrimenko 2023, §5.1: 10,000 auxiliary rows (attacks), 10,000 test rows (attack
#: accuracy), and the remaining 25,222 for modelling the query distributions. Read-only so
#: that no caller can change the split for everyone else.
PAPER_SPLIT: Mapping[str, int | None] = MappingProxyType(
    {"auxiliary": 10_000, "test": 10_000, "modeling": None}
)


def _read_raw(name: str, skiprows: int) -> pd.DataFrame:
    """Parse one bundled gz file: int64 and str columns, the missing marker ``?`` as NaN."""
    import pandas as pd

    resource = resources.files(__package__).joinpath("data", name)
    with resource.open("rb") as raw, gzip.open(raw, "rb") as fh:
        # keep_default_na=False and na_values=["?"]: only a field equal to "?" is missing,
        # never one pandas' NA heuristics would guess. The files separate fields by ", ":
        # the parser drops the space (skipinitialspace), a third of the cost of str.strip
        # on every column; no field has other surrounding whitespace
        # (tests/datasets: equal to an independent, stripped parse). The integer columns
        # are parsed as int64 by the C parser (cheaper than comparing
        # every field with "?" and converting afterwards).
        return pd.read_csv(
            fh,
            header=None,
            names=list(ADULT_COLUMNS),
            skiprows=skiprows,
            dtype={c: np.int64 if c in _INT_COLUMNS else object for c in ADULT_COLUMNS},
            keep_default_na=False,
            na_values=["?"],
            skip_blank_lines=True,
            skipinitialspace=True,
        )


@functools.lru_cache(maxsize=1)
def _load_adult_cached() -> pd.DataFrame:
    """Parse and clean both files once per process; callers get copies."""
    import pandas as pd

    df = pd.concat([_read_raw(name, skip) for name, skip in _DATA_FILES], ignore_index=True)
    df = df.loc[df.notna().all(axis=1)].reset_index(drop=True)
    # Plain Python-str object columns: identical under pandas 2.x and 3.x and scanned
    # directly by DuckDB (a dict lookup per row: Series.map costs more than the parse).
    df["income"] = pd.Series([_INCOME_LABELS.get(x) for x in df["income"].to_numpy()], dtype=object)
    return df


def load_adult() -> pd.DataFrame:
    """Load the cleaned UCI Adult data set bundled with distpriv.

    Reads the package's gzip-compressed copies of ``adult.data`` and ``adult.test``
    (no network access) and applies the cleaning of Chen & Ohrimenko 2023, §5.1:

    1. concatenate the training file, then the test file (whose first, comment line
       ``|1x3 Cross validator`` is skipped);
    2. strip leading and trailing spaces from every field;
    3. drop every row with a missing value (a field equal to ``?``);
    4. normalise the test file's labels ``>50K.`` / ``<=50K.`` to ``>50K`` / ``<=50K``.

    The result has 45,222 rows, of which 11,208 have income ``'>50K'`` and 33,307 have
    workclass ``'Private'``.

    The parsed table is cached for the life of the process; each call returns a fresh
    copy, so modifying the result never affects later calls.

    Returns
    -------
    pandas.DataFrame
        Shape ``(45222, 15)`` with a ``RangeIndex`` 0..45221 and the columns ``age,
        workclass, fnlwgt, education, education_num, marital_status, occupation,
        relationship, race, sex, capital_gain, capital_loss, hours_per_week,
        native_country, income`` (the original order, in snake_case). ``age``,
        ``fnlwgt``, ``education_num``, ``capital_gain``, ``capital_loss`` and
        ``hours_per_week`` are ``int64``; the others are ``object`` columns of Python
        ``str``, which DuckDB can query in place (``duckdb.sql("select ... from df")``).

    Notes
    -----
    Source: Becker, B. and Kohavi, R. (1996). *Adult*. UCI Machine Learning Repository.
    https://doi.org/10.24432/C5XW20. Licensed under CC BY 4.0; keep this attribution
    (also in :data:`ADULT_ATTRIBUTION` and ``distpriv/datasets/data/SOURCE.md``) when
    redistributing the data.

    Examples
    --------
    >>> df = load_adult()
    >>> df.shape
    (45222, 15)
    >>> int((df["income"] == ">50K").sum())
    11208
    """
    return _load_adult_cached().copy(deep=True)


def split(
    df: pd.DataFrame,
    sizes: Mapping[str, int | None],
    *,
    rng: int | np.random.Generator | None,
) -> dict[str, pd.DataFrame]:
    """Randomly partition the rows of ``df`` into named, disjoint parts.

    One permutation of the rows is drawn from ``rng``; the parts are consecutive slices of
    it, taken in the order of ``sizes``. Rows keep their original index labels, and within
    a part they appear in the (random) permutation order.

    Parameters
    ----------
    df : pandas.DataFrame
        The table to split; must have at least one row.
    sizes : Mapping[str, int or None]
        Part name → number of rows (a positive int). At most one entry may be ``None``,
        meaning "all remaining rows" (which must then be at least one). The counts must
        sum to at most ``len(df)``; without a ``None`` entry, rows left over are not
        returned.
    rng : int, numpy.random.Generator or None
        Seed or generator (``None`` draws fresh OS entropy). Keyword-only and required,
        so that every split is reproducible by choice.

    Returns
    -------
    dict[str, pandas.DataFrame]
        One frame per entry of ``sizes``, in the same order.

    Raises
    ------
    ParameterTypeError
        ``df`` is not a DataFrame, ``sizes`` is not a mapping, a name is not a string, a
        count is not an int or ``None``, or ``rng`` has the wrong type.
    ParameterError
        ``df`` is empty, ``sizes`` is empty, a count is < 1, more than one count is
        ``None``, or the counts exceed ``len(df)``.

    Examples
    --------
    >>> parts = split(load_adult(), {"train": 1000, "rest": None}, rng=0)
    >>> [len(p) for p in parts.values()]
    [1000, 44222]
    """
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise ParameterTypeError(
            f"df must be a pandas.DataFrame, got {type(df).__name__} {_short(df)}"
        )
    n = len(df)
    if n == 0:
        raise ParameterError(f"df must have at least one row, got shape {df.shape}")
    return {name: df.iloc[rows] for name, rows in _split_positions(n, sizes, rng=rng).items()}


def _split_positions(
    n: int, sizes: Mapping[str, int | None], *, rng: int | np.random.Generator | None
) -> dict[str, np.ndarray]:
    """The row positions :func:`split` takes for each part of a table of ``n`` rows.

    One permutation of ``range(n)`` drawn from ``rng``, cut into consecutive slices in the
    order of ``sizes`` (validated as :func:`split` documents; ``n`` ≥ 1). Also used by
    :func:`distpriv.datasets.adult_duckdb.adult_engine`, which selects the same rows in
    DuckDB.
    """
    if not isinstance(sizes, Mapping):
        raise ParameterTypeError(
            f"sizes must be a mapping of name -> row count, got {type(sizes).__name__} "
            f"{_short(sizes)}"
        )
    if len(sizes) == 0:
        raise ParameterError("sizes must have at least one entry, got an empty mapping")

    counts: dict[str, int | None] = {}
    rest_name: str | None = None
    for name, count in sizes.items():
        if not isinstance(name, str):
            raise ParameterTypeError(
                f"sizes keys must be strings, got {type(name).__name__} {_short(name)}"
            )
        if count is None:
            if rest_name is not None:
                raise ParameterError(
                    f"sizes may have at most one None entry ('the rest'), got None for "
                    f"both {rest_name!r} and {name!r}"
                )
            rest_name = name
            counts[name] = None
        elif not isinstance(count, numbers.Integral) or isinstance(count, bool):
            raise ParameterTypeError(
                f"sizes[{name!r}] must be a positive int or None, "
                f"got {type(count).__name__} {_short(count)}"
            )
        else:
            counts[name] = check_positive_int(count, f"sizes[{name!r}]")

    fixed = sum(c for c in counts.values() if c is not None)
    if fixed > n:
        raise ParameterError(
            f"sizes ask for {fixed} rows in total but df has only {n} rows: {dict(sizes)!r}"
        )
    if rest_name is not None and fixed == n:
        raise ParameterError(
            f"sizes leave no rows for sizes[{rest_name!r}] = None: the other counts "
            f"sum to len(df) = {n}"
        )

    gen = check_rng(rng)
    order = gen.permutation(n)
    parts: dict[str, np.ndarray] = {}
    start = 0
    for name, count in counts.items():
        stop = start + (n - fixed if count is None else count)
        parts[name] = order[start:stop]
        start = stop
    return parts


def paper_split(
    df: pd.DataFrame | None = None,
    *,
    rng: int | np.random.Generator | None,
) -> dict[str, pd.DataFrame]:
    """Split the Adult data as in Chen & Ohrimenko 2023, §5.1.

    Allocates 10,000 random rows as auxiliary data (to run attacks), 10,000 as test data
    (to measure attack accuracy) and the remaining rows (25,222 of the clean Adult data)
    for modelling the query distributions; see :data:`PAPER_SPLIT`.

    Parameters
    ----------
    df : pandas.DataFrame, optional
        The table to split; defaults to :func:`load_adult`.
    rng : int, numpy.random.Generator or None
        Seed or generator for the permutation (keyword-only, required).

    Returns
    -------
    dict[str, pandas.DataFrame]
        Keys ``"auxiliary"``, ``"test"``, ``"modeling"``; rows keep ``df``'s index.

    Raises
    ------
    ParameterError, ParameterTypeError
        As :func:`split`, e.g. when ``df`` has 20,000 rows or fewer.
    """
    return split(load_adult() if df is None else df, PAPER_SPLIT, rng=rng)
