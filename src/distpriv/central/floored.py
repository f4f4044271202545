"""Full-rank noise at rank-one prices: a main noise shape plus a floor on the lattice.

DauM (Chen & Ohrimenko 2023, Alg. 1 / Thm A.1), Gaussian DirM (Thm 4.3) and optimal-g
(Cor. A.1 + a convex program) usually add noise of rank one: the other m − 1 directions of
the statistics are published exactly. On grid-valued statistics (counts step by 1, means
of integer columns over n rows by 1/n) those exact directions pin the release to one grid
point, and the noise protects nothing (docs/architecture.md §4; every Adult daum release is
decoded).
The Gaussian model cannot see this: its exact guarantee is about N(μ_θ, Σ_θ), not the grid.

The mechanisms here add, independently of the main noise, a *floor*: Gaussian noise with
standard deviation ``floor`` grid steps in every coordinate (``floor`` × h_k for statistic
k, h_k its lattice step, :mod:`distpriv.modeling.lattice`). The floor covers every
direction the main shape leaves uncovered, so the noise has full rank m, and at one grid
step it blurs the grid (a Gaussian of standard deviation h smooths the lattice hℤ: the
periodic part of its density has relative amplitude 2·exp(−2π²) ≈ 5e-9). Adding
independent noise is post-processing, so under the Gaussian model the floor can only
improve the guarantee of the main shape; the exact calibration then lowers the main
shape's scale to the least one at which the exact privacy profile of the outputs
N(μ_θ, Σ_θ + s²Σ_main + F) meets (ε, δ) for every pair, both directions
(:func:`distpriv.population.exact.smallest_scale`) — the headline is verified, not argued.

* ``daum-floor``: DauM's direction v, Σ_Z = s² v vᵀ + F.
* ``dirm-g-floor``: DirM's span V of the mean differences, Σ_Z = s² V Vᵀ + F.
* ``optimal-g-full``: the least weighted E‖Z‖² = tr(W Σ_Z) found over noise covariances
  with Σ_Z ⪰ F: the convex program of optimal-g solved on the model with covariances
  Σ_θ + F (so Σ_Z = F + S, S ⪰ 0 — exactly the constraint Σ_Z ⪰ F), the floored DauM
  shape, optimal-g's own shape (the papers' and the exact one) plus the floor, optimal-g's
  exact noise as is when it already covers the floor, and the isotropic shape raised to
  the floor (diag(max(F, s²))); each calibrated exactly (the main part's scale, F fixed),
  the one of least tr(W Σ_Z) kept. Its
  isotropic candidate equals expm-g's exact noise whenever that noise is at or above the
  floor, so it is never noisier than expm-g there.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import (
    AssumptionWarning,
    MechanismNotApplicableError,
    ParameterError,
    PrivacyLeakWarning,
)
from ..noise import Noise
from ..population.confidence import checked_members
from ..population.exact import (
    EXACT_THEOREM,
    PairCheck,
    exact_assumption,
    gaussian_premise,
    pair_deltas,
    published_noise,
    search_tolerance,
    smallest_scale,
    verified_headline,
)
from ..population.member_search import smallest_scale_on_set
from ..population.pair_pruning import first_failing
from ..querymodel import GaussianQueryModel
from ._common import FALLBACK_NOTE, QueryModel, gaussian_assumption
from ._constant import structural_assumptions
from .base import CalibratedMechanism
from .exact_calibration import scale_at_cost
from .expected_value import calibrate_dirm
from .floor_candidates import Cand, candidates, floor_noise
from .floor_levels import (
    CONTINUOUS_FLOOR,
    check_floor,
    continuous_floor,
    floor_variances,
    lattice_steps,
)
from .optimal import calibrate_optimal
from .uncertainty import calibrate_daum

__all__ = [
    "DEFAULT_FLOOR",
    "FLOORED_MECHANISMS",
    "calibrate_floored",
    "floor_variances",
]

FLOORED_MECHANISMS = ("daum-floor", "dirm-g-floor", "optimal-g-full")
# Floor standard deviation in grid steps. One step: on 400 real Adult subsets the grid
# decoder recovers 0 % of releases (100 % without a floor, 0.2 % at a quarter step) and
# the data-level check finds no evidence of a violation (docs/guarantees.md, "Noise floors").
DEFAULT_FLOOR = 1.0
FLOOR_SENTENCE = (
    "A little independent noise (the floor: {floor:g} grid step(s) of each statistic) goes "
    "into every direction, because counts and means of integer columns lie on a grid and "
    "any direction published exactly could pin the released values to one grid point."
)
_MAIN = {"daum-floor": "daum", "dirm-g-floor": "dirm-g", "optimal-g-full": "optimal-g"}
_THEOREMS = {
    "daum-floor": "Chen & Ohrimenko 2023, Alg. 1 / Thm A.1 (via Cor. A.1)",
    "dirm-g-floor": "Chen & Ohrimenko 2023, Thm 4.3",
    "optimal-g-full": "Chen & Ohrimenko 2023, Cor. A.1, least tr(W Sigma_Z) over "
    "Sigma_Z >= F (convex program; distpriv)",
}
_POST = (
    "; plus an independent floor N(0, F), F = diag((floor * h_k)^2) on the lattice steps h_k "
    "(post-processing: it can only improve the Gaussian-model guarantee; distpriv)"
)


def _population(model: Any, gm: Any, beta: float | None) -> tuple[Any, ...]:
    """The population premise (population/confidence.py), when that module exists."""
    try:
        from ..population.confidence import population_premise
    except ImportError:  # before the robust calibration: the fitted model only
        return ()
    premise = population_premise(model, gm, beta=beta)
    return () if premise is None else (premise,)


def calibrate_floored(
    name: str,
    model: QueryModel,
    *,
    epsilon: float,
    delta: float,
    calibration: str = "exact",
    lattice: Any = None,
    floor: Any = DEFAULT_FLOOR,
    beta: float | None = None,
    **options: Any,
) -> CalibratedMechanism:
    """Calibrate a floored mechanism: main noise shape + a floor on the lattice, rank m.

    Parameters
    ----------
    name : {"daum-floor", "dirm-g-floor", "optimal-g-full"}
    model : GaussianQueryModel or SampledQueryModel
    epsilon, delta : float
        The target (δ > 0).
    calibration : {"exact", "analytic", "classical"}
        ``"exact"`` (default): the least scale of the main shape, with the floor fixed,
        verified by the exact profile. Otherwise the main mechanism is calibrated the
        papers' way and the floor is added on top (post-processing); the headline is then
        what the exact profile verifies.
    lattice : sequence of float, None or Lattice, shape (m,)
        Lattice step h_k of each statistic (None/NaN: not on a lattice; that statistic
        gets no floor). Required.
    floor : float
        Floor standard deviation in grid steps (default :data:`DEFAULT_FLOOR`).
    beta : float or None
        With a model that carries the sampling uncertainty of its moments
        (``model.uncertainty``), the exact calibration meets (ε, δ) on the worst members of
        the (1 − β) confidence set for the population's moments
        (``distpriv.population.confidence``), like the other exact calibrations; ``None``: on the
        fitted moments only.
    **options
        ``direction`` (daum-floor) or ``weights`` (optimal-g-full).

    Returns
    -------
    CalibratedMechanism
        Noise = main component(s) + the floor; diagnostics ``floor``, ``lattice_steps``,
        ``floor_variances``, ``floor_mse``, ``main_mse``, ``main_shape``.

    Raises
    ------
    MechanismNotApplicableError
        No lattice given, or no scale of the shape meets the target.
    """
    if name not in FLOORED_MECHANISMS:
        raise ParameterError(f"name must be one of {FLOORED_MECHANISMS}, got {name!r}")
    gm, _ = gaussian_assumption(model)
    m = gm.dim
    steps = lattice_steps(lattice, m)
    c = check_floor(floor)
    fvar = continuous_floor(gm, steps, c)
    check: PairCheck | None = None
    with warnings.catch_warnings():
        # The papers' assumptions are not those of the exact guarantee: not warned here.
        warnings.simplefilter("ignore", AssumptionWarning)
        if calibration == "exact":
            cands, paper = candidates(name, model, gm, fvar, dict(options), epsilon, delta, beta)
            weights = (
                np.asarray(paper.diagnostics["weights"]) if name == "optimal-g-full" else np.eye(m)
            )
            noise, label, scale, check = _search_best(
                name, gm, cands, weights, epsilon, delta, beta
            )
        else:
            paper = _MAIN_BUILD[name](model, epsilon, delta, calibration, options)
            label, scale = "the papers' calibration of the main shape plus the floor", 1.0
            noise = paper.noise.plus(floor_noise(fvar))
    return _assemble(
        name,
        model,
        gm,
        paper,
        _Shaped(noise, label, scale, check),
        _Floor(steps, c, fvar),
        epsilon=epsilon,
        delta=delta,
        beta=beta,
    )


def _main_daum(model, eps, dlt, cal, options):  # type: ignore[no-untyped-def]
    return calibrate_daum(model, epsilon=eps, delta=dlt, calibration=cal, **options)


def _main_dirm(model, eps, dlt, cal, options):  # type: ignore[no-untyped-def]
    return calibrate_dirm(model, epsilon=eps, delta=dlt, kind="gaussian", calibration=cal)


def _main_optimal(model, eps, dlt, cal, options):  # type: ignore[no-untyped-def]
    return calibrate_optimal(model, epsilon=eps, delta=dlt, calibration=cal, **options)


_MAIN_BUILD = {
    "daum-floor": _main_daum,
    "dirm-g-floor": _main_dirm,
    "optimal-g-full": _main_optimal,
}


# Re-calibrations against the worst members of the population confidence set.
_ROBUST_ROUNDS = 8


def _population_search(
    name: str,
    gm: GaussianQueryModel,
    fam: Callable[[float], np.ndarray],
    start: float,
    epsilon: float,
    delta: float,
    beta: float,
) -> tuple[float, PairCheck]:
    """Least scale meeting (ε, δ) for every member of the (1 − β) population set.

    The worst members (``population.confidence.population_model``) depend on the noise:
    search on the members worst for the current noise, re-check at the answer, repeat.
    """
    from ..population.confidence import population_model  # the robust calibration

    # An active set of members, one full check per round (population/member_search.py);
    # should it not settle, the search on every member of each noise below.
    found = smallest_scale_on_set(
        gm,
        lambda cov: population_model(gm, beta=beta, noise_cov=cov, epsilon=epsilon),
        fam,
        epsilon=epsilon,
        delta=delta,
        start=start,
        name=name,
    )
    if found is not None:
        return found
    s = start
    for _ in range(_ROBUST_ROUNDS):
        every = population_model(gm, beta=beta, noise_cov=fam(max(s, 0.0)), epsilon=epsilon)
        s, _ = smallest_scale(every, fam, epsilon=epsilon, delta=delta, start=s, name=name)
        check = pair_deltas(
            population_model(gm, beta=beta, noise_cov=fam(s), epsilon=epsilon),
            fam(s),
            epsilon=epsilon,
            screen=delta,
        )
        if check.worst <= delta:
            return s, check
    raise MechanismNotApplicableError(  # pragma: no cover - the members did not settle
        f"{name}: the calibration for the population confidence set did not settle; "
        "use beta=None (fitted moments only) or a larger modelling table"
    )


def _search_best(
    name: str,
    gm: GaussianQueryModel,
    cands: list[Cand],
    weights: np.ndarray,
    epsilon: float,
    delta: float,
    beta: float | None = None,
) -> tuple[Noise, str, float, PairCheck]:
    # β of the population premise, or None for the fitted model alone.
    robust_beta = beta if getattr(gm, "uncertainty", None) is not None else None
    target = checked_members(gm, beta, epsilon=epsilon)
    best = None
    errors = []
    # Covariances already verified first (one check each): a best to prune against.
    for label, fam, start, noise_of in sorted(cands, key=lambda c: c[2] >= 0):
        if start < 0:  # a fixed covariance (it must not shrink below the floor)
            check = pair_deltas(target(fam(1.0)), fam(1.0), epsilon=epsilon, screen=delta)
            if check.worst <= delta:
                cost = float(np.trace(weights @ fam(1.0)))
                if best is None or cost < best[0]:
                    best = (cost, noise_of(1.0), label, 1.0, check)
            continue
        if best is not None:
            # Prune (exact): δ(ε) is non-increasing and the cost non-decreasing in the
            # scale, so a family that fails the target where it costs as much as the best
            # so far can only verify at a higher cost. Otherwise search from there.
            # pair_deltas' verdict at the search accuracy, stopped at the first failing pair.
            cap = scale_at_cost(fam, weights, best[0], start)
            failing, _ = first_failing(
                target(fam(cap)),
                fam(cap),
                epsilon=epsilon,
                delta=delta,
                tol=search_tolerance(delta),
            )
            if failing >= 0:
                continue
            # The least scale is at most cap. Searched from the family's own start when
            # that is below: the same search as the mechanism of that one family (daum-floor
            # for DauM's direction), whose checks auto's calibration cache then shares.
            start = min(start, cap)
        try:
            if robust_beta is not None:
                s, check = _population_search(name, gm, fam, start, epsilon, delta, robust_beta)
            else:
                s, check = smallest_scale(
                    gm, fam, epsilon=epsilon, delta=delta, start=start, name=name
                )
        except MechanismNotApplicableError as exc:
            cause = str(exc)
            if robust_beta is not None:
                cause = set_refusal(name, gm, (fam, start), target, (epsilon, delta), cause)
            errors.append(f"{label}: {cause}")
            continue
        cost = float(np.trace(weights @ fam(s)))
        if best is None or cost < best[0]:
            best = (cost, noise_of(s), label, s, check)
    if best is None:
        raise MechanismNotApplicableError("; ".join(errors))
    _, _, label, s, _ = best
    noise_of = next(c[3] for c in cands if c[0] == label)
    # Checked again as published (population.exact.published_noise): the Noise drops tiny
    # eigenvalues of the searched covariance.
    noise, check = published_noise(
        lambda f: noise_of(s * math.sqrt(f)), target, epsilon=epsilon, delta=delta, name=name
    )
    return noise, label, s, check


def set_refusal(
    name: str,
    gm: GaussianQueryModel,
    family: tuple[Callable[[float], np.ndarray], float],
    target: Callable[[np.ndarray], GaussianQueryModel],
    privacy: tuple[float, float],
    message: str,
) -> str:
    """Why a noise family failed on the population set, naming the real cause.

    The search on the (1 − β) set's worst members says "no scale meets the target"; when
    the fitted model alone certifies the family, the cause is not the shape but a member
    of the set (the sampling uncertainty of the modelling table's moments): that member
    and its pair are named, at the scale the fitted model needs. Otherwise ``message``
    (the fitted model refuses too, so the shape is the cause) is returned as is.

    Parameters
    ----------
    family : (callable, float)
        Σ_Z(s), shape (m, m), and the scale the search starts from.
    target : callable
        Noise covariance → the model it is checked on (the set's worst members).
    privacy : (float, float)
        (ε, δ).
    """
    fam, start = family
    epsilon, delta = privacy
    try:
        s, _ = smallest_scale(gm, fam, epsilon=epsilon, delta=delta, start=start, name=name)
    except MechanismNotApplicableError:
        return message
    members = pair_deltas(target(fam(s)), fam(s), epsilon=epsilon, screen=delta)
    return (
        f"the fitted model is certified by this shape at scale {s:.6g}, but the population "
        f"confidence set (beta: the modelling table's moments are estimates) is not: at that "
        f"scale its worst member gives {members.describe()}, and no scale of the shape "
        f"brings that member below delta = {delta:g} ({message}); use beta=None (the "
        "fitted moments only, a weaker premise), a larger modelling table, or 'expm-g'"
    )


@dataclasses.dataclass(frozen=True)
class _Floor:
    """The floor of a floored mechanism: lattice steps h_k, floor c in steps, variances."""

    steps: np.ndarray
    c: float
    fvar: np.ndarray


@dataclasses.dataclass(frozen=True)
class _Shaped:
    """The main shape's noise, label and scale; its exact check (None: papers' way)."""

    noise: Noise
    label: str
    scale: float
    check: PairCheck | None


def _assemble(
    name: str,
    model: QueryModel,
    gm: GaussianQueryModel,
    paper: CalibratedMechanism,
    shaped: _Shaped,
    floor: _Floor,
    *,
    epsilon: float,
    delta: float,
    beta: float | None,
) -> CalibratedMechanism:
    noise, label, scale, check = shaped.noise, shaped.label, shaped.scale, shaped.check
    steps, c, fvar = floor.steps, floor.c, floor.fvar
    floor_mse = float(fvar.sum())
    unknown = [s for s, h in zip(gm.statistics, steps, strict=True) if not np.isfinite(h)]
    notes = [n for n in paper.guarantee.notes if n != FALLBACK_NOTE]
    notes.append(FLOOR_SENTENCE.format(floor=c))
    notes.append(
        f"noise: {label}; E||Z||^2 = {noise.mse():.6g}, of which the floor adds {floor_mse:.6g}"
    )
    if unknown:
        notes.append(
            f"no lattice known for {', '.join(unknown)}: their floor is {CONTINUOUS_FLOOR:g} "
            "of their spread under the model (continuous values cannot be pinned by a grid; "
            "the floor keeps the noise of full rank)"
        )
    theorem = _THEOREMS[name] + _POST
    diag: dict[str, Any] = {
        "main_mechanism": _MAIN[name],
        "main_shape": label,
        "calibration_scale": scale,
        "floor": c,
        "lattice_steps": steps,
        "floor_variances": fvar,
        "floor_mse": floor_mse,
        "main_mse": noise.mse() - floor_mse,
        "noise_rank": None,
    }
    if "weights" in paper.diagnostics:
        diag["weights"] = paper.diagnostics["weights"]
        diag["objective_kind"] = paper.diagnostics.get("objective_kind")
        diag["objective"] = float(
            np.trace(np.asarray(paper.diagnostics["weights"]) @ noise.covariance)
        )
    if check is not None:
        diag.update({"achieved_delta": check.worst, "exact_check": check.to_dict()})
        guarantee = dataclasses.replace(
            paper.guarantee,
            mechanism=name,
            epsilon=epsilon,
            delta=delta,
            theorem=f"{theorem}, calibrated by the {EXACT_THEOREM}",
            calibration="exact",
            assumptions=(exact_assumption(check, delta), *structural_assumptions(paper)),
            premises=(gaussian_premise(model, gm), *_population(model, gm, beta)),
            notes=tuple(notes),
            fallback=None,
        )
    else:
        g0 = dataclasses.replace(
            paper.guarantee, mechanism=name, theorem=theorem, notes=tuple(notes), fallback=None
        )
        guarantee, chk = verified_headline(g0, gm, noise.covariance)
        diag["exact_check"] = chk.to_dict()
    mech = CalibratedMechanism(name, noise, guarantee, model.statistics, diag)
    mech.diagnostics["noise_rank"] = mech.noise_rank
    if mech.noise_rank < gm.dim:
        # Never silently rank-deficient: floor = 0 asks for it, say so.
        msg = (
            f"{name}: the noise covers {mech.noise_rank} of {gm.dim} directions (floor = "
            f"{c:g}); the other components would be published exactly"
        )
        if c > 0:
            raise MechanismNotApplicableError(msg + "; use 'expm-g'")
        warnings.warn(msg, PrivacyLeakWarning, stacklevel=3)
    return mech
