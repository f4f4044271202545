"""The (1 − β) population set of a Monte Carlo model with a bootstrap uncertainty.

:mod:`distpriv.population.confidence` covers the sampling uncertainty of a model whose statistics
are sums of per-row features with central-limit laws of the strata moments. A statistic
that is not linear (a median, a quantile, a fitted regression's coefficients) has no such
decomposition; its model carries a :class:`~distpriv.moment_uncertainty.BootstrapUncertainty`
instead (:func:`distpriv.modeling.bootstrap.bootstrap_draws`): for each pair of Ψ the
covariance V of the error of the fitted mean gap, and for each θ and statistic the standard
error of the log variance — both from a stratified bootstrap of the modelling table
(Efron & Tibshirani 1993, ch. 6 and 13), whose members redraw the Monte Carlo datasets
too, so that their spread counts both errors of the fitted model. The set has the same
coverage target and the same shape as the linear one:

* **mean gaps** (β/2, every pair of Ψ at once): the distance of the true gap in the output
  metric is at most the observed one plus z‖M V^(1/2)‖₂ (:func:`robust.gap_bound`), with z
  the least of the Bonferroni quantile over the P pairs and the Scheffé (Hotelling) radius
  over every direction. The standard errors are themselves estimated from B resamples,
  so the quantiles are Student t with B − 1 degrees of freedom and the Scheffé radius is
  √(m (B − 1)/(B − m) F_{m, B−m}(1 − β/2)) (Hotelling's T²) instead of the normal and
  χ² ones — wider for a small B;
* **variances** (β/2, Bonferroni over the P pairs, the m statistics and the two
  quantities): for a pair (i, j) and statistic l, the level (log Σᵢ,ll + log Σⱼ,ll)/2 is
  known up to ±z s_level and the log ratio log Σᵢ,ll − log Σⱼ,ll up to ±z s_ratio (the
  bootstrap standard errors). Both θs of a pair are estimated from the same table, so
  their variances move together: the ratio is known much better than either variance, and
  treating them as independent would invent a covariance gap the data rule out. A pair's
  members take the level and the ratio at their low or high ends, every statistic at
  once (4 corners per pair: the level of Σ_θ and the covariance gap both move).

Calibration then covers, for the noise being checked, every pair's corners with the gap
at its upper bound, exactly as the linear set (:func:`population_model`, re-checked for the
final noise). The premise is bootstrap consistency of the Monte Carlo model's moments
(smooth functionals of the population's strata: the mean and covariance of a median or of
a logistic regression's coefficients over n-row datasets are), a modelling table drawn at
random from the population's strata, and the Gaussian shape of the members (the same
premise as the linear layer). The coverage is measured on Adult and the RAND health
insurance experiment (tests/central/test_bootstrap_coverage.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

# scipy.special, not scipy.stats: stdtrit is Student's t quantile, fdtri
# the F quantile.
from scipy.special import fdtri, stdtrit

from ..guarantees import Assumption
from ..moment_uncertainty import BootstrapUncertainty
from ..querymodel import GaussianQueryModel

__all__ = [
    "BootstrapConfidenceSet",
    "bootstrap_confidence_set",
    "bootstrap_population_model",
    "bootstrap_premise",
]


@dataclass(frozen=True)
class BootstrapConfidenceSet:
    """The (1 − β) confidence statements of a bootstrap-uncertainty model.

    Attributes
    ----------
    beta : float
    gap_z : float
        Multiplier of the gap's upper confidence bound (Student t Bonferroni over the P
        pairs, or the Hotelling radius, whichever is less).
    pairs : int
        P, the pairs of Ψ covered at once.
    z : float
        Quantile of the variance bounds (Student t, two-sided, Bonferroni over 2·P·m).
    log_shifts : ndarray, shape (P, 2, m)
        z times the standard errors of the level and the log ratio of each pair's
        variances.
    resamples : int
        B.
    """

    beta: float
    gap_z: float
    pairs: int
    z: float
    log_shifts: np.ndarray
    resamples: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            "type": "bootstrap",
            "beta": self.beta,
            "gap_z": self.gap_z,
            "pairs": self.pairs,
            "z": self.z,
            "log_shifts": self.log_shifts.tolist(),
            "resamples": self.resamples,
        }


def _unc(model: GaussianQueryModel) -> BootstrapUncertainty:
    unc = model.uncertainty
    if not isinstance(unc, BootstrapUncertainty):  # pragma: no cover - callers dispatch
        raise ValueError("model has no bootstrap uncertainty")
    return unc


def bootstrap_confidence_set(model: GaussianQueryModel, *, beta: float) -> BootstrapConfidenceSet:
    """The confidence statements of the module docstring for ``model.uncertainty``."""
    unc = _unc(model)
    m = unc.dim
    n_pairs = max(len(model.pairs), 1)
    dof = unc.resamples - 1
    z = float(stdtrit(dof, 1.0 - beta / (8.0 * n_pairs * m)))
    gap_z = float(stdtrit(dof, 1.0 - beta / (2.0 * n_pairs)))
    if unc.resamples > m:
        # Hotelling's T² radius: every direction (and so every output metric) at once.
        f = float(fdtri(m, unc.resamples - m, 1.0 - beta / 2))
        gap_z = min(gap_z, math.sqrt(m * dof / (unc.resamples - m) * f))
    shifts = z * unc.log_variance_sd
    return BootstrapConfidenceSet(beta, gap_z, n_pairs, z, shifts, unc.resamples)


def bootstrap_population_model(
    model: GaussianQueryModel, *, beta: float, noise_cov: np.ndarray
) -> GaussianQueryModel:
    """The augmented model whose pairs are the worst members of the bootstrap set.

    Parameters
    ----------
    model : GaussianQueryModel
        With a :class:`~distpriv.moment_uncertainty.BootstrapUncertainty`.
    beta : float
    noise_cov : ndarray, shape (m, m)
        The noise the mean gaps are made worst for.

    Returns
    -------
    GaussianQueryModel
        For every pair of Ψ (in order) and each of its 4 variance corners, the pair with
        that corner's covariances and the mean gap at its upper confidence bound; the
        labels say which member each hypothesis is.
    """
    from ._stack import (
        _worst_shift,
        clip_psd_in_units,
        inv_sqrt_in_units,
        sqrt_in_units,
        unit_coordinates,
    )

    unc = _unc(model)
    cs = bootstrap_confidence_set(model, beta=beta)
    noise_cov = (noise_cov + noise_cov.T) / 2
    r = unit_coordinates(model.covariances, model.means)  # decompositions at unit spread
    means, covs, labels, pairs = [], [], [], []

    def add(mu: np.ndarray, cov: np.ndarray, label: str) -> int:
        means.append(mu)
        covs.append(clip_psd_in_units((cov + cov.T) / 2, r))
        labels.append(label)
        return len(means) - 1

    for p, (i, j) in enumerate(model.pairs):
        li, lj = str(model.labels[i]), str(model.labels[j])
        gap = model.means[i] - model.means[j]
        spread = sqrt_in_units(unc.gap_covariances[p], r)
        level, ratio = cs.log_shifts[p]
        for ci in (0, 1):
            for cj in (0, 1):
                # log variance of i: level ± ratio/2, of j: level ∓ ratio/2; Λ its root.
                lev, rat = (level if ci else -level), (ratio if cj else -ratio)
                lam_i = np.exp((lev + rat / 2) / 2)
                lam_j = np.exp((lev - rat / 2) / 2)
                cov_i = lam_i[:, None] * model.covariances[i] * lam_i[None, :]
                cov_j = lam_j[:, None] * model.covariances[j] * lam_j[None, :]
                metric = inv_sqrt_in_units((cov_i + cov_j) / 2 + noise_cov, r)
                shift = _worst_shift(gap, metric, spread, cs.gap_z)
                tag = f"level {'hi' if ci else 'lo'}, ratio {'hi' if cj else 'lo'}"
                pairs.append(
                    (
                        add(model.means[i] + shift, cov_i, f"{li}[var {tag}; gap+]"),
                        add(model.means[j], cov_j, f"{lj}[var {tag}]"),
                    )
                )
    return GaussianQueryModel(
        np.stack(means),
        np.stack(covs),
        pairs,
        labels=[f"#{t}:{lab}" for t, lab in enumerate(labels)],
        statistics=model.statistics,
        fitted=model.fitted,
    )


def bootstrap_premise(gm: GaussianQueryModel, *, beta: float | None) -> Assumption:
    """The population premise of a bootstrap-uncertainty model, in words (public text:
    no data-derived number)."""
    unc = _unc(gm)
    if beta is None:
        return Assumption(
            "population",
            "the modelling table's Monte Carlo model equals the population's (beta = none: "
            "the bootstrap uncertainty of the moments was not covered)",
            None,
            "the moments are estimated from the modelling table; the guarantee holds on the "
            "fitted model, with no stated confidence for the population",
        )
    cs = bootstrap_confidence_set(gm, beta=beta)
    return Assumption(
        "population",
        f"with probability at least {1 - beta:g} over the draw of the modelling table "
        "(strata sampled at random from the population the protected datasets come from; "
        "bootstrap consistency of the Monte Carlo model's moments), the guarantee holds "
        "for that population's Gaussian model: the noise meets (epsilon, delta) with the "
        "mean gaps at their upper confidence bound and the variances at the corners of "
        "their confidence box",
        None,
        f"{unc.method}: {unc.resamples} resamples of the table within each stratum, the "
        f"Monte Carlo model rebuilt on each with {unc.draws} draws per value (the same "
        "index arrays into every resample: the spread counts the table's error and the "
        f"draws'); mean gaps: upper bound observed distance + {cs.gap_z:.3g} "
        f"bootstrap standard errors (Student t / Hotelling, level {1 - beta / 2:g} for all "
        f"{cs.pairs} pair(s) of Psi at once); each pair's log variances: level and log "
        f"ratio within +-{cs.z:.3g} standard errors (Bonferroni, level {1 - beta / 2:g}); "
        "worst members among the corners, checked for the final noise",
    )
