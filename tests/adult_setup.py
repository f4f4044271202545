"""The set-up many tests share: the Adult statistics and income secret of Chen & Ohrimenko
(2023, Sec. 6), their analytic model, a small Adult release written to disk, and the text of a
release configuration.

The fixtures built from these (``adult_parts``, ``adult_modeling``, ``adult_analytic``,
``adult_release_tables``) are in ``conftest.py``. The statistics are written out here rather
than taken from the library's demo, so that a test compares against its own reference.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from distpriv.modeling import ProportionSecret, Query, model_query

#: The paper's five statistics of a subset of 100 Adult rows.
ADULT_STATS = {
    "avg_age": "avg(age)",
    "avg_education_years": "avg(education_num)",
    "n_never_married": "count_if(marital_status = 'Never-married')",
    "n_female": "count_if(sex = 'Female')",
    "avg_hours_per_week": "avg(hours_per_week)",
}
ADULT_QUERY = Query(ADULT_STATS)
#: The hidden property: the share of rows earning more than 50K.
RICH = "income = '>50K'"
INCOME = ProportionSecret(RICH, values=[0.45, 0.55])


def adult_income_model(frame: Any, *, quiet: bool = False, **options: Any) -> Any:
    """The analytic model of :data:`ADULT_STATS` and :data:`INCOME` on ``frame`` (subsets of
    100 rows, ``rng=0``); ``options`` override or add keywords of ``model_query``, and
    ``quiet`` silences the assumption warnings of a small table."""
    kwargs: dict[str, Any] = {"subset_size": 100, "method": "analytic", "rng": 0, **options}
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
        return model_query(frame, ADULT_STATS, INCOME, **kwargs)


def write_release_tables(directory: Path, *, rows: int = 3000, released: int = 100) -> Path:
    """A small Adult release on disk: ``model.csv`` (the first ``rows`` rows of the paper's
    modelling split, seed 0) and ``released.csv`` (``released`` rows sampled from its test
    split with ``random_state=3``). Returns ``directory``."""
    from distpriv.pipeline.stages.data import load_frame

    model = load_frame("adult:modeling", split_seed=0, what="model").iloc[:rows]
    test = load_frame("adult:test", split_seed=0, what="test")
    model.to_csv(directory / "model.csv", index=False)
    test.sample(released, random_state=3).to_csv(directory / "released.csv", index=False)
    return directory


def copy_release_tables(source: Path, into: Path, names: tuple[str, ...] = ()) -> Path:
    """Copy ``model.csv``, ``released.csv`` and ``names`` from ``source`` into ``into`` (a
    test's own directory, so its default ledger and outputs stay its own). Returns ``into``."""
    for name in ("model.csv", "released.csv", *names):
        (into / name).write_bytes((source / name).read_bytes())
    return into


def release_toml(
    *,
    query: Mapping[str, str] | str,
    secret: str,
    model: str = "model.csv",
    release: str | None = None,
    title: str | None = None,
    insecure_seed: int | None = None,
    method: str | None = None,
    mechanism: str = "expm-g",
    epsilon: float | str = 1.0,
    delta: float | str = 1e-3,
    extra: str = "",
) -> str:
    """The text of a release configuration. ``query`` maps names to expressions (or is raw
    TOML lines), ``secret`` is the body of ``[secret]``, and ``extra`` is appended after
    ``[mechanism]`` (more mechanism keys, or further tables)."""
    lines = []
    if title is not None:
        lines.append(f"title = {json.dumps(title)}")
    if insecure_seed is not None:
        lines.append(f"insecure_seed = {insecure_seed}")
    lines += ["[data]", f"model = {json.dumps(model)}"]
    if release is not None:
        lines.append(f"release = {json.dumps(release)}")
    lines.append("[query]")
    if isinstance(query, str):
        lines.append(query)
    else:
        lines += [f"{name} = {json.dumps(expr)}" for name, expr in query.items()]
    lines += ["[secret]", secret, "[model]", "subset_size = 100"]
    if method is not None:
        lines.append(f"method = {json.dumps(method)}")
    lines += [
        "[mechanism]",
        f"name = {json.dumps(mechanism)}",
        f"epsilon = {epsilon}",
        f"delta = {delta}",
    ]
    if extra:
        lines.append(extra)
    return "\n".join(lines) + "\n"


#: The ``[secret]`` body of :data:`INCOME` in a configuration.
INCOME_TOML = "predicate = \"income = '>50K'\"\nvalues = [0.45, 0.55]"


#: Two statistics of the small release: quick to model and calibrate.
TWO_STATS = {"avg_age": "avg(age)", "n_female": "count_if(sex = 'Female')"}


def small_release_toml(**overrides: Any) -> str:
    """:func:`release_toml` of the small Adult release of ``adult_release_tables``: the
    tables ``model.csv`` and ``released.csv``, :data:`TWO_STATS`, the income secret, the
    analytic model and daum at ε = 1, δ = 1e-3; ``overrides`` replace any of these."""
    settings: dict[str, Any] = {
        "release": "released.csv",
        "query": TWO_STATS,
        "secret": INCOME_TOML,
        "method": "analytic",
        "mechanism": "daum",
        **overrides,
    }
    return release_toml(**settings)
