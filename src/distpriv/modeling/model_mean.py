"""The query model of a mean secret: the law of the statistics given the dataset's mean.

Premise (docs/guarantees.md, "Mean secrets"): a protected dataset is n rows drawn i.i.d.
from the population (or, with ``population=True``, without replacement from the table),
and θ_v is that draw *conditioned* on the dataset's mean of the sensitive expression s
being v (Zhang, Ohrimenko & Cummings 2022, §3, Def. 4). For linear statistics
F = Σ_r x_r (means are sums scaled by 1/n) the per-row vector (x, s) has mean (μ_F, μ_S)
and covariance [[Σ_FF, Σ_FS], [Σ_SF, σ²]]; by the multivariate central limit theorem the
sums (ΣF, Σs) are jointly Gaussian, and the Gaussian conditioning formula (e.g. Anderson,
*An Introduction to Multivariate Statistical Analysis*, Thm 2.5.1) gives

    F | s̄ = v  ~  N( n μ_F + n b (v − μ_S),  n Σ_e ),   b = Σ_FS / σ²,
    Σ_e = Σ_FF − b bᵀ σ²  (the covariance of the residual e = x − μ_F − b (s − μ_S)).

This is exact when the records are Gaussian — the case of Zhang et al.'s APGM closed forms
(``distpriv.experiments.zhang2022`` / ``datasets.hospital``) — and an approximation
otherwise, whose quality on real tables is measured against Monte Carlo of real subsets
whose mean falls at each value (tests/modeling/test_mean_reference.py). Every θ has the
same covariance, so the pairs differ by a translation along b.

The population layer (modelling table = a sample of N rows of the population): the mean
gap of a pair is n b (vᵢ − vⱼ), estimated with the error n (b̂ − b)(vᵢ − vⱼ), where
b̂ − b ≈ N(0, D / N), D = E[(s − μ_S)² e eᵀ] / σ⁴ (the heteroscedasticity-consistent
"sandwich" law of a least-squares slope, White 1980, Thm 1), and Σ_e is known up to the
kurtosis factor of :class:`~distpriv.querymodel.MomentUncertainty`. :func:`_uncertainty`
writes that as a MomentUncertainty whose gap ellipsoids *contain* these (an equivalent,
slightly larger set), so :mod:`distpriv.central.robust` covers it with 1 − β unchanged.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_positive_int
from ..errors import AssumptionWarning, ParameterError
from ..querymodel import MomentUncertainty
from .model import DataQueryModel, _facts_thunk
from .model_diagnostics import _diagnostics, _warn_non_gaussian
from .queries import Query
from .secret_mean import MeanSecret
from .tables import Table

__all__ = ["MeanFit", "mean_model"]

# A value further than this many standard errors of the dataset mean from the population
# mean is a rare event for the datasets: the linear conditioning extrapolates there.
_TAIL_Z = 4.0
# The largest "stratum size" of the encoded uncertainty (an exactly known slope).
_MAX_SIZE = 10**15

_UNCERTAINTY_METHOD = (
    "asymptotic (central limit) law of the least-squares slope of each statistic's row "
    "feature on the secret's expression (heteroscedasticity-consistent) and of the residual "
    "covariance, from the modelling table; written as two equal virtual strata whose "
    "confidence set contains that of the slope (docs/guarantees.md, Mean secrets)"
)


@dataclass(frozen=True)
class MeanFit:
    """The moments a mean-secret model is built from (curator-private: data-derived).

    Attributes
    ----------
    rows : int
        N, rows of the modelling table used.
    mean_s, sd_s : float
        Mean and standard deviation of the sensitive expression over those rows.
    range_s : (float, float)
        Its smallest and largest value.
    slope : ndarray, shape (m,)
        b, the per-row regression coefficient of each statistic's feature on s (in the
        statistics' units).
    residual_cov : ndarray, shape (m, m)
        Σ_e, per row.
    """

    rows: int
    mean_s: float
    sd_s: float
    range_s: tuple[float, float]
    slope: np.ndarray
    residual_cov: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            "rows": self.rows,
            "mean": self.mean_s,
            "sd": self.sd_s,
            "range": list(self.range_s),
            "slope": self.slope.tolist(),
            "residual_covariance": self.residual_cov.tolist(),
        }


def _features(table: Table, q: Query, secret: MeanSecret, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-row features of the statistics (scaled to their units) and of the secret."""
    x = q.row_features(table)
    x = x * np.array([1.0 / n if s.scale == "mean" else 1.0 for s in q.statistics])
    s = table.row_values([secret.parsed.sql()], [f"secret expression ({secret.expression})"])[:, 0]
    return x, s


def fit_mean(x: np.ndarray, s: np.ndarray, secret: MeanSecret) -> MeanFit:
    """Moments of (x, s) and the checks on the secret's values (module docstring).

    Raises
    ------
    ParameterError
        Fewer than 3 rows, a constant expression, or a value outside the open range of
        the expression on the table (no dataset can have that mean, or only the one made
        of extreme rows).
    """
    rows = int(s.shape[0])
    if rows < 3:
        raise ParameterError(f"the modelling table has {rows} row(s); a mean secret needs >= 3")
    lo, hi = float(s.min()), float(s.max())
    if hi <= lo:
        raise ParameterError(
            f"secret expression ({secret.expression}) is constant ({lo:g}) on the modelling "
            "table: its mean cannot take different values"
        )
    for v in secret.values:
        if not lo < v < hi:
            raise ParameterError(
                f"secret values: {v:g} is outside the range of {secret.expression} on the "
                f"modelling table ({lo:g} to {hi:g}, exclusive): no dataset has that mean"
            )
    mu_s = float(s.mean())
    sc = s - mu_s
    var_s = float(sc @ sc) / (rows - 1)
    xc = x - x.mean(axis=0)
    slope = (xc.T @ sc) / (rows - 1) / var_s
    resid = xc - np.outer(sc, slope)
    cov_e = resid.T @ resid / (rows - 1)
    return MeanFit(rows, mu_s, math.sqrt(var_s), (lo, hi), slope, (cov_e + cov_e.T) / 2)


def _shape(resid: np.ndarray, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Skewness and excess kurtosis of the sum of n i.i.d. residual rows (the cumulants of a
    sum add: κ₃ = n k₃, κ₄ = n k₄), per statistic, repeated for the k values."""
    c = resid - resid.mean(axis=0)
    var = np.mean(c**2, axis=0)
    ok = var > 1e-24 * np.maximum(np.max(np.abs(resid), axis=0), 1e-300) ** 2
    safe = np.where(ok, var, 1.0)
    skew = np.where(ok, np.mean(c**3, axis=0) / safe**1.5 / math.sqrt(n), 0.0)
    kurt = np.where(ok, (np.mean(c**4, axis=0) / safe**2 - 3.0) / n, 0.0)
    return np.tile(skew, (k, 1)), np.tile(kurt, (k, 1))


def _uncertainty(
    x: np.ndarray, s: np.ndarray, fit: MeanFit, secret: MeanSecret, n: int
) -> MomentUncertainty:
    """The model's moment uncertainty in the stratum form of
    :class:`~distpriv.querymodel.MomentUncertainty` (module docstring).

    Two virtual strata "lo" and "hi" with the per-row means at the smallest and largest
    value, equal covariances Σ̂_e and weights (n(1 − t_θ), n t_θ), t_θ = (v_θ − v_lo)/Δ:
    then Σ_s w_θs C_s = n Σ̂_e (the model's covariance) and a pair's gap error has the
    covariance 2 n² (tᵢ − tⱼ)² Σ̂_e / N', which contains the slope's
    n² (vᵢ − vⱼ)² D̂ / N in the PSD order when N' ≤ 2N / (Δ² λ_max(Σ̂_e^(−1/2) D̂ Σ̂_e^(−1/2)))
    (N' is the largest such integer). The variance factors exp(±z √((κ − 1)/N')) of the
    robust calibration then equal the residual's exp(±z √((κ_e − 1)/N)) with
    κ = 1 + (κ_e − 1) N'/N (κ_e the residual's kurtosis, 0 where it is constant).
    """
    rows = fit.rows
    vals = np.asarray(secret.values)
    v_lo, v_hi = float(vals.min()), float(vals.max())
    span = v_hi - v_lo
    sc = s - fit.mean_s
    resid = (x - x.mean(axis=0)) - np.outer(sc, fit.slope)
    var_s = fit.sd_s**2
    sandwich = (resid * (sc**2)[:, None]).T @ resid / rows / var_s**2
    w, v = np.linalg.eigh(fit.residual_cov)
    keep = w > 1e-12 * max(float(w.max()), 1e-300)
    lam = 0.0
    if np.any(keep):
        root = v[:, keep] / np.sqrt(w[keep])
        lam = float(np.linalg.eigvalsh(root.T @ sandwich @ root).max())
    size = _MAX_SIZE if lam <= 0 else min(_MAX_SIZE, math.floor(2 * rows / (span**2 * lam)))
    if size < 2:
        raise ParameterError(
            f"the modelling table ({rows} rows) is too small to estimate how the statistics "
            f"move with the average of {secret.expression}; use a larger modelling table"
        )
    c = resid - resid.mean(axis=0)
    var = np.mean(c**2, axis=0)
    ok = var > 1e-24 * np.maximum(np.max(np.abs(resid), axis=0), 1e-300) ** 2
    kappa = np.where(ok, np.mean(c**4, axis=0) / np.where(ok, var, 1.0) ** 2, 0.0)
    kappa = np.where(ok, 1.0 + np.clip(kappa - 1.0, 0.0, None) * (size / rows), 0.0)
    t = (vals - v_lo) / span
    return MomentUncertainty(
        (size, size),
        np.stack([n * (1 - t), n * t], axis=1),
        np.stack([fit.residual_cov, fit.residual_cov]),
        np.stack([kappa, kappa]),
        method=_UNCERTAINTY_METHOD,
    )


def mean_model(
    table: Table,
    q: Query,
    secret: MeanSecret,
    *,
    subset_size: int,
    method: str,
    missing: str,
    population: bool,
) -> DataQueryModel:
    """f_θ for each value of a :class:`MeanSecret` (the model_query branch of the kind).

    Parameters
    ----------
    table : Table
        The modelling table (a sample of the population, or the population).
    q : Query
        Linear statistics (sums, counts, averages of row expressions).
    secret : MeanSecret
    subset_size : int
        n, rows of a protected dataset.
    method : str
        Only ``"analytic"`` (the conditioned moments are closed forms).
    missing : {"error", "drop"}
    population : bool
        As for :func:`distpriv.model_query`: ``False`` — rows i.i.d. from the population
        the table samples, with the moments' uncertainty; ``True`` — drawn without
        replacement from the table (covariance × (N − n)/(N − 1)), moments exact.

    Returns
    -------
    DataQueryModel
        Labels = the secret's values, one shared covariance; ``counts`` = (n, …, n) and
        ``stratum_sizes`` = (N, 0): every row is in one stratum. ``diagnostics["mean_fit"]``
        holds the fitted moments (:class:`MeanFit`, curator-private).

    Warns
    -----
    AssumptionWarning
        A value more than four standard errors of the dataset mean from the table's mean
        (the conditioning extrapolates to rare datasets), or non-Gaussian residual sums.
    """
    n = check_positive_int(subset_size, "subset_size")
    if method != "analytic":
        raise ParameterError(
            f"method={method!r}: a mean secret's model is analytic only (central-limit "
            "conditioning); use method='analytic'"
        )
    if not q.is_linear:
        bad = next(s for s in q.statistics if not s.linear)
        raise ParameterError(
            f"a mean secret needs linear statistics (sum, count, count_if, avg of a row "
            f"expression); statistic {bad.name!r} ({bad.expression}) is not"
        )
    table, missing_report = table.complete(
        q.columns | secret.columns, missing=missing, what="modelling data"
    )
    if population and n > table.n_rows:
        raise ParameterError(
            f"subset_size={n} is larger than the population table ({table.n_rows} rows)"
        )
    x, s = _features(table, q, secret, n)
    fit = fit_mean(x, s, secret)
    vals = np.asarray(secret.values)
    fpc = (fit.rows - n) / (fit.rows - 1) if population else 1.0
    means = n * (x.mean(axis=0)[None, :] + np.outer(vals - fit.mean_s, fit.slope))
    k = len(secret.values)
    covs = np.broadcast_to(n * fpc * fit.residual_cov, (k, *fit.residual_cov.shape)).copy()
    resid = (x - x.mean(axis=0)) - np.outer(s - fit.mean_s, fit.slope)
    pairs_idx = tuple((secret.values.index(a), secret.values.index(b)) for a, b in secret.pairs)
    diagnostics = _diagnostics(means, covs, None, pairs_idx, shape=_shape(resid, n, k))
    diagnostics["missing"] = missing_report.to_dict()
    diagnostics["engine"] = table.dialect
    diagnostics["mean_fit"] = fit.to_dict()
    z = np.abs(vals - fit.mean_s) / (fit.sd_s / math.sqrt(n))
    diagnostics["value_z"] = z
    if np.any(z > _TAIL_Z):
        worst = int(np.argmax(z))
        warnings.warn(
            f"the secret value {secret.values[worst]:g} is {z[worst]:.1f} standard errors of "
            f"a {n}-row dataset's average of {secret.expression} from the modelling table's "
            "average: datasets with that mean are rare and the central-limit conditioning "
            "extrapolates there (the guarantee reports the Gaussian model as unverified)",
            AssumptionWarning,
            stacklevel=3,
        )
    _warn_non_gaussian(diagnostics, secret.values, q.names)
    uncertainty = None if population else _uncertainty(x, s, fit, secret, n)
    how = (
        "without replacement from the table (declared the whole population; "
        "finite-population correction)"
        if population
        else "i.i.d. from the population the table samples"
    )
    return DataQueryModel(
        means,
        covs,
        secret=secret,  # type: ignore[arg-type]
        query=q,
        samples=None,
        method="analytic",
        subset_size=n,
        counts=tuple(n for _ in secret.values),
        stratum_sizes=(fit.rows, 0),
        diagnostics=diagnostics,
        fitted=(
            f"central-limit conditioning of the statistics of {n}-row datasets drawn {how} on "
            f"their average of {secret.expression} (joint Gaussian sums; exact for Gaussian "
            "records; Gaussian shape assumed)"
        ),
        uncertainty=uncertainty,
        population=population,
        facts=_facts_thunk(table, q, n, missing),
    )
