"""Public facts about a modelling table that a mechanism's default options come from.

The group-DP baselines need each statistic's per-row span, the floored mechanisms the
lattice (grid) each statistic lives on (:mod:`distpriv.modeling.lattice`). They are facts
about the modelling table, computed once when a model is built from it
(:func:`distpriv.model_query` stores them as ``model.facts``) so that the library, the
configuration path and ``auto`` calibrate with the same options (moved
here from ``pipeline/stages/data.py``, where the pipeline computed them on its own).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ParameterError
from . import tables as _tables
from .lattice import Lattice, query_lattices
from .queries import Query
from .tables import Table, sample_table

if TYPE_CHECKING:
    from ..central.registry import TableFacts

__all__ = ["LATTICE_SAMPLE_ROWS", "engine_table_facts", "linear_scales", "table_lattices"]

# Rows on which the grid of each statistic is detected (the floored mechanisms' lattice).
LATTICE_SAMPLE_ROWS = 200_000


def engine_table_facts(
    table: Table, query: Query, subset_size: int, *, missing: str = "error"
) -> TableFacts:
    """Spans, scales and lattice steps of the statistics over the modelling table.

    The spans (max − min of each statistic's per-row feature) come from one aggregate
    query in the table's engine; the lattice steps from :func:`table_lattices`. Rows with a
    missing value in a used column are left out under ``missing="drop"``.

    Parameters
    ----------
    table : Table
        The modelling table.
    query : Query
        Linear statistics.
    subset_size : int
        n, rows of a protected dataset.
    missing : {"error", "drop"}

    Returns
    -------
    TableFacts

    Raises
    ------
    ParameterError
        A statistic is not linear, or its span is not finite.
    """
    from ..central.registry import TableFacts

    if not query.is_linear:
        bad = next(s for s in query.statistics if not s.linear)
        raise ParameterError(
            f"default options (group-DP sensitivities) need linear statistics; "
            f"{bad.name!r} ({bad.expression}) is not: set them in [mechanism]"
        )
    query.check_columns(table)
    complete, _ = table.complete(query.columns, missing=missing, what="modelling data")
    select, names = [], []
    for s in query.statistics:
        name = f"statistic {s.name!r} ({s.expression})"
        if s.row_expression is None:  # excluded by the is_linear check above
            raise ParameterError(f"{name} is not linear")
        expr = f"CAST(({complete.safe_sql(s.row_expression, name, 'scalar')}) AS DOUBLE)"
        select += [f"max({expr}) - min({expr})"]
        names.append(name)
    row = complete.run(select, what="spans of the statistics on the modelling data")[0]
    spans = []
    for name, v in zip(names, row, strict=True):
        if v is None or not np.isfinite(float(v)):
            raise ParameterError(f"{name}: the span over the modelling data is not finite")
        spans.append(float(v))
    steps = tuple(
        math.nan if lat.step is None else lat.step
        for lat in table_lattices(table, query, subset_size, missing=missing)
    )
    return TableFacts(subset_size, declared_spans(query, spans), linear_scales(query), steps)


def declared_spans(query: Query, spans: Any) -> tuple[float, ...]:
    """Each statistic's span for the group-DP baselines: the width of its declared range
    where it has a finite one, else the modelling table's per-row span.

    The group-DP noise is published (its comparison in ``auto``'s table, the report's
    figure): a declared range is public, the table's max − min is a fact about its rows.
    A row moves a statistic within its range by at most the range's width (a mean's rows
    lie in it too: the width is then the per-row span).
    """
    lo, hi = query.range_bounds()
    width = hi - lo
    return tuple(
        float(w) if np.isfinite(w) else float(v) for v, w in zip(spans, width, strict=True)
    )


def linear_scales(query: Query) -> tuple[str, ...]:
    """``"sum"`` or ``"mean"`` per statistic of a query the caller checked is linear."""
    scales = tuple(s.scale for s in query.statistics)
    if any(c is None for c in scales):
        raise ParameterError("default options (group-DP sensitivities) need linear statistics")
    return tuple(str(c) for c in scales)


def table_lattices(
    table: Table, query: Query, subset_size: int, *, missing: str = "error"
) -> tuple[Lattice, ...]:
    """The lattice of each statistic (:func:`~distpriv.modeling.lattice.query_lattices`),
    detected on a bounded sample drawn in the engine.

    At most :data:`LATTICE_SAMPLE_ROWS` rows and a quarter of the in-memory limit, never
    the whole table. A subsample can only find a multiple of the true step (the gcd of
    fewer differences), so the floor it sets is never smaller than intended. A Spark table
    larger than the sample gets no grid (so no floored mechanism).
    """
    limit = max(1, min(LATTICE_SAMPLE_ROWS, _tables.MAX_IN_MEMORY_ROWS // 4))
    if table.n_rows > limit:
        if table.engine.dialect != "duckdb":
            return tuple(
                Lattice(s.name, None, None, "declared", "Spark table larger than the sample")
                for s in query.statistics
            )
        rng = np.random.default_rng(0)  # which public rows: no privacy role
        table = sample_table(table, limit, rng, "grid detection")
    if missing != "error":
        table = table.complete(query.columns, missing=missing, what="modelling data")[0]
    return query_lattices(table, query, subset_size)
