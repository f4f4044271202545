"""The query model of mean events: a mean secret's model at each event's grid values.

An :class:`~distpriv.modeling.secret_events.EventSecret` over a
:class:`~distpriv.modeling.secret_mean_events.MeanGrid` is modelled value by value as the
:class:`~distpriv.modeling.secret_mean.MeanSecret` of its grid (every grid value; Ψ = every
value of one event against every value of the other): exponential tilting of the modelling
rows to each value, Gaussian conditioning of the sums, and that model's population layer
(:func:`distpriv.modeling.model_mean.mean_model`). The model carries the event secret, so
reports and the ledger say what is hidden.

Between grid values the premise of docs/guarantees.md ("Mean events") applies. This module
measures, at the midpoint c of every grid step [a, b], how far the model's own law at c is
from the premise's interpolation of the two ends (per-row moments μ, C; a dataset's law is
N(n μ, n C)):

* ``mean_departure``: √n ‖C̄^(−1/2) (μ_c − (μ_a + μ_b)/2)‖ with C̄ = (C_a + C_b)/2, the
  Mahalanobis distance of the midpoint's mean from the segment's midpoint, before noise
  (noise only shrinks it), as a fraction of the closest cross pair's distance;
* ``covariance_departure``: the largest |λ − 1| over the eigenvalues λ of
  C̄^(−1/2) C_c C̄^(−1/2).

Both are second order in the step (the tilted moments are smooth in the value); they are
reported in ``diagnostics["event_grid"]`` and the guarantee's premise names them.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..util.validation import check_positive_int
from .data_model import DataQueryModel
from .model_mean import EventLabels, _features, _inv_sqrt, fit_mean, mean_model
from .queries import Query
from .secret_events import EventSecret
from .secret_mean import MeanSecret
from .tables import Table

__all__ = ["mean_event_model"]


def _check_events_in_range(secret: EventSecret, s: np.ndarray) -> None:
    """One-line errors for an event no dataset's average can fall in, or one reaching
    outside the expression's range on the modelling table (no tilt reaches its ends)."""
    lo_s, hi_s = float(s.min()), float(s.max())
    what = secret.predicate
    for k, (lo, hi) in enumerate(secret.events):
        if hi <= lo_s or lo >= hi_s:
            raise ParameterError(
                f"events[{k}] [{lo:g}, {hi:g}] holds no dataset: every row's {what} is in "
                f"[{lo_s:g}, {hi_s:g}] on the modelling table, so no average falls in the event"
            )
        if lo <= lo_s or hi >= hi_s:
            raise ParameterError(
                f"events[{k}] [{lo:g}, {hi:g}] reaches outside the range of {what} on the "
                f"modelling table ({lo_s:g} to {hi_s:g}, exclusive): narrow it to averages a "
                "dataset can have"
            )


def grid_departure(x: np.ndarray, s: np.ndarray, secret: EventSecret, n: int) -> dict[str, Any]:
    """The premise's departure at every grid step's midpoint (module docstring).

    Parameters
    ----------
    x : ndarray, shape (N, m)
        Per-row features of the statistics (in their units).
    s : ndarray, shape (N,)
        Per-row value of the secret expression.
    secret : EventSecret
        Materialised (:meth:`EventSecret.grid`).
    n : int
        Rows of a protected dataset.

    Returns
    -------
    dict
        ``step`` (the largest grid step), ``mean_departure`` and ``covariance_departure``
        (largest over the steps), ``closest_pair_distance`` (the closest cross pair's
        Mahalanobis distance before noise) and ``relative_mean_departure`` (their ratio).
    """
    per = secret.event_values(n)
    cells = [(a, b) for vals in per for a, b in itertools.pairwise(vals)]
    mids = [(a + b) / 2 for a, b in cells]
    grid = secret.value_secret()
    ends = fit_mean(x, s, grid)
    middle = fit_mean(x, s, MeanSecret(grid.expression, values=mids))
    index = {v: i for i, v in enumerate(grid.values)}
    mean_dep, cov_dep = 0.0, 0.0
    for c, (a, b) in enumerate(cells):
        ia, ib = index[a], index[b]
        cbar = (ends.covariances[ia] + ends.covariances[ib]) / 2
        root = _inv_sqrt(cbar)
        gap = middle.means[c] - (ends.means[ia] + ends.means[ib]) / 2
        mean_dep = max(mean_dep, float(np.sqrt(n) * np.linalg.norm(root @ gap)))
        lam = np.linalg.eigvalsh(root @ middle.covariances[c] @ root)
        cov_dep = max(cov_dep, float(np.max(np.abs(lam - 1.0))))
    closest = np.inf
    for u, v in grid.pairs:
        iu, iv = index[u], index[v]
        root = _inv_sqrt((ends.covariances[iu] + ends.covariances[iv]) / 2)
        d = float(np.sqrt(n) * np.linalg.norm(root @ (ends.means[iu] - ends.means[iv])))
        closest = min(closest, d)
    return {
        "step": max(b - a for a, b in cells),
        "mean_departure": mean_dep,
        "covariance_departure": cov_dep,
        "closest_pair_distance": closest,
        "relative_mean_departure": mean_dep / closest if closest > 0 else float("inf"),
    }


def mean_event_model(
    table: Table,
    q: Query,
    secret: EventSecret,
    *,
    subset_size: int,
    method: str,
    missing: str,
    population: bool,
    n_samples: int = 1000,
    rng: np.random.Generator | None = None,
) -> DataQueryModel:
    """f_θ at every grid value of mean events (the model_query branch of the kind).

    Parameters
    ----------
    table, q, subset_size, method, missing, population, n_samples, rng
        As for :func:`distpriv.modeling.model_mean.mean_model`.
    secret : EventSecret
        Over a :class:`~distpriv.modeling.secret_mean_events.MeanGrid` (materialised here
        for ``subset_size`` if it is not yet).

    Returns
    -------
    DataQueryModel
        The grid's mean-secret model carrying ``secret`` (labels = the grid values, pairs
        = the cross pairs), with ``diagnostics["event_grid"]`` (:func:`grid_departure`).

    Raises
    ------
    ParameterError
        An event outside, or reaching outside, the expression's range on the modelling
        table; the errors of :func:`~distpriv.modeling.model_mean.mean_model`.
    """
    n = check_positive_int(subset_size, "subset_size")
    secret = secret.grid(n)
    grid = secret.value_secret()
    q.check_columns(table)
    grid.parsed.check_columns(table.columns)
    full, _ = table.complete(q.columns | grid.columns, missing=missing, what="modelling data")
    x, s = _features(full, q, grid, n)
    if s.size:
        _check_events_in_range(secret, s)
    departure = grid_departure(x, s, secret, n)
    note = (
        f"; between grid values (step {departure['step']:g}) the law lies between its "
        "neighbours' (docs/guarantees.md, Mean events): at the steps' midpoints the model "
        f"departs from it by {departure['relative_mean_departure']:.2g} of the closest "
        f"cross pair's distance in mean and {departure['covariance_departure']:.2g} in "
        "covariance"
    )
    model = mean_model(
        table,
        q,
        grid,
        subset_size=n,
        method=method,
        missing=missing,
        population=population,
        n_samples=n_samples,
        rng=rng,
        labels=EventLabels(secret, note),
    )
    model.diagnostics["event_grid"] = departure
    return model
