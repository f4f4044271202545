"""``calibration="exact"`` for every Gaussian-family mechanism.

Each mechanism keeps the shape of its noise (Chen & Ohrimenko 2023: isotropic for ExpM,
Thm 4.2; along the mean differences for DirM, Thm 4.3; along the eigenvectors of Σ_θ for
EigM, Thm 4.5, and APGM, Zhang et al. 2022 Alg. 1; along one direction for DauM, Alg. 1;
the convex program's covariance for optimal-g), and its scale is the least one at which
every pair of Ψ, in both directions, meets (ε, δ) under the exact privacy profile of the
outputs N(μ_θ, Σ_θ + Σ_Z) with each θ's own covariance (:mod:`distpriv.population.exact`).
The papers' (equal-covariance) calibration gives the starting point of the search.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..accounting.calibration_cache import (
    active_cache,
    fingerprint,
    model_fingerprint,
    uncertainty_parts,
)
from ..errors import AssumptionWarning, MechanismNotApplicableError
from ..noise import Noise, gaussian_of_covariance
from ..population.confidence import (
    checked_members,
    confidence_set,
    population_model,
    population_premise,
    set_corners,
)
from ..population.exact import (
    EXACT_THEOREM,
    PairCheck,
    exact_assumption,
    gaussian_premise,
    pair_deltas,
    published_noise,
    search_tolerance,
    smallest_scale,
)
from ..population.member_search import moments_model, smallest_scale_on_set, worst_member_delta
from ._common import FALLBACK_NOTE, QueryModel
from ._constant import structural_assumptions
from ._exact_families import (
    _FLOOR_MARGIN,
    _family,
    _family_parts,
    _optimal,
    _scaled,
    _search,
    _set_program,
    scale_at_cost,
)
from ._rank_bound import rank_limited_floor
from ._round_memo import RoundMemo
from .base import CalibratedMechanism
from .montecarlo_shapes import mark_monte_carlo, sampled_covariance
from .objective import isotropic_shape

__all__ = ["EXACT_MECHANISMS", "calibrate_exact", "scale_at_cost"]

EXACT_MECHANISMS = ("expm-g", "dirm-g", "eigm", "daum", "optimal-g", "apgm", "noiseless")
# Diagnostics of the papers' calibration that describe its noise, not the exact one.
_STALE = (
    "monte_carlo_sampled_covariance",
    "pair_distances",
    "achieved_delta",
    "allowed_distance",
    "isotropic_correction",
    "isotropic_topup",
    "target_variance",
    "distance_excess",
    "objective",
    "noise_rank",
    "method",
)


def _noise(cov: np.ndarray) -> Noise:
    """Gaussian noise with covariance ``cov``: its rank judged at unit diagonal (rounding of
    the largest statistic's units is not noise on the smallest: noise.unit_free_rank)."""
    return gaussian_of_covariance(cov)


def _calibrate_on(
    name: str,
    gm: Any,
    paper: CalibratedMechanism | None,
    build: Callable[..., CalibratedMechanism],
    epsilon: float,
    delta: float,
    start_scale: float | None = None,
    for_set: bool = False,
    at_paper: float | None = None,
    memo: RoundMemo | None = None,
) -> tuple[np.ndarray, float, PairCheck, str]:
    """The least noise of the mechanism's shape meeting the target on every pair of ``gm``.

    ``at_paper``: the worst δ of ``gm``'s pairs at the papers' noise, already computed at
    the search's accuracy (the robust calibration's first member); the
    search, which starts there, takes it instead of computing it again when the family at
    its starting scale is the papers' noise covariance bit for bit. ``memo`` (optimal-g):
    what the previous cutting-plane round left (:mod:`distpriv.central._round_memo`).
    """
    if paper is None:  # noiseless
        # The covariances alone can rule it out (a proven floor on δ at rank 0, central/
        # _rank_bound.py): no exact profile needed, which at δ near 1 and m ≤ 24 can need
        # the 50-digit whitening (seconds per pair).
        floor = rank_limited_floor(gm, 0, epsilon=epsilon, level=_FLOOR_MARGIN * delta)
        if floor > _FLOOR_MARGIN * delta:
            raise MechanismNotApplicableError(
                f"noiseless release is not ({epsilon:g}, {delta:g})-private under the "
                f"exact profile of the model: the covariances of a pair alone give "
                f"delta({epsilon:g}) >= {floor:.6g} (their most different variance ratio); "
                "use 'expm-g' or 'eigm' (full-rank noise), or mechanism='auto'"
            )
        check = pair_deltas(gm, np.zeros((gm.dim, gm.dim)), epsilon=epsilon, screen=delta)
        if check.worst > delta:
            raise MechanismNotApplicableError(
                f"noiseless release is not ({epsilon:g}, {delta:g})-private under the "
                f"exact profile of the model: {check.describe()}; use 'expm-g' or 'eigm' "
                "(full-rank noise), or mechanism='auto'"
            )
        return np.zeros((gm.dim, gm.dim)), 0.0, check, "no noise"
    if name == "optimal-g":
        weights = np.asarray(paper.diagnostics["weights"])
        # _set_program looked up here at call time (tests switch it off on this module).
        return _optimal(
            gm, paper, build, epsilon, delta, weights, for_set, memo, program=_set_program
        )
    family, start = _family(name, paper)
    known = None
    if start_scale is not None and start_scale > 0:
        start = start_scale  # a previous round's answer: the bracket is found at once
    elif at_paper is not None and np.array_equal(family(start), paper.noise_covariance):
        known = {start: at_paper}
    cov, scale, check = _search(name, gm, family, start, epsilon, delta, known)
    return cov, scale, check, "noise shape of the mechanism, least scale"


# Re-calibrations for the worst members of the confidence set at the final noise.
_ROBUST_ROUNDS = 8


def _calibrate_robust(
    name: str,
    gm: Any,
    paper: CalibratedMechanism | None,
    build: Callable[..., CalibratedMechanism],
    epsilon: float,
    delta: float,
    beta: float,
) -> tuple[np.ndarray, float, PairCheck, str]:
    """Calibrate on the worst members of the population confidence set (active set).

    The candidates (:func:`~distpriv.population.confidence.population_model`) depend on the
    noise, and checking all of them at every step of the scale search is 5× the work of
    the plain calibration; so the search runs on the candidates that bind (starting from
    the worst one at the papers' noise), and every candidate is re-checked at the final
    noise. A violated one joins the active set and the search runs again; the result is
    returned only when every candidate for its own noise passes.
    """
    guess = np.zeros((gm.dim, gm.dim)) if paper is None else paper.noise_covariance
    if paper is not None and name != "optimal-g":
        # A shape fixed by the mechanism: its least scale on the set's members of each
        # noise itself (population/member_search.py: members rebuilt per noise, not kept
        # from the noises the search passed through).
        family, start = _family(name, paper)
        label = "noise shape of the mechanism, least scale"
        fixed = _least_on_set(gm, family, label, (epsilon, delta, beta), start, name)
        if fixed is not None:
            return fixed
    every = population_model(gm, beta=beta, noise_cov=guess, epsilon=epsilon)
    # The checks that only choose members or say whether the members settled run at the
    # search's accuracy (certified upper bounds all the same): the strict check, which the
    # guarantee reports, is published_noise's on the noise as published.
    loose = search_tolerance(delta)
    # The worst member at the papers' noise starts the active set: found among those of
    # largest certified bound (population/member_search.py), not by a full check.
    first, first_delta = worst_member_delta(every, guess, epsilon=epsilon, delta=delta)
    # optimal-g first shapes its noise for the members (cutting planes); should the members
    # not settle while the shape moves with them, the fitted shapes alone (which do).
    shaped: tuple[np.ndarray, float, PairCheck, str] | None = None
    for for_set in (True, False) if name == "optimal-g" else (False,):
        # The program also sees the joint set's stratum corners (cutting planes that span
        # how its members move, not only the one member of the last noise).
        corners = set_corners(gm, beta=beta, noise_cov=guess) if for_set else []
        active, scale, method = [*first, *corners], None, ""
        # Each round's members are the last round's and more: optimal-g's shapes that do not
        # move with them are searched only on the added ones (central/_round_memo.py).
        memo = RoundMemo()
        for _ in range(_ROBUST_ROUNDS):
            target = moments_model(gm, active)
            # More members each round: the last round's scale of its shape is just below
            # this round's (the search starts there: a short bracket, fewer pair checks).
            cov, scale, _, method = _calibrate_on(
                name,
                target,
                paper,
                build,
                epsilon,
                delta,
                start_scale=scale,
                for_set=for_set,
                at_paper=first_delta if len(active) == 1 else None,
                memo=memo,
            )
            if name != "optimal-g":
                # Settled if the noise as published passes its members (strict): the
                # check published_noise makes next, remembered by the calibration cache,
                # so a calibration that settles pays one check of every member, not two.
                published = _published_check(gm, cov, beta, epsilon, delta)
                if published.worst <= delta:
                    return cov, scale, published, method
            # Checked as it will be published (calibrate_exact's _noise(cov)): within one
            # call the strict check then finds these members remembered, not searched again.
            pub = _noise(cov).covariance
            every = population_model(gm, beta=beta, noise_cov=pub, epsilon=epsilon)
            full = pair_deltas(every, pub, epsilon=epsilon, tol=loose, screen=delta)
            if full.worst <= delta:
                best = _cheaper(shaped, (cov, scale, full, method), paper)
                if name != "optimal-g":
                    return best
                # The shape's scale was found on members kept from earlier noises (the
                # program needs them fixed): its least scale on the members of its own
                # noise, which can be far smaller (population/member_search.py).
                best = _cheaper(_scale_for_set(gm, cov, method, epsilon, delta, beta), best, paper)
                # The members that bind depend on the noise: the isotropic shape is judged
                # on the members for its own noise (optimal-g never noisier than expm-g).
                if _fails_at_cost(gm, best[0], paper, epsilon, delta, beta):
                    return best
                w = _weights_of(paper, gm.dim)
                unit, label = _fallback_shape(paper, w)
                iso = _scale_for_set(
                    gm,
                    unit,
                    label,
                    epsilon,
                    delta,
                    beta,
                    start=math.sqrt(float(np.sum(w * best[0])) / float(np.sum(w * unit))),
                )
                return _cheaper(iso, best, paper)
            # The candidates moved with the noise: search again on the ones that bind now,
            # keeping the earlier ones (conservative, and the search cannot cycle between
            # noise shapes whose worst candidates differ).
            active = [*_worst_pairs(every, full, delta, 2), *active]
        if for_set:
            # The set's members move with the shape: keep the last shape, scale it until
            # the members for that very noise pass, and compare with the fitted shapes.
            shaped = _scale_for_set(gm, cov, method, epsilon, delta, beta)
    if shaped is not None:
        return shaped
    raise MechanismNotApplicableError(  # pragma: no cover - the candidates did not settle
        f"{name}: the calibration for the population confidence set did not settle; "
        "use beta=None (fitted moments only) or a larger modelling table"
    )


def _robust_shared(
    name: str,
    gm: Any,
    paper: CalibratedMechanism | None,
    build: Callable[..., CalibratedMechanism],
    target: tuple[float, float, float],
) -> tuple[np.ndarray, float, PairCheck, str]:
    """:func:`_calibrate_robust` at ``target`` = (ε, δ, β), optimal-g's remembered within
    one call.

    ``auto`` calibrates optimal-g, and optimal-g-full calibrates optimal-g exactly again for
    its candidates (central/floor_candidates.py), through another ``build`` of the same
    model. The search is a deterministic function of what the key holds: the fitted model
    with its moments' uncertainty, (ε, δ, β), and every noise ``build`` hands it (the
    papers' optimal-g with its weights and, on a Monte Carlo model, Σ̄; DauM's and EigM's
    noise the papers' way). Equal keys, equal searches (accounting/calibration_cache.py);
    the noise is checked as published by the caller either way.
    """
    epsilon, delta, beta = target
    cache = active_cache()
    if cache is None or name != "optimal-g" or paper is None:
        return _calibrate_robust(name, gm, paper, build, epsilon, delta, beta)
    shapes: list[Any] = []
    for other in ("daum", "eigm"):
        try:
            shapes.extend(_family_parts(other, build(other, calibration="analytic")))
        except MechanismNotApplicableError:
            shapes.append(None)
    key = fingerprint(
        name,
        model_fingerprint(gm),
        *uncertainty_parts(gm.uncertainty),
        paper.noise_covariance,
        np.asarray(paper.diagnostics["weights"]),
        sampled_covariance(paper),
        *shapes,
        float(epsilon),
        float(delta),
        float(beta),
    )
    known = cache.get(cache.exact_noise, key)
    if known is None:
        known = _calibrate_robust(name, gm, paper, build, epsilon, delta, beta)
        cache.exact_noise[key] = known
    return known


def _published_check(
    gm: Any, cov: np.ndarray, beta: float, epsilon: float, delta: float
) -> PairCheck:
    """:func:`~distpriv.population.exact.published_noise`'s first check, on the same arguments
    (the noise as sampled, the worst members of the set for that noise, the strict
    accuracy), so that within one :func:`~distpriv.central.calibrate` (one calibration
    cache) published_noise finds it remembered. Why: the robust calibration
    used to check every member at the search's accuracy on ``cov`` and then, strictly, on
    the published noise; where the strict check passes, the members for the published
    noise all meet the target, so the search has settled (when it does not pass, the loose
    check below decides as before).
    """
    published = _noise(cov).covariance
    members = population_model(gm, beta=beta, noise_cov=published, epsilon=epsilon)
    return pair_deltas(members, published, epsilon=epsilon, screen=delta)


def _fails_at_cost(
    gm: Any,
    best: np.ndarray,
    paper: CalibratedMechanism | None,
    epsilon: float,
    delta: float,
    beta: float,
) -> bool:
    """Whether isotropic noise of the same cost tr(W Σ_Z) as ``best`` fails on the set's
    worst members for that noise: then no cheaper isotropic noise passes (a member that
    fails at a noise fails at every smaller one: its δ(ε) only grows as noise is removed),
    and expm-g's shape need not be searched (one check instead of a search on the set).
    """
    w = _weights_of(paper, gm.dim)
    cost = float(np.sum(w * best))
    unit, _ = _fallback_shape(paper, w)
    per_unit = float(np.sum(w * unit))
    if not (cost > 0 and per_unit > 0):
        return False
    iso = (cost / per_unit) * unit
    members = population_model(gm, beta=beta, noise_cov=iso, epsilon=epsilon)
    check = pair_deltas(members, iso, epsilon=epsilon, tol=search_tolerance(delta), screen=delta)
    return bool(check.worst > delta)


def _fallback_shape(paper: CalibratedMechanism | None, w: np.ndarray) -> tuple[np.ndarray, str]:
    """The full-rank shape optimal-g falls back to on the set: isotropic for the objective
    (I under E‖Z‖², W⁻¹ otherwise: central/objective.py), or on a Monte Carlo model its
    sampled covariance (expm-g's shape is expm-g's: central/montecarlo_shapes.py)."""
    sampled = sampled_covariance(paper)
    if sampled is not None:
        return sampled, "the model's sampled covariance, scaled"
    return isotropic_shape(w), "isotropic noise (expm-g's shape)"


def _weights_of(paper: CalibratedMechanism | None, m: int) -> np.ndarray:
    """W of optimal-g's objective (its diagnostics), else I, shape (m, m)."""
    w = (paper.diagnostics if paper is not None else {}).get("weights")
    return np.eye(m) if w is None else np.asarray(w, dtype=float)


def _cheaper(
    a: tuple[np.ndarray, float, PairCheck, str] | None,
    b: tuple[np.ndarray, float, PairCheck, str],
    paper: CalibratedMechanism | None,
) -> tuple[np.ndarray, float, PairCheck, str]:
    """The result of least tr(W Σ_Z) (W: optimal-g's weights, else I)."""
    if a is None:
        return b
    w = np.asarray((paper.diagnostics if paper is not None else {}).get("weights", 1.0))
    cost = [float(np.sum(w * r[0])) if w.ndim == 2 else float(np.trace(r[0])) for r in (a, b)]
    return a if cost[0] <= cost[1] else b


def _scale_for_set(
    gm: Any,
    shape: np.ndarray,
    method: str,
    epsilon: float,
    delta: float,
    beta: float,
    start: float = 1.0,
) -> tuple[np.ndarray, float, PairCheck, str] | None:
    """Least s with s²·shape meeting the target on the set's worst members for s²·shape."""
    label = f"{method}; scaled for the set's members of this noise"
    return _least_on_set(gm, _scaled(shape), label, (epsilon, delta, beta), start, "optimal-g")


def _least_on_set(
    gm: Any,
    fam: Callable[[float], np.ndarray],
    label: str,
    target: tuple[float, float, float],
    start: float,
    name: str,
) -> tuple[np.ndarray, float, PairCheck, str] | None:
    """Least s with ``fam(s)`` meeting ``target`` = (ε, δ, β) on the set's worst members for
    ``fam(s)`` itself; ``None`` when no scale does (or the searches do not settle)."""
    epsilon, delta, beta = target
    # An active set of members, one full check per round (population/member_search.py);
    # should it not settle, the search on every member of each noise below.
    try:
        found = smallest_scale_on_set(
            gm,
            lambda cov: population_model(gm, beta=beta, noise_cov=cov, epsilon=epsilon),
            fam,
            epsilon=epsilon,
            delta=delta,
            start=start,
            name=name,
        )
    except MechanismNotApplicableError:
        return None
    if found is not None:
        return fam(found[0]), found[0], found[1], label
    s = start
    for _ in range(_ROBUST_ROUNDS):
        every = population_model(gm, beta=beta, noise_cov=fam(s), epsilon=epsilon)
        try:
            s, _ = smallest_scale(every, fam, epsilon=epsilon, delta=delta, start=s, name=name)
        except MechanismNotApplicableError:
            return None
        check = pair_deltas(
            population_model(gm, beta=beta, noise_cov=fam(s), epsilon=epsilon),
            fam(s),
            epsilon=epsilon,
            tol=search_tolerance(delta),  # settled? (published_noise's check is strict)
            screen=delta,
        )
        if check.worst <= delta:
            return fam(s), s, check, label
    return None


def _worst_pairs(model: Any, check: PairCheck, delta: float, count: int) -> list[tuple[Any, ...]]:
    """The ``count`` candidate pairs of largest δ (those above δ first), as moments."""
    worst = check.deltas.max(axis=1)
    order = np.argsort(-worst)[:count]
    out: list[tuple[Any, ...]] = []
    for p in order:
        if out and worst[p] <= delta:
            break
        i, j = model.pairs[p]
        out.append((model.means[i], model.covariances[i], model.means[j], model.covariances[j]))
    return out


def calibrate_exact(
    name: str,
    model: QueryModel,
    gm: Any,
    build: Callable[..., CalibratedMechanism],
    *,
    epsilon: float,
    delta: float,
    beta: float | None = None,
) -> CalibratedMechanism:
    """Calibrate a Gaussian-family mechanism to the exact profile of the model.

    Parameters
    ----------
    name : str
        One of :data:`EXACT_MECHANISMS`.
    model : GaussianQueryModel or SampledQueryModel
        The model given to :func:`~distpriv.central.calibrate`.
    gm : GaussianQueryModel
        Its Gaussian form (fitted to samples if needed).
    build : callable
        ``build(name, calibration=...)`` calibrates a mechanism the papers' way (with the
        user's other options); it provides the noise shape and the starting scale.
    epsilon, delta : float
        The target.
    beta : float or None
        When ``gm.uncertainty`` is set (a model built from a modelling table that samples
        the population) and β is not ``None``, the target is met on the worst members of
        a (1 − β) confidence set for the population's moments
        (:func:`~distpriv.population.confidence.population_model`), so that it holds on the
        population with probability ≥ 1 − β over the draw of the table.

    Returns
    -------
    CalibratedMechanism
        Headline (ε, δ) verified for every pair, both directions, by
        :func:`~distpriv.population.exact.pair_deltas`; ``calibration="exact"``.

    Raises
    ------
    MechanismNotApplicableError
        The noise shape cannot meet the target at any scale, or (``noiseless``) the model
        alone does not meet it.
    """
    # β of the population premise, or None for the fitted model alone.
    robust_beta = beta if getattr(gm, "uncertainty", None) is not None else None
    with warnings.catch_warnings():
        # The papers' assumptions are not those of the exact guarantee: not warned here.
        warnings.simplefilter("ignore", AssumptionWarning)
        paper = None if name == "noiseless" else build(name, calibration="analytic")
        if name == "optimal-g":
            mark_monte_carlo(model, gm, paper)
        if robust_beta is not None:
            cov, scale, check, method = _robust_shared(
                name, gm, paper, build, (epsilon, delta, robust_beta)
            )
        else:
            cov, scale, check, method = _calibrate_on(name, gm, paper, build, epsilon, delta)
    # The guarantee is about the covariance that is sampled (rebuilt from _noise's
    # eigendecomposition): checked again as published.
    noise, check = published_noise(
        lambda f: _noise(cov * f),
        checked_members(gm, robust_beta, epsilon=epsilon),
        epsilon=epsilon,
        delta=delta,
        name=name,
    )
    cov = noise.covariance
    if paper is None:
        theorem, notion, notes = "Chen & Ohrimenko 2023, Thm 4.4 (no noise)", None, []
        diag: dict[str, Any] = {}
    else:
        g = paper.guarantee
        theorem, notion = g.theorem, g.notion
        notes = [n for n in g.notes if n != FALLBACK_NOTE]
        diag = {k: v for k, v in paper.diagnostics.items() if k not in _STALE}
        ratio = noise.mse() / paper.mse() if paper.mse() > 0 else math.inf
        notes.append(
            f"exact calibration: E||Z||^2 = {noise.mse():.6g}, against {paper.mse():.6g} for "
            f"the papers' equal-covariance calibration (ratio {ratio:.4g})"
        )
        diag["paper_mse"] = paper.mse()
    diag.update(
        {
            "calibration_method": method,
            "calibration_scale": scale,
            "achieved_delta": check.worst,
            "exact_check": check.to_dict(),
        }
    )
    if robust_beta is not None:
        diag["population_confidence_set"] = confidence_set(gm, beta=robust_beta).to_dict()
    if name == "daum":
        diag["noise_variance"] = float(np.trace(cov))
    if name == "optimal-g":
        diag["method"] = method
        diag["objective"] = float(np.trace(np.asarray(diag["weights"]) @ cov))
    if name == "apgm" and gm.dim == 1:
        diag["noise_variance"] = float(cov[0, 0])
    if name == "apgm":
        from .apgm import apgm_accuracy  # scipy.stats: only for this mechanism

        diag["accuracy_alpha"] = apgm_accuracy(cov, diag["accuracy_beta"])
    if name in ("eigm", "apgm"):
        vecs = np.asarray(diag["eigenvectors"])
        diag["noise_variances"] = np.einsum("mk,mn,nk->k", vecs, cov, vecs)
    guarantee = dataclasses.replace(
        paper.guarantee if paper is not None else _blank(name, gm, theorem),
        epsilon=epsilon,
        delta=delta,
        theorem=f"{theorem}, calibrated by the {EXACT_THEOREM}",
        calibration="exact",
        assumptions=(exact_assumption(check, delta), *structural_assumptions(paper)),
        premises=(gaussian_premise(model, gm), *_population(model, gm, beta)),
        notes=tuple(notes),
        fallback=None,
        **({"notion": notion} if notion else {}),
    )
    return CalibratedMechanism(name, noise, guarantee, model.statistics, diag)


def _population(model: Any, gm: Any, beta: float | None) -> tuple[Any, ...]:
    premise = population_premise(model, gm, beta=beta)
    return () if premise is None else (premise,)


def _blank(name: str, gm: Any, theorem: str) -> Any:
    from ..guarantees import PrivacyGuarantee

    return PrivacyGuarantee(
        epsilon=0.0, delta=0.0, pairs=gm.pair_labels, mechanism=name, theorem=theorem
    )
