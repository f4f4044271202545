"""``calibration="exact"`` for every Gaussian-family mechanism.

Each mechanism keeps the shape of its noise (Chen & Ohrimenko 2023: isotropic for ExpM,
Thm 4.2; along the mean differences for DirM, Thm 4.3; along the eigenvectors of Σ_θ for
EigM, Thm 4.5, and APGM, Zhang et al. 2022 Alg. 1; along one direction for DauM, Alg. 1;
the convex program's covariance for optimal-g), and its scale is the least one at which
every pair of Ψ, in both directions, meets (ε, δ) under the exact privacy profile of the
outputs N(μ_θ, Σ_θ + Σ_Z) with each θ's own covariance (:mod:`distpriv.central.exact`).
The papers' (equal-covariance) calibration gives the starting point of the search.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import AssumptionWarning, MechanismNotApplicableError
from ..noise import Noise
from ._common import FALLBACK_NOTE, QueryModel
from ._member_search import moments_model, smallest_scale_on_set, worst_member
from .base import CalibratedMechanism
from .exact import (
    EXACT_THEOREM,
    PairCheck,
    exact_assumption,
    gaussian_premise,
    pair_deltas,
    published_noise,
    search_tolerance,
    smallest_scale,
)
from .robust import (
    checked_members,
    confidence_set,
    population_model,
    population_premise,
    set_corners,
)

__all__ = ["EXACT_MECHANISMS", "calibrate_exact"]

EXACT_MECHANISMS = ("expm-g", "dirm-g", "eigm", "daum", "optimal-g", "apgm", "noiseless")
# Diagnostics of the papers' calibration that describe its noise, not the exact one.
_STALE = (
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


def _family(name: str, mech: CalibratedMechanism) -> tuple[Callable[[float], np.ndarray], float]:
    """The noise family Σ_Z(s) of a mechanism (non-decreasing in s) and the papers' s."""
    d = mech.diagnostics
    m = mech.dim
    if name == "expm-g":
        return (lambda s: s * s * np.eye(m)), math.sqrt(mech.noise_covariance[0, 0])
    if name == "dirm-g":
        basis = np.asarray(d["directions"])
        proj = basis @ basis.T
        s0 = float(mech.noise.components[0].scales[0]) if basis.shape[1] else 0.0
        return (lambda s: s * s * proj), s0
    if name in ("eigm", "apgm"):
        vecs = np.asarray(d["eigenvectors"])
        lam = np.asarray(d["model_eigenvalues"])  # (k, m): v_kᵀ Σ_θ v_k

        def eig(s: float) -> np.ndarray:
            sig2 = np.max(np.maximum(0.0, s * s - lam), axis=0)
            return (vecs * sig2) @ vecs.T

        return eig, math.sqrt(float(d["target_variance"]))
    if name == "daum":
        v = np.asarray(d["direction"]).reshape(-1, 1)
        vv = v @ v.T
        s0 = math.sqrt(max(float(d["noise_variance"]), float(d["directional_expm_variance"])))
        return (lambda s: s * s * vv), s0
    if name == "optimal-g":
        cov = mech.noise_covariance
        return (lambda s: s * s * cov), 1.0
    raise ValueError(name)  # pragma: no cover - registry passes only EXACT_MECHANISMS


def _noise(cov: np.ndarray) -> Noise:
    """Gaussian noise with covariance ``cov`` (eigen-decomposed, tiny negatives clipped)."""
    w, v = np.linalg.eigh((cov + cov.T) / 2)
    w = np.clip(w, 0.0, None)
    keep = w > 0
    if not np.any(keep):
        return Noise.none(cov.shape[0])
    return Noise.along("gaussian", v[:, keep], np.sqrt(w[keep]))


def _search(
    name: str,
    gm: Any,
    family: Callable[[float], np.ndarray],
    start: float,
    epsilon: float,
    delta: float,
    known: dict[float, float] | None = None,
) -> tuple[np.ndarray, float, PairCheck]:
    scale, check = smallest_scale(
        gm, family, epsilon=epsilon, delta=delta, start=start, name=name, known=known
    )
    return family(scale), scale, check


def _optimal(
    gm: Any,
    paper: CalibratedMechanism,
    build: Callable[..., CalibratedMechanism],
    epsilon: float,
    delta: float,
    weights: np.ndarray,
    for_set: bool = False,
) -> tuple[np.ndarray, float, PairCheck, str]:
    """optimal-g: the convex program's Σ_Z scaled, or repaired; never noisier than daum.

    Candidates, each calibrated exactly: the program's noise scaled; the program's noise
    plus isotropic noise (a repair that covers every direction); DauM's and EigM's noise
    shapes. The one of least tr(W Σ_Z) is kept. With ``for_set`` (``gm`` is made of the
    population set's worst members, issue 25 item 2) the program is also solved on those
    members themselves — a shape chosen for the set, not the fitted shape scaled up — and
    :func:`_calibrate_robust` adds members until none binds (cutting planes).
    """
    base = paper.noise_covariance
    check0 = pair_deltas(gm, base, epsilon=epsilon, screen=delta)
    if np.trace(base) == 0 and check0.worst <= delta:
        return base, 0.0, check0, "no noise needed"
    families: list[tuple[str, Callable[[float], np.ndarray], float]] = []
    if for_set:
        shaped = _set_program(gm, epsilon, delta, weights)
        if shaped is not None and np.trace(shaped) > 0:
            label = "convex program on the population set's worst members, scaled"
            families.append((label, _scaled(shaped), 1.0))
    if np.trace(base) > 0:
        families.append(("convex program's noise, scaled", lambda s: s * s * base, 1.0))
    iso = math.sqrt(max(float(np.trace(base)) / gm.dim, 1e-12 * float(np.trace(gm.covariances[0]))))
    families.append(
        (
            "convex program's noise plus isotropic repair",
            lambda s: base + s * s * np.eye(gm.dim),
            iso,
        )
    )
    # expm-g's shape too: optimal-g is then never noisier than expm-g (independent
    # covariances can leave no cheaper shape: every direction needs noise).
    families.append(("isotropic noise (expm-g's shape)", _scaled(np.eye(gm.dim)), iso))
    for other in ("daum", "eigm"):
        try:
            fam, s0 = _family(other, build(other, calibration="analytic"))
        except MechanismNotApplicableError:
            continue
        families.append((f"{other}'s noise shape (cheaper than the program's)", fam, s0))
    best: tuple[np.ndarray, float, PairCheck, str] | None = None
    errors = []
    for label, fam, start in families:
        known = None
        if best is not None:
            # Prune: at the scale where this shape costs as much as the best so far, it
            # must already meet the target, or its least scale would cost more.
            cap = scale_at_cost(fam, weights, float(np.trace(weights @ best[0])), start)
            at_cap = pair_deltas(
                gm, fam(cap), epsilon=epsilon, tol=search_tolerance(delta), screen=delta
            )
            if at_cap.worst > delta:
                continue
            start, known = cap, {cap: at_cap.worst}  # the search starts where this left off
        try:
            cov, s, chk = _search("optimal-g", gm, fam, start, epsilon, delta, known)
        except MechanismNotApplicableError as exc:
            errors.append(str(exc))
            continue
        if best is None or np.trace(weights @ cov) < np.trace(weights @ best[0]):
            best = (cov, s, chk, label)
    if best is None:
        raise MechanismNotApplicableError("; ".join(errors))
    return best


def _scaled(cov: np.ndarray) -> Callable[[float], np.ndarray]:
    return lambda s: s * s * cov


def _set_program(
    members: Any, epsilon: float, delta: float, weights: np.ndarray
) -> np.ndarray | None:
    """optimal-g's program (Cor. A.1, analytic D*) with every pair of ``members`` a
    constraint, for each of its two covariances; ``None`` if it cannot be solved."""
    from .optimal import calibrate_optimal

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AssumptionWarning)
            mech = calibrate_optimal(
                members, epsilon=epsilon, delta=delta, calibration="analytic", weights=weights
            )
    except MechanismNotApplicableError:
        return None
    return mech.noise_covariance


def scale_at_cost(
    fam: Callable[[float], np.ndarray], weights: np.ndarray, cost: float, start: float
) -> float:
    """The s with tr(W Σ_Z(s)) = cost (bisection; the cost is non-decreasing in s).

    tr(W Σ) is summed elementwise (W symmetric): O(m²) per step instead of the O(m³)
    product, which dominated at m = 500. The bisection stops at relative width 1e-12.
    """

    def at(s: float) -> float:
        return float(np.sum(weights * fam(s)))

    lo, hi = 0.0, max(start, 1e-300)
    while at(hi) < cost and hi < 1e300:
        lo, hi = hi, hi * 2.0
    for _ in range(60):
        if hi - lo <= 1e-12 * hi:
            break
        mid = 0.5 * (lo + hi)
        if at(mid) < cost:
            lo = mid
        else:
            hi = mid
    return lo


def _calibrate_on(
    name: str,
    gm: Any,
    paper: CalibratedMechanism | None,
    build: Callable[..., CalibratedMechanism],
    epsilon: float,
    delta: float,
    start_scale: float | None = None,
    for_set: bool = False,
) -> tuple[np.ndarray, float, PairCheck, str]:
    """The least noise of the mechanism's shape meeting the target on every pair of ``gm``."""
    if paper is None:  # noiseless
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
        return _optimal(gm, paper, build, epsilon, delta, weights, for_set)
    family, start = _family(name, paper)
    if start_scale is not None and start_scale > 0:
        start = start_scale  # a previous round's answer: the bracket is found at once
    cov, scale, check = _search(name, gm, family, start, epsilon, delta)
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

    The candidates (:func:`~distpriv.central.robust.population_model`) depend on the
    noise, and checking all of them at every step of the scale search is 5× the work of
    the plain calibration; so the search runs on the candidates that bind (starting from
    the worst one at the papers' noise), and every candidate is re-checked at the final
    noise. A violated one joins the active set and the search runs again; the result is
    returned only when every candidate for its own noise passes.
    """
    guess = np.zeros((gm.dim, gm.dim)) if paper is None else paper.noise_covariance
    every = population_model(gm, beta=beta, noise_cov=guess, epsilon=epsilon)
    # The checks that only choose members or say whether the members settled run at the
    # search's accuracy (certified upper bounds all the same): the strict check, which the
    # guarantee reports, is published_noise's on the noise as published.
    loose = search_tolerance(delta)
    # The worst member at the papers' noise starts the active set: found among those of
    # largest certified bound (central/_member_search.py), not by a full check.
    first = worst_member(every, guess, epsilon=epsilon, delta=delta)
    # optimal-g first shapes its noise for the members (cutting planes); should the members
    # not settle while the shape moves with them, the fitted shapes alone (which do).
    shaped: tuple[np.ndarray, float, PairCheck, str] | None = None
    for for_set in (True, False) if name == "optimal-g" else (False,):
        # The program also sees the joint set's stratum corners (cutting planes that span
        # how its members move, not only the one member of the last noise: issue 25 item 2).
        corners = set_corners(gm, beta=beta, noise_cov=guess) if for_set else []
        active, scale = [*first, *corners], None
        for _ in range(_ROBUST_ROUNDS):
            target = moments_model(gm, active)
            cov, scale, _, method = _calibrate_on(
                name, target, paper, build, epsilon, delta, start_scale=scale, for_set=for_set
            )
            # Checked as it will be published (calibrate_exact's _noise(cov)): within one
            # call the strict check then finds these members remembered, not searched again.
            pub = _noise(cov).covariance
            every = population_model(gm, beta=beta, noise_cov=pub, epsilon=epsilon)
            full = pair_deltas(every, pub, epsilon=epsilon, tol=loose, screen=delta)
            if full.worst <= delta:
                best = _cheaper(shaped, (cov, scale, full, method), paper)
                if name != "optimal-g":
                    return best
                # The members that bind depend on the noise: the isotropic shape is judged
                # on the members for its own noise (optimal-g never noisier than expm-g).
                iso = _scale_for_set(
                    gm,
                    np.eye(gm.dim),
                    "isotropic noise (expm-g's shape)",
                    epsilon,
                    delta,
                    beta,
                    start=math.sqrt(float(np.trace(best[0])) / gm.dim),
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
    fam = _scaled(shape)
    label = f"{method}; scaled for the set's members of this noise"
    # An active set of members, one full check per round (central/_member_search.py);
    # should it not settle, the search on every member of each noise below.
    try:
        found = smallest_scale_on_set(
            gm,
            lambda cov: population_model(gm, beta=beta, noise_cov=cov, epsilon=epsilon),
            fam,
            epsilon=epsilon,
            delta=delta,
            start=start,
            name="optimal-g",
        )
    except MechanismNotApplicableError:
        return None
    if found is not None:
        return fam(found[0]), found[0], found[1], label
    s = start
    for _ in range(_ROBUST_ROUNDS):
        every = population_model(gm, beta=beta, noise_cov=fam(s), epsilon=epsilon)
        try:
            s, _ = smallest_scale(
                every, fam, epsilon=epsilon, delta=delta, start=s, name="optimal-g"
            )
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
        (:func:`~distpriv.central.robust.population_model`), so that it holds on the
        population with probability ≥ 1 − β over the draw of the table.

    Returns
    -------
    CalibratedMechanism
        Headline (ε, δ) verified for every pair, both directions, by
        :func:`~distpriv.central.exact.pair_deltas`; ``calibration="exact"``.

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
        if robust_beta is not None:
            cov, scale, check, method = _calibrate_robust(
                name, gm, paper, build, epsilon, delta, robust_beta
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
        assumptions=(exact_assumption(check, delta),),
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
