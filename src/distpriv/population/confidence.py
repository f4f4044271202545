"""Calibration that holds on the population with confidence 1 − β.

A query model built from a modelling table estimates each θ's moments from a *sample* of
the population the protected datasets come from. The exact calibration
(:mod:`distpriv.central.exact_calibration`) is exact on the fitted moments; here those
moments are replaced by the worst members of a simultaneous confidence set for the
population's moments, so that the calibrated noise meets (ε, δ) on the population's own
Gaussian model whenever the population lies in the set — with probability ≥ 1 − β over the
draw of the modelling table (asymptotically).

Two sets (:func:`population_set`): the *joint* set of :mod:`distpriv.population.sets`
(the default; one statement per pair in the gap's distance and the strata's variances, the
worst member by optimisation) and the *box* set below, which is selectable and used where
the joint search would be too costly (:func:`set_method`). The box set, from
:class:`~distpriv.moment_uncertainty.MomentUncertainty` (a dataset under θ takes w_θs rows from
stratum s; m_s, C_s are the per-row mean and covariance of stratum s, estimated from N_s
rows):

* **mean gaps** (β/2, every pair of Ψ at once). The gap of a pair, μᵢ − μⱼ =
  Σ_s (w_is − w_js) m_s, is estimated with error e ≈ N(0, V_ij), V_ij = Σ_s
  (w_is − w_js)² C_s / N_s (central limit theorem, independent strata). What δ depends on
  is the gap's distance in the metric of the outputs, ‖M Δ‖ with
  M = ((Σᵢ + Σⱼ)/2 + Σ_Z)^(−1/2). Its upper confidence bound (:func:`gap_bound`) is the
  observed distance plus z‖M V^(1/2)‖₂: the estimate's distance is at least the true one
  plus a one-dimensional normal error along the true direction, whose sd is at most
  ‖M V^(1/2)‖₂, so the bound fails with probability ≤ Φ(−z). z is the least of the
  Bonferroni quantile Φ⁻¹(1 − β/(2P)) over the P pairs and the Scheffé radius
  √χ²_m(1 − β/2) (which holds for every metric at once). V is taken at each covariance
  corner (a member's gap error law is its own covariances'), and the candidate gap is
  moved along the direction in which the distance grows fastest until it reaches the
  bound. Several secrets at once (one proportion per attribute) have one such error
  vector per attribute: the Scheffé radius is then taken at level β/(2·D), D the number
  of distinct gap directions (:func:`gap_directions`, Bonferroni over attributes);
* **covariances** (β/2, Bonferroni over strata and statistics): the variance of feature j
  in stratum s is known up to a factor exp(±z √((κ_j − 1)/N_s)), κ_j the largest
  kurtosis of feature j over the strata (the delta method on log σ̂²: Var log σ̂² ≈
  (κ − 1)/N; a small stratum's sample kurtosis understates a tail it has not seen; with
  several secrets, the largest over the strata of the same attribute), z =
  Φ⁻¹(1 − β/(4 S m)). A corner scales C_s to Λ C_s Λ with Λ = diag of the square roots
  of those factors, all at their low or all at their high end; the 2^S combinations of
  strata corners change both the level of Σ_θ (less model noise) and the difference
  Σᵢ − Σⱼ (the covariance gap).

The calibration then meets the target on an *augmented* model whose pairs are, for every
pair of Ψ and every corner, the corner's covariances with the mean gap at its upper
bound, for the noise being calibrated. Adding noise is post-processing, so the least scale
that meets these pairs is found by the bracketed search of the plain exact calibration;
since the worst gaps depend on the noise, every candidate is re-checked for the final noise
(:func:`distpriv.central.exact_calibration.calibrate_exact` keeps an active set of the
candidates that bind until the final noise passes all of them).

Why a bound per noise suffices: for a noise shape fixed in advance and a check that is
monotone in the scale, the calibrated scale is below the population's least scale only if
the bound fails at that (fixed) least noise, an event of probability ≤ β — so the
coverage of a bound taken for the noise being checked carries over to the calibrated
noise (test inversion). For noise shapes fitted to the table (eigm, optimal-g, …) this is
not proven, and the coverage is measured instead.

What this is not: a theorem over the whole continuum of the covariance box (its worst
member is searched among the 2^S corners), and the laws are asymptotic and assume the
modelling table is a random sample of the population's strata. The coverage is measured:
tests/central/test_robust.py and tests/central/test_population_coverage.py draw modelling
tables of 300 to 4,000 rows from Adult, the RAND health insurance experiment and a known
heavy-tailed population, and check the calibrated noise against the population's own
model with the exact accountant (docs/guarantees.md, "Holds on the population").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

# scipy.special, not scipy.stats: ndtri is norm.ppf, 2 gammaincinv(m/2, q) chi2's.
from scipy.special import gammaincinv, ndtri

from ..accounting.calibration_cache import active_cache, fingerprint
from ..guarantees import Assumption
from ..moment_uncertainty import BootstrapUncertainty, MomentUncertainty
from ..querymodel import GaussianQueryModel
from ..util.validation import check_real
from . import _stack as rs

# _inv_sqrt, _worst_shift, farthest_gap and gap_bound live in _stack.py (shared with
# the bootstrap set) and stay importable from here.
from ._stack import _inv_sqrt as _inv_sqrt
from ._stack import _worst_shift as _worst_shift
from ._stack import farthest_gap as farthest_gap
from ._stack import gap_bound as gap_bound
from ._tight import tight_premise
from .sets import JOINT_MAX_PAIRS as JOINT_MAX_PAIRS
from .sets import SET_METHODS, joint_corners, joint_members, joint_z, population_set
from .sets import _clip_psd as _clip_psd
from .sets import selected_set as selected_set
from .sets import set_method as set_method

__all__ = [
    "DEFAULT_BETA",
    "SET_METHODS",
    "ConfidenceSet",
    "check_beta",
    "checked_members",
    "confidence_set",
    "marginal",
    "population_model",
    "population_premise",
    "population_set",
    "set_corners",
    "set_method",
]

DEFAULT_BETA = 0.05


def check_beta(beta: object) -> float | None:
    """β in (0, 1), or ``None`` (calibrate on the fitted moments only)."""
    if beta is None:
        return None
    return check_real(beta, "beta", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)


@dataclass(frozen=True)
class ConfidenceSet:
    """The (1 − β) confidence statements the robust calibration covers.

    Attributes
    ----------
    beta : float
    gap_z : float
        The multiplier of the gap's upper confidence bound: the least of the one-sided
        normal quantile Φ⁻¹(1 − β/(2P)) (Bonferroni over the P pairs of Ψ) and the
        Scheffé radius √χ²_m(1 − β/2) (every direction and every pair at once).
    pairs : int
        P, the pairs of Ψ the gap bounds cover simultaneously.
    variance_factors : ndarray, shape (S, m, 2)
        Low and high multipliers of each stratum's variance of each statistic.
    z : float
        The normal quantile used for the variances (Bonferroni over S·m, two-sided).
    kurtosis : ndarray, shape (S, m)
        The kurtosis the variance factors use: each statistic's largest over the strata
        (a small stratum's sample kurtosis understates a heavy tail it has not seen) —
        over the strata of the same attribute when several secrets are hidden at once
        (:func:`strata_groups`: each attribute's set is then its own, Bonferroni aside).
    directions : int
        The independent gap-error directions the Scheffé radius is split over (Bonferroni,
        :func:`gap_directions`): 1 for one proportion secret, one per attribute for
        several secrets at once.
    method : str
        ``"box"`` (this module's docstring) or ``"joint"``
        (:mod:`distpriv.population.sets`: then ``gap_z`` = ``z`` = Φ⁻¹(1 − β/P), the
        radius of the gap's ellipsoid and the half-width of every log-variance interval
        in its sd, and ``directions`` is unused).
    """

    beta: float
    gap_z: float
    pairs: int
    variance_factors: np.ndarray
    z: float
    kurtosis: np.ndarray
    directions: int = 1
    method: str = "box"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            "method": self.method,
            "beta": self.beta,
            "gap_z": self.gap_z,
            "pairs": self.pairs,
            "variance_factors": self.variance_factors.tolist(),
            "z": self.z,
            "kurtosis": self.kurtosis.tolist(),
            "directions": self.directions,
        }


def _gap_covariance(unc: MomentUncertainty, i: int, j: int, covs: np.ndarray) -> np.ndarray:
    dw = unc.weights[i] - unc.weights[j]
    sizes = np.asarray(unc.stratum_sizes, dtype=float)
    return np.einsum("s,sab->ab", dw**2 / sizes, covs)


def confidence_set(model: GaussianQueryModel, *, beta: float) -> Any:
    """The confidence statements of the module docstring for ``model.uncertainty``
    (a :class:`ConfidenceSet`; for a bootstrap uncertainty, a
    :class:`~distpriv.population.bootstrap.BootstrapConfidenceSet`)."""
    unc = model.uncertainty
    if isinstance(unc, BootstrapUncertainty):
        from .bootstrap import bootstrap_confidence_set

        return bootstrap_confidence_set(model, beta=beta)
    if unc is None:  # pragma: no cover - callers check
        raise ValueError("model has no uncertainty")
    n_strata, m = unc.row_covariances.shape[:2]
    # Strata that share one covariance estimate (a mean secret's tilts) err together: one
    # statement per statistic, not one per stratum and statistic.
    z = float(ndtri(1.0 - beta / (4.0 * (1 if unc.shared_strata else n_strata) * m)))
    sizes = np.asarray(unc.stratum_sizes, dtype=float)[:, None]
    kurt = np.empty_like(unc.kurtosis)
    for group in strata_groups(unc, model.pairs):  # one proportion secret: one group
        kurt[group] = unc.kurtosis[group].max(axis=0)
    sd = np.sqrt(np.clip(kurt - 1.0, 0.0, None) / sizes)  # sd of log σ̂², (S, m)
    n_pairs = max(len(model.pairs), 1)
    if set_method(model) == "joint":
        zj = joint_z(beta, n_pairs)
        factors = np.stack([np.exp(-zj * sd), np.exp(zj * sd)], axis=-1)
        return ConfidenceSet(beta, zj, n_pairs, factors, zj, kurt, 1, "joint")
    factors = np.stack([np.exp(-z * sd), np.exp(z * sd)], axis=-1)
    # The Scheffé radius holds for every pair whose gap error is a multiple of one error
    # vector (one proportion secret: every gap is (kᵢ − kⱼ)(m_A − m_B)); pairs with other
    # weight differences (several attributes) have their own: Bonferroni over them.
    families = gap_directions(unc, model.pairs)
    gap_z = min(
        float(ndtri(1.0 - beta / (2.0 * n_pairs))),
        math.sqrt(2.0 * gammaincinv(m / 2, 1 - beta / (2.0 * families))),
    )
    return ConfidenceSet(beta, gap_z, n_pairs, factors, z, kurt, families)


def strata_groups(unc: MomentUncertainty, pairs: Any) -> list[list[int]]:
    """The strata linked by the pairs (a pair links every stratum either of its hypotheses
    weighs): one group for a proportion secret, one per attribute for several secrets at
    once. Strata no pair reaches form their own groups."""
    n_strata = len(unc.stratum_sizes)
    parent = list(range(n_strata))

    def root(s: int) -> int:
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    for i, j in pairs:
        support = np.flatnonzero((unc.weights[i] > 0) | (unc.weights[j] > 0))
        for s in support[1:]:
            parent[root(int(s))] = root(int(support[0]))
    groups: dict[int, list[int]] = {}
    for s in range(n_strata):
        groups.setdefault(root(s), []).append(s)
    return list(groups.values())


def gap_directions(unc: MomentUncertainty, pairs: Any) -> int:
    """The number of distinct directions (up to sign and scale) of the pairs' weight
    differences w_i − w_j: the gap errors of the pairs of one direction are multiples of
    one m-vector error, so one Scheffé statement covers them all (at least 1)."""
    dirs: list[np.ndarray] = []
    for i, j in pairs:
        d = np.asarray(unc.weights[i] - unc.weights[j], dtype=float)
        nrm = float(np.linalg.norm(d))
        if nrm == 0.0:
            continue
        d = d / nrm
        d = d if d[np.flatnonzero(np.abs(d) > 1e-12)[0]] > 0 else -d
        if not any(np.allclose(d, e, rtol=0.0, atol=1e-9) for e in dirs):
            dirs.append(d)
    return max(len(dirs), 1)


def _corners(n_strata: int) -> list[tuple[int, ...]]:
    return [tuple((c >> s) & 1 for s in range(n_strata)) for c in range(2**n_strata)]


def _support_corners(n_strata: int, support: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The corners over the strata of ``support`` (the others at their low end), in the
    order of :func:`_corners` restricted to them (all strata: exactly :func:`_corners`)."""
    sup = list(support)
    out = []
    for c in range(2 ** len(sup)):
        corner = [0] * n_strata
        for b, s in enumerate(sup):
            corner[s] = (c >> b) & 1
        out.append(tuple(corner))
    return out


def checked_members(
    model: GaussianQueryModel, beta: float | None, *, epsilon: float | None = None
) -> Callable[[np.ndarray], GaussianQueryModel]:
    """What a noise covariance must be checked on: ``model`` itself, or — when it carries
    the uncertainty of its moments and β is set — the worst members of the (1 − β)
    confidence set for that noise (:func:`population_model`, at ``epsilon``)."""
    if beta is None or getattr(model, "uncertainty", None) is None:
        return lambda noise_cov: model
    return lambda noise_cov: population_model(
        model, beta=beta, noise_cov=noise_cov, epsilon=epsilon
    )


def population_model(
    model: GaussianQueryModel,
    *,
    beta: float,
    noise_cov: np.ndarray,
    epsilon: float | None = None,
) -> GaussianQueryModel:
    """The augmented model whose pairs are the worst members of the confidence set.

    Parameters
    ----------
    model : GaussianQueryModel
        With ``uncertainty`` set.
    beta : float
        1 − β is the confidence.
    noise_cov : ndarray, shape (m, m)
        The noise the mean gaps are made worst for (the final noise is re-checked by the
        caller).
    epsilon : float, optional
        The joint set (:func:`set_method`) maximises δ at this ε (the calibration's); its
        members are the worst for it. ``None``: ε = 1 (callers that know ε pass it). The
        box set does not depend on it.

    Returns
    -------
    GaussianQueryModel
        Box set: for every pair of Ψ and every corner of the strata covariances, the pair
        with that corner's covariances and the mean gap at its upper confidence bound.
        Joint set: one member per pair, the worst the search finds
        (:mod:`distpriv.population.sets`). Labels say which member of the set each
        hypothesis is.
    """
    unc = model.uncertainty
    if isinstance(unc, BootstrapUncertainty):
        from .bootstrap import bootstrap_population_model

        return bootstrap_population_model(model, beta=beta, noise_cov=noise_cov)
    if unc is None:  # pragma: no cover - callers check
        raise ValueError("model has no uncertainty")
    if set_method(model) == "joint":
        return _joint(model, beta, noise_cov, 1.0 if epsilon is None else float(epsilon))
    cache = active_cache()
    if cache is None:
        return _members(model, _corner_parts(model, beta), beta, noise_cov)
    # Within one call's calibrations (accounting/calibration_cache.py): the noise-free parts
    # once per model and β, the members once per noise.
    base = (_uncertainty_key(model), beta)
    parts = cache.get(cache.corners, base)
    if parts is None:
        parts = _corner_parts(model, beta)
        cache.corners[base] = parts
    key = (*base, fingerprint(np.asarray(noise_cov)))
    members = cache.get_members(key)
    if members is None:
        members = _members(model, parts, beta, noise_cov)
        cache.put_members(key, members)
    return members


def _joint(
    model: GaussianQueryModel, beta: float, noise_cov: np.ndarray, epsilon: float
) -> GaussianQueryModel:
    """The joint set's worst members (remembered per model, β, ε and noise within one
    call's calibrations)."""
    kurt = confidence_set(model, beta=beta).kurtosis
    cache = active_cache()
    key = None
    if cache is not None:
        key = ("joint", _uncertainty_key(model), beta, epsilon, fingerprint(np.asarray(noise_cov)))
        members = cache.get_members(key)
        if members is not None:
            return members
    members = joint_members(model, kurt, beta=beta, noise_cov=noise_cov, epsilon=epsilon)
    if cache is not None:
        cache.put_members(key, members)
    return members


def set_corners(
    model: GaussianQueryModel, *, beta: float, noise_cov: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The joint set's stratum-corner members for ``noise_cov`` (``sets.
    joint_corners``, optimal-g's cutting planes); none for the box or a bootstrap."""
    if not isinstance(model.uncertainty, MomentUncertainty) or set_method(model) != "joint":
        return []
    kurt = confidence_set(model, beta=beta).kurtosis
    return joint_corners(model, kurt, beta=beta, noise_cov=noise_cov)


def _uncertainty_key(model: GaussianQueryModel) -> str:
    unc = model.uncertainty
    if not isinstance(unc, MomentUncertainty):  # pragma: no cover - callers check
        raise ValueError("model has no moment uncertainty")
    return fingerprint(
        np.asarray(model.means),
        np.asarray(model.covariances),
        tuple(map(tuple, model.pairs)),
        tuple(map(str, model.labels)),
        unc.stratum_sizes,
        unc.weights,
        unc.row_covariances,
        unc.kurtosis,
        unc.method,
    )


@dataclass(frozen=True)
class _Corner:
    """A pair of Ψ at a corner of the covariance box: what does not depend on the noise."""

    i: int
    j: int
    tag: str
    cov_i: np.ndarray  # the corner's covariances (as computed, for the metric)
    cov_j: np.ndarray
    psd_i: np.ndarray  # the same, tiny negative eigenvalues clipped (the members')
    psd_j: np.ndarray
    spread: np.ndarray  # square root of the gap's error covariance at the corner


def _corner_parts(model: GaussianQueryModel, beta: float) -> list[_Corner]:
    """Every pair of Ψ at every corner of the strata covariances (noise-free parts)."""
    unc = model.uncertainty
    if not isinstance(unc, MomentUncertainty):  # pragma: no cover - callers check
        raise ValueError("model has no moment uncertainty")
    cs = confidence_set(model, beta=beta)
    n_strata = unc.row_covariances.shape[0]
    c_hat = unc.row_covariances
    r = rs.unit_coordinates(model.covariances, model.means)  # decompositions at unit spread
    out = []
    # A stratum neither hypothesis of a pair weighs changes nothing of that pair (several
    # secrets: the other attributes' strata): its corners would only repeat the pair. They
    # are skipped when every pair keeps the same number of members (callers fold the
    # members back to the pairs by that count).
    supports: list[tuple[int, ...]] = [
        tuple(int(s) for s in np.flatnonzero((unc.weights[i] > 0) | (unc.weights[j] > 0)))
        for i, j in model.pairs
    ]
    if len({len(sup) for sup in supports}) != 1:
        supports = [tuple(range(n_strata))] * len(model.pairs)
    for (i, j), support in zip(model.pairs, supports, strict=True):
        corners = _support_corners(n_strata, support)
        if unc.shared_strata:
            # One estimate, one error: every stratum at the same end (docs/guarantees.md,
            # "members the data allow"); a corner with the strata at opposite ends would
            # give the two hypotheses covariances no population of these rows has.
            corners = [c for c in corners if len({c[s] for s in support}) == 1]
        for corner in corners:
            cov_i, cov_j = model.covariances[i].copy(), model.covariances[j].copy()
            scaled = np.empty_like(c_hat)
            for s in range(n_strata):
                lam = np.sqrt(cs.variance_factors[s, :, corner[s]])
                scaled[s] = lam[:, None] * c_hat[s] * lam[None, :]
                cov_i += unc.weights[i, s] * (scaled[s] - c_hat[s])
                cov_j += unc.weights[j, s] * (scaled[s] - c_hat[s])
            # The gap's error law at this corner: a member is the population whose
            # covariances are the corner's, so its estimate's spread is the corner's too.
            spread = rs.sqrt_in_units(_gap_covariance(unc, i, j, scaled), r)
            tag = ",".join("hi" if c else "lo" for c in corner)
            psd_i, psd_j = rs.clip_psd_in_units(cov_i, r), rs.clip_psd_in_units(cov_j, r)
            out.append(_Corner(i, j, tag, cov_i, cov_j, psd_i, psd_j, spread))
    return out


def _members(
    model: GaussianQueryModel, parts: list[_Corner], beta: float, noise_cov: np.ndarray
) -> GaussianQueryModel:
    """The worst members for ``noise_cov``: each corner's gap moved to its upper bound.

    Every (pair, corner) at once (hundreds of pairs): the arithmetic of
    one member at a time (:func:`_worst_shift`), on stacks (:func:`_worst_shift_stack`)."""
    cs = confidence_set(model, beta=beta)
    noise_cov = (noise_cov + noise_cov.T) / 2
    pi = np.array([part.i for part in parts], dtype=int)
    pj = np.array([part.j for part in parts], dtype=int)
    cov_i = np.stack([part.cov_i for part in parts])
    cov_j = np.stack([part.cov_j for part in parts])
    spread = np.stack([part.spread for part in parts])
    r = rs.unit_coordinates(model.covariances, model.means)  # decompositions at unit spread
    metric = rs.inv_sqrt_in_units((cov_i + cov_j) / 2 + noise_cov, r)
    gap = model.means[pi] - model.means[pj]
    shift = rs._worst_shift_stack(gap, metric, spread, cs.gap_z)
    k, m = len(parts), model.dim
    means = np.empty((k, 2, m))
    means[:, 0] = model.means[pi] + shift
    means[:, 1] = model.means[pj]
    covs = np.stack([np.stack([part.psd_i, part.psd_j]) for part in parts])
    labels = []
    for part in parts:
        li, lj = str(model.labels[part.i]), str(model.labels[part.j])
        labels.extend([f"{li}[var {part.tag}; gap+]", f"{lj}[var {part.tag}]"])
    return GaussianQueryModel(
        means.reshape(2 * k, m),
        covs.reshape(2 * k, m, m),
        [(2 * t, 2 * t + 1) for t in range(k)],
        labels=[f"#{t}:{lab}" for t, lab in enumerate(labels)],
        statistics=model.statistics,
        fitted=model.fitted,
    )


def marginal(model: GaussianQueryModel, index: np.ndarray) -> GaussianQueryModel:
    """The model of the statistics ``index`` only, with the uncertainty of their moments
    (the marginal of every law above: the same strata, the sub-matrices)."""
    idx = np.asarray(index, dtype=int)
    unc = model.uncertainty
    sub = None if unc is None else unc.restrict(idx)
    # Ψ by label: index pairs would be read as labels where the labels are numbers (a mean
    # secret's values), pairing the wrong hypotheses or dropping a pair.
    return GaussianQueryModel(
        model.means[:, idx],
        model.covariances[:, idx][:, :, idx],
        [(model.labels[i], model.labels[j]) for i, j in model.pairs],
        labels=model.labels,
        statistics=None if model.statistics is None else [model.statistics[k] for k in idx],
        fitted=model.fitted,
        uncertainty=sub,
    )


def population_premise(
    model: Any, gm: GaussianQueryModel, *, beta: float | None
) -> Assumption | None:
    """The premise about the population that the guarantee rests on, in words.

    ``None`` for a model given directly as Gaussian (no modelling table: nothing is said
    about a population).
    """
    declared = getattr(model, "population", None)
    if gm.uncertainty is None and declared is None:
        return None
    if gm.uncertainty is None:
        if declared:
            return Assumption(
                "population",
                "the modelling table is the whole population the protected datasets are "
                "drawn from (declared: population = true)",
                None,
                "the moments are exact for that table (finite-population correction taken "
                "against it); if the table is only a sample of the population, the "
                "guarantee is not known to hold for it",
            )
        return Assumption(
            "population",
            "the modelling table's moments equal the population's",
            None,
            "the sampling uncertainty of these moments is not quantified (non-linear "
            "statistics modelled with bootstrap = none): the guarantee holds on the fitted "
            "model; check it on the data (distpriv.attacks.verify_on_data), or keep the "
            "default bootstrap layer (distpriv.model_query's bootstrap)",
        )
    if isinstance(gm.uncertainty, BootstrapUncertainty):
        from .bootstrap import bootstrap_premise

        return bootstrap_premise(gm, beta=beta)
    if beta is None:
        return Assumption(
            "population",
            "the modelling table's moments equal the population's (beta = none: the "
            "sampling uncertainty of the moments was not covered)",
            None,
            "the moments are estimated from the modelling table's strata; the guarantee "
            "holds on the fitted model, with no stated confidence for the population",
        )
    cs = confidence_set(gm, beta=beta)
    if (tight := tight_premise(gm, cs, beta, selected_set())) is not None:
        return tight
    if cs.method == "joint":
        return Assumption(
            "population",
            f"with probability at least {1 - beta:g} over the draw of the modelling table "
            "(strata sampled at random from the population the protected datasets come "
            "from), the guarantee holds for that population's Gaussian model: for every "
            "pair of Psi, delta at the published noise is at most that of the worst member "
            "of a joint confidence set in the mean gap and the strata's variances",
            None,
            f"{gm.uncertainty.method}; per pair, the mean gap within {cs.gap_z:.3g} error "
            "sd of its estimate (an ellipsoid) and every stratum's variance of every "
            f"statistic within {cs.z:.3g} sd of its log (a box, each statistic on its own), "
            f"z one-sided at level 1 - {beta:g}/{cs.pairs} per pair (Bonferroni over the "
            f"{cs.pairs} pair(s) of Psi); valid for delta linearised in these (delta "
            "method: the sd of the scalar is at most the sum of its parts' sds, whatever "
            "their correlations); asymptotic (central-limit) laws; worst member searched "
            "by optimisation for the noise and epsilon, checked for the final noise; the "
            "ledger's composition uses the same set (its members worst at the composed "
            "epsilon)",
        )
    return Assumption(
        "population",
        f"with probability at least {1 - beta:g} over the draw of the modelling table "
        "(strata sampled at random from the population the protected datasets come "
        "from), the guarantee holds for that population's Gaussian model: the noise meets "
        "(epsilon, delta) with the mean gaps at their upper confidence bound and the "
        "covariances at the corners of their confidence box",
        None,
        # No stratum size or factor here: this text is public, and both are data-derived
        # (the curator's PRIVATE diagnostics carry the model with its strata).
        f"{gm.uncertainty.method}; mean gaps: upper confidence bound on their distance "
        f"in the output metric (observed distance + {cs.gap_z:.3g} times the largest "
        f"error sd, level {1 - beta / 2:g} for all {cs.pairs} pair(s) of Psi at once); "
        f"variances within their confidence factors (z = {cs.z:.3g}, Bonferroni, level "
        f"{1 - beta / 2:g}); asymptotic (central-limit) laws; worst members searched "
        "among the corners, checked for the final noise; the ledger's composition uses "
        "the same set",
    )
