"""How well a data-built query model's moments are known: the sampling uncertainty of the
modelling table's estimates (:class:`MomentUncertainty`, asymptotic) or its bootstrap
(:class:`BootstrapUncertainty`). The population layer (:mod:`distpriv.population`) turns it
into the confidence set every calibration is checked on; the query models
(:mod:`distpriv.querymodel`) carry it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ParameterError, ParameterTypeError
from .util.validation import check_array, readonly

__all__ = ["BootstrapUncertainty", "MomentUncertainty"]


@dataclass(frozen=True, init=False)
class MomentUncertainty:
    """The sampling uncertainty of a data-built model's moments.

    A model built from a modelling table that is a *sample* of the population estimates,
    for each stratum s of the table (rows satisfying / not satisfying the secret predicate),
    the mean and covariance of the per-row contribution to the statistics. Under θ a
    dataset takes w_θs rows from stratum s, so

        μ_θ = Σ_s w_θs m_s,    Σ_θ = Σ_s w_θs C_s,

    with m_s, C_s the per-row mean and covariance in the units of the statistics (a mean
    statistic's feature already divided by n). The estimates m̂_s, Ĉ_s come from N_s rows;
    their asymptotic (central-limit) laws are m̂_s ≈ N(m_s, C_s / N_s), independent across
    strata, and the relative error of Ĉ_s in a direction u has variance (κ_u − 1)/N_s with
    κ_u the kurtosis of the row feature along u. This object stores what a robust
    calibration needs to bound both (:mod:`distpriv.population.confidence`).

    Parameters
    ----------
    stratum_sizes : sequence of int, length S
        N_s, rows of each stratum in the modelling table (≥ 2).
    weights : array_like, shape (k, S)
        w_θs, rows of a protected dataset taken from stratum s under θ.
    row_covariances : array_like, shape (S, m, m)
        Ĉ_s (unbiased, divisor N_s − 1).
    kurtosis : array_like, shape (S, m)
        Kurtosis E[(x − m)⁴]/Var² of each statistic's row feature per stratum (3 for a
        Gaussian; 0 where the feature is constant).
    method : str
        How the uncertainty is expressed, for the guarantee's premise.
    shape_correlation : array_like, shape (S, 2m, 2m), optional
        Per stratum, the correlation matrix of the standardised row feature and its
        standardised square, (y/σ, (y²/σ² − 1)/√(κ − 1)) (rows and columns of a constant
        feature, or of a square that is constant, 0): the asymptotic correlations of the
        stratum's mean with its log-variances and between its log-variances (third and
        fourth cross moments). ``None`` where the model's path did not compute them; the
        "tight" population set then bounds those correlations instead
        (:mod:`distpriv.population._corr`).
    shared_strata : bool, optional
        The strata are virtual and their row covariances are *one* estimate (a mean
        secret's two tilts of the same rows, :mod:`distpriv.modeling.model_mean`): Ĉ_s is
        the same matrix for every s and its error is one error, so a population whose
        strata's variances err differently is not one the data allow (the population
        sets move every stratum's variances together). Default ``False``: independent
        strata of distinct rows.
    """

    stratum_sizes: tuple[int, ...]
    weights: np.ndarray
    row_covariances: np.ndarray
    kurtosis: np.ndarray
    method: str
    shape_correlation: np.ndarray | None
    shared_strata: bool

    def __init__(
        self,
        stratum_sizes: Sequence[int],
        weights: Any,
        row_covariances: Any,
        kurtosis: Any,
        *,
        method: str = "asymptotic (central limit) covariance of the stratum moments",
        shape_correlation: Any = None,
        shared_strata: bool = False,
    ) -> None:
        sizes = tuple(int(n) for n in stratum_sizes)
        if len(sizes) < 1 or any(n < 2 for n in sizes):
            raise ParameterError(f"stratum_sizes must be integers >= 2, got {sizes!r}")
        w = check_array(weights, "weights", ndim=2)
        if w.shape[1] != len(sizes) or np.any(w < 0):
            raise ParameterError(
                f"weights must be non-negative with shape (k, {len(sizes)}), got {w.shape}"
            )
        cov = check_array(row_covariances, "row_covariances", ndim=3)
        if cov.shape[0] != len(sizes) or cov.shape[1] != cov.shape[2]:
            raise ParameterError(
                f"row_covariances must have shape ({len(sizes)}, m, m), got {cov.shape}"
            )
        kurt = check_array(kurtosis, "kurtosis", ndim=2)
        if kurt.shape != cov.shape[:2] or np.any(kurt < 0):
            raise ParameterError(
                f"kurtosis must be non-negative with shape {cov.shape[:2]}, got {kurt.shape}"
            )
        if not isinstance(method, str):
            raise ParameterTypeError(f"method must be a string, got {method!r}")
        shape = None
        if shape_correlation is not None:
            shape = check_array(shape_correlation, "shape_correlation", ndim=3)
            want = (len(sizes), 2 * cov.shape[1], 2 * cov.shape[1])
            if shape.shape != want:
                raise ParameterError(f"shape_correlation must have shape {want}, got {shape.shape}")
            shape = readonly((shape + shape.transpose(0, 2, 1)) / 2)
        object.__setattr__(self, "shape_correlation", shape)
        object.__setattr__(self, "stratum_sizes", sizes)
        object.__setattr__(self, "weights", readonly(w))
        object.__setattr__(self, "row_covariances", readonly((cov + cov.transpose(0, 2, 1)) / 2))
        object.__setattr__(self, "kurtosis", readonly(kurt))
        object.__setattr__(self, "method", method)
        if not isinstance(shared_strata, bool):
            raise ParameterTypeError(f"shared_strata must be a bool, got {shared_strata!r}")
        if shared_strata and not np.allclose(cov, cov[:1], rtol=1e-12, atol=0.0):
            raise ParameterError(
                "shared_strata=True needs one row covariance for every stratum, got "
                f"{len(sizes)} different ones"
            )
        object.__setattr__(self, "shared_strata", shared_strata)

    @property
    def dim(self) -> int:
        """Number m of statistics."""
        return int(self.row_covariances.shape[1])

    def restrict(self, index: Any) -> MomentUncertainty:
        """The uncertainty of the statistics ``index`` only (the same strata, sub-matrices)."""
        idx = np.asarray(index, dtype=int)
        shape = self.shape_correlation
        if shape is not None:
            both = np.concatenate([idx, idx + self.dim])
            shape = shape[:, both][:, :, both]
        return MomentUncertainty(
            self.stratum_sizes,
            self.weights,
            self.row_covariances[:, idx][:, :, idx],
            self.kurtosis[:, idx],
            method=self.method,
            shape_correlation=shape,
            shared_strata=self.shared_strata,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            "method": self.method,
            "stratum_sizes": list(self.stratum_sizes),
            "weights": self.weights.tolist(),
            "row_covariances": self.row_covariances.tolist(),
            "kurtosis": self.kurtosis.tolist(),
            # Only when computed: the dicts (and fingerprints) of models without it unchanged.
            **(
                {}
                if self.shape_correlation is None
                else {"shape_correlation": self.shape_correlation.tolist()}
            ),
            **({"shared_strata": True} if self.shared_strata else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MomentUncertainty:
        """Inverse of :meth:`to_dict`."""
        return cls(
            data["stratum_sizes"],
            data["weights"],
            data["row_covariances"],
            data["kurtosis"],
            method=data["method"],
            shape_correlation=data.get("shape_correlation"),
            shared_strata=bool(data.get("shared_strata", False)),
        )


@dataclass(frozen=True, init=False)
class BootstrapUncertainty:
    """The sampling uncertainty of a Monte Carlo model's moments, from a bootstrap.

    For statistics that are not sums of per-row features (medians, quantiles, a fitted
    regression's coefficients), the moments of f_θ do not decompose over the strata, so
    their uncertainty is estimated by a stratified bootstrap of the modelling table
    (:func:`distpriv.modeling.bootstrap.bootstrap_draws`): B resamples of the table
    (rows drawn with replacement within each stratum), the Monte Carlo model rebuilt on
    each with the same draws (index arrays into the resample). Its spread (the table's
    error and the draws') is what :mod:`distpriv.population.confidence`
    turns into a (1 − β) confidence set (:mod:`distpriv.population.bootstrap`).

    Parameters
    ----------
    gap_covariances : array_like, shape (P, m, m)
        For each pair (i, j) of Ψ, in the model's pair order, the covariance of the error
        of the fitted mean gap μ̂ᵢ − μ̂ⱼ: the bootstrap covariance of the members' gaps.
    log_variance_sd : array_like, shape (P, 2, m)
        For each pair (i, j) of Ψ and statistic l: the standard error of the *level*
        (log Σ̂ᵢ,ll + log Σ̂ⱼ,ll)/2 and of the *log ratio* log Σ̂ᵢ,ll − log Σ̂ⱼ,ll — the
        members' spread. Both θs of a pair are estimated from the same table, so their
        variances move together: the ratio is known much better than each variance.
    resamples : int
        B, the bootstrap resamples (the set's quantiles are Student t with B − 1 degrees
        of freedom: the spread is itself estimated from B members).
    draws : int
        Monte Carlo datasets per θ of each bootstrap member.
    method : str
        How the uncertainty is expressed, for the guarantee's premise.
    """

    gap_covariances: np.ndarray
    log_variance_sd: np.ndarray
    resamples: int
    draws: int
    method: str

    def __init__(
        self,
        gap_covariances: Any,
        log_variance_sd: Any,
        *,
        resamples: int,
        draws: int,
        method: str = "stratified bootstrap of the modelling table",
    ) -> None:
        gaps = check_array(gap_covariances, "gap_covariances", ndim=3)
        if gaps.shape[1] != gaps.shape[2]:
            raise ParameterError(f"gap_covariances must have shape (P, m, m), got {gaps.shape}")
        sd = check_array(log_variance_sd, "log_variance_sd", ndim=3)
        if sd.shape != (gaps.shape[0], 2, gaps.shape[1]) or np.any(sd < 0):
            raise ParameterError(
                f"log_variance_sd must be non-negative with shape ({gaps.shape[0]}, 2, "
                f"{gaps.shape[1]}), got {sd.shape}"
            )
        for name, value in (("resamples", resamples), ("draws", draws)):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 2:
                raise ParameterError(f"{name} must be an integer >= 2, got {value!r}")
        if not isinstance(method, str):
            raise ParameterTypeError(f"method must be a string, got {method!r}")
        object.__setattr__(self, "gap_covariances", readonly((gaps + gaps.transpose(0, 2, 1)) / 2))
        object.__setattr__(self, "log_variance_sd", readonly(sd))
        object.__setattr__(self, "resamples", int(resamples))
        object.__setattr__(self, "draws", int(draws))
        object.__setattr__(self, "method", method)

    @property
    def dim(self) -> int:
        """Number m of statistics."""
        return int(self.gap_covariances.shape[1])

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            "type": "bootstrap",
            "method": self.method,
            "gap_covariances": self.gap_covariances.tolist(),
            "log_variance_sd": self.log_variance_sd.tolist(),
            "resamples": self.resamples,
            "draws": self.draws,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BootstrapUncertainty:
        """Inverse of :meth:`to_dict`."""
        return cls(
            data["gap_covariances"],
            data["log_variance_sd"],
            resamples=data["resamples"],
            draws=data["draws"],
            method=data["method"],
        )

    def restrict(self, index: Any) -> BootstrapUncertainty:
        """The uncertainty of the statistics ``index`` only (the marginal laws)."""
        idx = np.asarray(index, dtype=int)
        return BootstrapUncertainty(
            self.gap_covariances[:, idx][:, :, idx],
            self.log_variance_sd[:, :, idx],
            resamples=self.resamples,
            draws=self.draws,
            method=self.method,
        )
