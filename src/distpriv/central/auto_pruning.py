"""``auto`` without calibrating candidates that provably cannot be chosen.

``mechanism = "auto"`` calibrates every registered mechanism and keeps the verified one of
least E[Zᵀ W Z]. With hundreds of statistics and the population layer on, each exact
calibration is a scale search on the confidence set's worst members, and ``auto`` paid
for about ten of them (4.5–11× expm-g's own calibration at m = 20–200). Four of those
are one-parameter families whose calibrated noise is Σ_Z(s) for the least passing s:
expm-g (isotropic), eigm and apgm (along the eigenvectors of the covariances; Chen &
Ohrimenko 2023, Thm 4.2 and 4.5, Zhang et al. 2022 Alg. 1, calibrated by
:mod:`distpriv.central.exact_calibration`), and
daum-floor and dirm-g-floor (DauM's direction or DirM's span plus a fixed floor:
:func:`floored_family`). Two more, daum and dirm-g, add noise of
rank one or at most k − 1 (k hypotheses) whatever the scale, and ``noiseless`` none:
unless partial noise is
allowed they cannot be chosen at all (:func:`partial_rank`), and are not calibrated.

The certificate. Let B be the least E[Zᵀ W Z] of a verified candidate so far and s_B the
least scale of the family with tr(W Σ_Z(s_B)) ≥ B. If the family's noise at s_B fails
the target on the worst members of the confidence set for that noise, then no s ≤ s_B
passes (δ(ε) of each member only grows as noise is removed: post-processing), so the
calibrated noise costs more than B and the candidate cannot be chosen: its calibration
is skipped and its row says why. The check is :func:`~distpriv.population.exact.pair_deltas`'s
verdict at the search's accuracy, as the calibration's own search and the floored
mechanisms' pruning (:func:`~distpriv.central.floored._search_best`) decide, stopped at the
first failing pair (:func:`failing_pair`). The choice is the full
search's (``tests/pipeline/test_auto_pruning.py`` compares), and every published noise is
still the accountant's verdict: nothing chosen is pruned.

The default of :func:`~distpriv.pipeline.stages.calibrate.choose_mechanism`
(``prune=True``; ``auto``
of a release configuration too, ``prune = false`` in its ``[mechanism]`` table for the
full comparison). A pruned row is not calibrated: it has no E‖Z‖² (``mse`` NaN, ``None``
in the report), its reason begins "not calibrated: cannot be chosen" and says why, and for
a dominated family ``mse_above`` is the error its calibration would exceed (the best's).
Without daum's calibration the ``vs_rank_one`` column (the price of full-rank noise
against the rank-one optimum) is not computed; ``prune=False`` computes it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..errors import AssumptionWarning, DistPrivError
from ..population.confidence import DEFAULT_BETA, population_model
from ..population.exact import search_tolerance
from ..population.pair_pruning import first_failing
from ..querymodel import GaussianQueryModel
from ._common import gaussian_assumption
from ._exact_families import _family, scale_at_cost
from .floor_candidates import candidates
from .floor_levels import check_floor, continuous_floor, lattice_steps
from .floored import DEFAULT_FLOOR, FLOORED_MECHANISMS
from .registry import mechanism_info

__all__ = [
    "PRUNABLE",
    "calibration_order",
    "dominated",
    "failing_pair",
    "floored_family",
    "partial_rank",
]

# Fixed-shape exact families whose calibration is a scale search (central/_exact_families,
# and the one family of two floored mechanisms: central/floored.py).
PRUNABLE = ("expm-g", "eigm", "apgm", "daum-floor", "dirm-g-floor")
# Noise of rank below m whatever the scale: none (noiseless), rank one (DauM, Chen &
# Ohrimenko 2023 Alg. 1) and the span of the mean differences (DirM, Thm 4.3: at most
# k − 1 directions).
_PARTIAL = {"noiseless": 0, "daum": 1, "dirm-g": -1}


def floored_family(
    name: str,
    model: Any,
    *,
    epsilon: float,
    delta: float,
    lattice: Any,
    floor: Any = DEFAULT_FLOOR,
    **options: Any,
) -> tuple[Callable[[float], np.ndarray], float] | None:
    """The one noise family Σ_Z(s) of daum-floor or dirm-g-floor, and its start (else None).

    What :func:`~distpriv.central.floored.calibrate_floored` searches with
    ``calibration="exact"`` (its ``candidates``: DauM's direction or DirM's span plus the
    fixed floor diag(F)), the least s meeting the target. optimal-g-full has several
    families: None.

    Parameters
    ----------
    name : str
    model : GaussianQueryModel
    epsilon, delta : float
    lattice, floor
        As in :func:`~distpriv.central.floored.calibrate_floored`.
    **options
        The mechanism's other options (``direction``).

    Returns
    -------
    (callable s -> ndarray (m, m), float) or None
    """
    if name not in ("daum-floor", "dirm-g-floor"):
        return None
    gm, _ = gaussian_assumption(model)
    fvar = continuous_floor(gm, lattice_steps(lattice, gm.dim), check_floor(floor))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssumptionWarning)
        cands, _ = candidates(name, model, gm, fvar, dict(options), epsilon, delta)
    ((_, fam, start, _),) = cands
    return fam, start


def calibration_order(names: list[str], prune: bool) -> list[str]:
    """The order of calibration: with pruning, the prunable ones last (a best to beat).

    Parameters
    ----------
    names : list of str
        Registry names, in the order of the comparison table.
    prune : bool

    Returns
    -------
    list of str
    """
    if not prune:
        return list(names)
    last = (*PRUNABLE, *_PARTIAL)
    return [n for n in names if n not in last] + [n for n in names if n in last]


def partial_rank(name: str, model: Any, options: Mapping[str, Any], allow_partial: bool) -> str:
    """Why ``name`` cannot be chosen for its noise's rank ('' when it can).

    Parameters
    ----------
    name : str
    model : GaussianQueryModel
    options : mapping
        The mechanism's options (``calibration`` other than ``"exact"``: not judged).
    allow_partial : bool
        ``allow_partial_noise``: then partial noise may be chosen ('').

    Returns
    -------
    str
    """
    if allow_partial or name not in _PARTIAL or not isinstance(model, GaussianQueryModel):
        return ""
    if options.get("calibration", "exact") != "exact":
        return ""
    rank = _PARTIAL[name] if _PARTIAL[name] >= 0 else int(np.asarray(model.means).shape[0]) - 1
    if rank >= model.dim:
        return ""
    return (
        f"not calibrated: cannot be chosen (its noise covers at most {rank} of {model.dim} "
        "directions whatever its scale, and partial noise is chosen only with "
        "allow_partial_noise=True)"
    )


def failing_pair(
    model: GaussianQueryModel, cov: np.ndarray, *, epsilon: float, delta: float
) -> float:
    """δ(ε) of a pair found above ``delta`` (0.0 when none is), stopping at the first.

    The verdict of ``pair_deltas(model, cov, epsilon=epsilon, tol=search_tolerance(delta),
    screen=delta).worst > delta`` (what the calibration's own search decides at a scale)
    without computing every pair: a pair counts when its profile at the search's accuracy
    exceeds ``delta`` and its certified Rényi bound does not screen it out (as
    :func:`~distpriv.population.pair_pruning.screened_profiles` would), and pairs dominated by
    another (:func:`~distpriv.population.pair_pruning.dominating_pairs`) are never computed
    (pair_deltas reports the dominating pair's profile for them). The pairs are tried last
    first: the population set's members for a noise (:func:`population_model`) come after
    the fitted pairs, and those members are what a noise at the best's error fails on.

    Parameters
    ----------
    model : GaussianQueryModel
        The pairs to check (the set's members for ``cov``, or the model).
    cov : ndarray, shape (m, m)
        Σ_Z.
    epsilon, delta : float

    Returns
    -------
    float
        The failing pair's larger δ of its two directions, or 0.0.
    """
    _, worst = first_failing(model, cov, epsilon=epsilon, delta=delta, tol=search_tolerance(delta))
    return worst


def dominated(
    name: str,
    model: Any,
    options: Mapping[str, Any],
    weights: np.ndarray | None,
    best_mse: float,
    best_name: str,
    *,
    epsilon: float,
    delta: float,
) -> str:
    """Why ``name`` cannot beat ``best_mse`` ('' when that is not proven).

    Parameters
    ----------
    name : str
        A mechanism of :data:`PRUNABLE`.
    model : GaussianQueryModel
        The model ``auto`` calibrates on (other views: never pruned).
    options : mapping
        The mechanism's options (``calibration`` other than ``"exact"``: never pruned).
    weights : ndarray, shape (m,), or None
        W's diagonal (None: I).
    best_mse : float
        E[Zᵀ W Z] of the best verified candidate so far.
    best_name : str
        Its name (for the reason).
    epsilon, delta : float
        The request.

    Returns
    -------
    str
        The reason for the comparison table, or '' (calibrate it).
    """
    if name not in PRUNABLE or not isinstance(model, GaussianQueryModel):
        return ""
    if options.get("calibration", "exact") != "exact" or not (0 < best_mse < math.inf):
        return ""
    extra = {k: v for k, v in options.items() if k not in ("beta", "calibration")}
    beta = options.get("beta", DEFAULT_BETA)
    try:
        if name in FLOORED_MECHANISMS:
            if "lattice" not in extra:
                return ""
            found = floored_family(name, model, epsilon=epsilon, delta=delta, **extra)
            if found is None:
                return ""
            fam, start = found
        else:
            if extra:
                return ""
            # The family the exact calibration searches: its builder's analytic noise
            # (exact_calibration's ``build``), without the headline's strict check.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", AssumptionWarning)
                paper = mechanism_info(name).build(
                    model, epsilon=epsilon, delta=delta, calibration="analytic"
                )
            fam, start = _family(name, paper)
    except DistPrivError:
        return ""
    m = model.dim
    w = np.eye(m) if weights is None else np.diag(np.asarray(weights, dtype=float))
    low = scale_at_cost(fam, w, best_mse, max(start, 1e-300))
    # scale_at_cost returns the largest s found with cost < B; one relative step up is at
    # cost ≥ B (the bisection's width is 1e-12): checked there, so a pass is never missed.
    cap = low * (1.0 + 1e-9) if low > 0 else max(start, 1e-300)
    while float(np.sum(w * fam(cap))) < best_mse and cap < 1e300:
        cap *= 1.0 + 1e-6
    cov = fam(cap)
    on_set = getattr(model, "uncertainty", None) is not None and beta is not None
    target = population_model(model, beta=beta, noise_cov=cov, epsilon=epsilon) if on_set else model
    worst = failing_pair(target, cov, epsilon=epsilon, delta=delta)
    if worst <= delta:
        return ""
    where = "the worst members of the population set" if on_set else "the model"
    return (
        f"not calibrated: cannot be chosen (its error would be more than {best_mse:.6g}, "
        f"that of {best_name}: at that error its noise already fails on {where}, "
        f"delta = {worst:.3g} > {delta:g}, and less noise of its shape only fails more)"
    )
