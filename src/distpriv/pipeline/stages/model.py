"""The one builder of a release's query model: a :class:`~distpriv.pipeline.plan.ModelSpec`
and a table in, the :class:`~distpriv.modeling.DataQueryModel` out.

Every model of a release comes from here — the model a mechanism is calibrated on, the
audit's, the data-level check's, and the ledger's joint model of every release of the same
data — so they cannot be built with different options (method, Monte Carlo datasets, seed,
population, NULL policy, bootstrap, row pool). Chen & Ohrimenko 2023, App. C.1: f_θ is the
distribution of the statistics over datasets of n rows drawn from the modelling table with the
secret's value θ.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from ...modeling import DataQueryModel, Query, Secret, model_query
from ...modeling import tables as _tables
from ..plan import ModelSpec
from .data import MIN_ROWS_PER_DRAWN_ROW

__all__ = ["POOL_ROWS", "build_query_model", "pool_size"]

# Rows per stratum of the Monte Carlo row pool drawn in the engine when the modelling table
# is too large for memory (at least MIN_ROWS_PER_DRAWN_ROW per row a dataset draws).
POOL_ROWS = 200_000


def pool_size(table: Any, n: int) -> int | None:
    """``None`` (the whole table) when it fits the row-level path, else an engine pool size."""
    n_rows = getattr(table, "n_rows", None)
    if n_rows is None or n_rows <= _tables.MAX_IN_MEMORY_ROWS:
        return None
    return max(POOL_ROWS, MIN_ROWS_PER_DRAWN_ROW * n)


def build_query_model(
    spec: ModelSpec,
    table: Any,
    query: Query,
    secret: Secret,
    *,
    rng: np.random.Generator | None = None,
    pool: int | Literal["auto"] | None = "auto",
) -> DataQueryModel:
    """The query model of ``query`` under ``secret`` on ``table``, as ``spec`` says.

    Parameters
    ----------
    spec : ModelSpec
        How to model; pass ``spec.for_mechanism(name)`` for a mechanism that needs the
        samples view.
    table : Table, DataFrame or path
        The modelling table.
    query, secret
        The statistics and the secret.
    rng : Generator, optional
        Randomness of the modelling; default ``spec.seed``.
    pool : int, None or "auto"
        Monte Carlo datasets drawn from a row pool of that many rows per stratum, sampled in
        the engine; ``"auto"``: one when the table is too large for memory
        (:func:`pool_size`); ``None``: the whole table. Ignored by the analytic method.

    Returns
    -------
    DataQueryModel
    """
    if spec.method != "montecarlo":
        pool = None
    elif pool == "auto":
        pool = pool_size(table, spec.subset_size)
    return model_query(
        table,
        query,
        secret,
        subset_size=spec.subset_size,
        method=spec.method,
        n_samples=spec.n_samples,
        rng=spec.seed if rng is None else rng,
        missing=spec.missing,
        population=spec.population,
        pool_size=pool,
        bootstrap=spec.bootstrap,
    )
