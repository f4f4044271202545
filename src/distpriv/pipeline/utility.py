"""The data of the privacy–utility figure: every mechanism calibrated over a grid of ε.

A release's or the demo's page (:mod:`distpriv.report.html`) draws expected error against
ε for every mechanism that applies to the model; this module computes those numbers (it
calibrates), so that the report only renders (Chen & Ohrimenko 2023 compare mechanisms by
such errors, Table 2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..central.objective import DEFAULT_OBJECTIVE
from ..errors import ParameterError
from ..util.validation import check_delta, check_epsilon
from .stages.calibrate import ProgressCallback, calibrate_candidates

__all__ = ["DEFAULT_EPSILONS", "demo_utility", "release_utility", "utility_curve"]

# ε grid of the privacy–utility figure (the requested ε is added to it).
DEFAULT_EPSILONS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)


def utility_curve(
    model: Any,
    *,
    delta: float,
    epsilon: float | None = None,
    chosen: str | None = None,
    weights: Any = None,
    objective: str = DEFAULT_OBJECTIVE,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    mechanisms: Sequence[str] | None = None,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    progress: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Expected error against ε for every mechanism that applies to ``model``.

    Each mechanism is calibrated at every ε of the grid (and the requested ``epsilon``)
    at the given δ (:func:`~distpriv.pipeline.stages.calibrate.calibrate_candidates`); the error is
    the root of the expected squared error √E[Zᵀ W Z] (Chen & Ohrimenko 2023 compare
    mechanisms by such errors, Table 2).

    Parameters
    ----------
    model : GaussianQueryModel or SampledQueryModel
    delta : float
        δ of every calibration (keyword-only).
    epsilon : float, optional
        The requested ε, marked on the figure.
    chosen : str, optional
        The mechanism used, drawn thick.
    weights, objective, options, mechanisms
        As in :func:`~distpriv.pipeline.stages.calibrate.calibrate_candidates`.
    epsilons : sequence of float
        The grid.
    progress : callable(done, total), optional
        Called after each ε.

    Returns
    -------
    dict
        JSON-safe: ``epsilons``, ``delta``, ``epsilon``, ``chosen``, ``metric``,
        ``curves`` (``mechanism``, ``errors`` and ``verified`` per ε; ``None`` where the
        mechanism could not be calibrated) and ``skipped`` (mechanisms never calibrated,
        with the reason at the requested ε or the grid's middle).
    """
    dlt = check_delta(delta)
    grid = sorted({check_epsilon(e, "epsilons") for e in epsilons})
    if epsilon is not None:
        grid = sorted({*grid, check_epsilon(epsilon)})
    if not grid:
        raise ParameterError("epsilons must contain at least one value, got []")
    rows = []
    for k, eps in enumerate(grid):
        rows.append(
            calibrate_candidates(
                model,
                epsilon=eps,
                delta=dlt,
                weights=weights,
                objective=objective,
                options=options,
                mechanisms=mechanisms,
            )
        )
        if progress is not None:
            progress(k + 1, len(grid))
    names = [c.mechanism for c in rows[0]]
    curves, skipped = [], []
    ref = grid.index(epsilon) if epsilon is not None else len(grid) // 2
    for j, name in enumerate(names):
        errs = [None if math.isnan(r[j].mse) else math.sqrt(max(r[j].mse, 0.0)) for r in rows]
        if all(e is None for e in errs):
            skipped.append({"mechanism": name, "reason": rows[ref][j].reason})
            continue
        curves.append(
            {"mechanism": name, "errors": errs, "verified": [bool(r[j].verified) for r in rows]}
        )
    return {
        "epsilons": grid,
        "delta": dlt,
        "epsilon": None if epsilon is None else float(epsilon),
        "chosen": chosen,
        "metric": "root expected squared error"
        + (
            " (weighted)"
            if weights is not None
            else (" (relative to each statistic's sampling variance)" if objective != "l2" else "")
        ),
        "curves": curves,
        "skipped": skipped,
    }


def release_utility(
    outcome: Any,
    *,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    progress: ProgressCallback | None = None,
) -> dict[str, Any]:
    """The public report of a release with its figure's data under ``utility``.

    Parameters
    ----------
    outcome : ReleaseOutcome
        From :func:`distpriv.pipeline.run_release` (its ``report`` holds the model).
    epsilons : sequence of float
        The figure's ε grid (the requested ε is added).
    progress : callable(done, total), optional
        Called after each ε of the figure's grid.

    Returns
    -------
    dict
        The public report with a ``utility`` entry (so that a saved report re-renders
        the same page with ``distpriv report``).
    """
    public = dict(outcome.public)
    rep = outcome.report
    g = rep.release.guarantee
    epsilon, delta = g.target  # the request, which the figure compares mechanisms at
    # The floored mechanisms need the grid of the statistics: the one the release used.
    lattice = rep.mechanism.diagnostics.get("lattice_steps")
    options = None
    if lattice is not None:
        from ..central import MECHANISMS, mechanism_info

        options = {
            n: {"lattice": lattice} for n in MECHANISMS if "lattice" in mechanism_info(n).options
        }
    public["utility"] = utility_curve(
        rep.model,
        delta=delta,
        epsilon=epsilon,
        chosen=rep.mechanism.name,
        weights=public.get("choice_weights"),
        objective="l2" if public.get("choice_objective") == "l2" else DEFAULT_OBJECTIVE,
        options=options,
        epsilons=epsilons,
        progress=progress,
    )
    return public


def demo_utility(
    public: Mapping[str, Any], *, progress: ProgressCallback | None = None
) -> dict[str, Any]:
    """The demo's report with its figure's data under ``utility``.

    The figure is computed on the demo's model: Adult's modelling split, subsets of 100
    rows, exact (analytic) moments, at the demo's δ (Chen & Ohrimenko 2023 §5.1), with
    the group-DP baselines' default options from the same table.
    """
    from ..central.registry import default_options
    from ..modeling import Query, model_query
    from .commands.demo import ADULT_STATISTICS, INCOME_SECRET
    from .stages.data import load_frame, table_facts

    out = dict(public)
    frame = load_frame("adult:modeling", split_seed=int(out.get("seed") or 0))
    query = Query(ADULT_STATISTICS)
    n = int(out.get("subset_size") or 100)
    model = model_query(frame, query, INCOME_SECRET, subset_size=n, method="analytic")
    facts = table_facts(frame, query, n)
    options = {name: default_options(name, facts) for name in ("groupdp-l", "groupdp-g")}
    out["utility"] = utility_curve(
        model,
        delta=float(out["delta"]),
        epsilon=float(out["epsilon"]),
        options=options,
        progress=progress,
    )
    return out
