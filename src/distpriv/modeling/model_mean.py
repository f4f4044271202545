"""The query model of a mean secret: the law of the statistics given the dataset's mean.

Premise (docs/guarantees.md, "Mean secrets"): a protected dataset is n rows drawn i.i.d.
from the population (or, with ``population=True``, without replacement from the table),
and θ_v is that draw *conditioned* on the dataset's mean of the sensitive expression s
being v (Zhang, Ohrimenko & Cummings 2022, §3, Def. 4).

The law given the mean is built by **exponential tilting** of the modelling rows (the
Gibbs conditioning principle: given that the mean of s over n i.i.d. rows is v, the rows
are asymptotically i.i.d. from the I-projection of the row law on {E[s] = v}, the tilt
w_r ∝ exp(λ s_r) with tilted mean v — Csiszár 1984, Ann. Probab. 12, Thm 4; Diaconis &
Freedman 1988, J. Theor. Probab. 1, Thm 1.3) followed by the Gaussian conditioning of the
jointly Gaussian sums (ΣF, Σs) under that tilt on Σs = n v (Anderson, *An Introduction to
Multivariate Statistical Analysis*, Thm 2.5.1). For linear statistics F = Σ_r x_r (means
are sums scaled by 1/n):

    F | s̄ = v  ~  N( n μ_λ,  n (Σ_FF,λ − b_λ b_λᵀ σ²_λ) ),   b_λ = Σ_Fs,λ / σ²_λ,

with μ_λ, Σ_λ the tilted mean and covariance of (x, s). For Gaussian records the tilt only
shifts the mean, μ_λ = μ_F + b (v − μ_S), and this is the exact conditional law — the case
of Zhang et al.'s APGM closed forms (``distpriv.experiments.zhang2022_apgm``); otherwise it
is the conditional limit law, whose quality on real tables is measured against Monte Carlo
of real subsets whose mean falls at each value (tests/modeling/test_mean_reference.py).
The covariance changes with v (heteroscedastic tables), so each θ has its own.

The population layer (the modelling table = N rows sampled from the population): each
θ's tilted mean is a smooth functional of the row law, with influence function
IF_v(x, s) = (e^{λs}/E e^{λs}) [(x − μ_λ) − b_λ (s − v)]; a pair's gap n(μ_λi − μ_λj) is
estimated with the asymptotic error N(0, n² Cov(IF_i − IF_j) / N) (the delta method, van
der Vaart, *Asymptotic Statistics*, Thm 20.8), and each θ's variances with the
kurtosis factor of :mod:`distpriv.population.confidence` at the tilt's effective sample size
1/Σ w_r². :func:`_uncertainty` writes these as a
:class:`~distpriv.moment_uncertainty.MomentUncertainty` whose confidence set contains them (an
equivalent, slightly larger set), so :mod:`distpriv.population.confidence` covers them with 1 − β.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import AssumptionWarning, ParameterError
from ..moment_uncertainty import MomentUncertainty
from ..util.roots import brentq  # scipy.optimize's, without its import cost
from ..util.validation import check_positive_int
from .data_model import DataQueryModel, ModelDesign, _facts_thunk
from .model_diagnostics import _diagnostics, _warn_non_gaussian
from .queries import Query
from .secret_mean import MeanSecret
from .tables import Table

__all__ = ["EventLabels", "MeanFit", "mean_model"]

# A value further than this many standard errors of the dataset mean from the population
# mean is a rare event for the datasets: the linear conditioning extrapolates there.
_TAIL_Z = 4.0
# The largest "stratum size" of the encoded uncertainty (an exactly known slope).
_MAX_SIZE = 10**15

_UNCERTAINTY_METHOD = (
    "asymptotic (delta method) law of the tilted means' gaps and of the conditioned "
    "variances, from the modelling table; written as two equal virtual strata whose "
    "confidence set contains it (docs/guarantees.md, Mean secrets)"
)


@dataclass(frozen=True)
class EventLabels:
    """How a mean secret's model is labelled when it models mean events at grid values."""

    #: The secret the model carries (its values and pairs are the grid secret's).
    secret: Any
    #: What the model's premise adds (how far the law departs between grid values).
    premise_note: str = ""


@dataclass(frozen=True)
class MeanFit:
    """The tilted moments a mean-secret model is built from (curator-private: data-derived)."""

    #: N, rows of the modelling table used.
    rows: int
    #: Mean and standard deviation of the sensitive expression over those rows.
    mean_s: float
    sd_s: float
    #: Its smallest and largest value.
    range_s: tuple[float, float]
    #: ndarray, shape (k,)
    #: λ per value, in units of 1/sd_s (the tilt is exp(λ (s − mean_s)/sd_s)).
    tilts: np.ndarray
    #: ndarray, shape (k,)
    #: 1/Σ w_r² of each tilt: how many rows the law at that value effectively rests on.
    effective_rows: np.ndarray
    #: ndarray, shape (k, m)
    #: μ_λ per value: the per-row mean of the statistics' features under the tilt.
    means: np.ndarray
    #: ndarray, shape (k, m, m)
    #: Σ_FF,λ − b_λ b_λᵀ σ²_λ per value: the per-row covariance given the mean.
    covariances: np.ndarray
    #: ndarray, shape (k, m)
    #: b_λ per value.
    slopes: np.ndarray
    #: ndarray, shape (k, N)
    #: The tilts' row weights (each sums to 1); not in :meth:`to_dict`.
    weights: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (without the row weights)."""
        return {
            "rows": self.rows,
            "mean": self.mean_s,
            "sd": self.sd_s,
            "range": list(self.range_s),
            "tilts": self.tilts.tolist(),
            "effective_rows": self.effective_rows.tolist(),
            "slopes": self.slopes.tolist(),
        }


def _features(table: Table, q: Query, secret: MeanSecret, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-row features of the statistics (scaled to their units) and of the secret."""
    x = q.row_features(table)
    x = x * np.array([1.0 / n if s.scale == "mean" else 1.0 for s in q.statistics])
    s = table.row_values([secret.parsed.sql()], [f"secret expression ({secret.expression})"])[:, 0]
    return x, s


def _tilt_weights(z: np.ndarray, lam: float) -> np.ndarray:
    a = lam * z
    w = np.exp(a - a.max())
    return w / w.sum()


def _solve_tilt(z: np.ndarray, target: float) -> float:
    """λ with Σ w_r z_r = target for w ∝ exp(λ z) (z standardised; target strictly inside
    its range). The tilted mean increases with λ (its derivative is the tilted variance),
    so a bracket doubled until it changes sign and bisection find the unique root."""

    def gap(lam: float) -> float:
        return float(_tilt_weights(z, lam) @ z) - target

    if target == 0.0:
        return 0.0
    step = 1.0 if target > 0 else -1.0
    lo, hi = 0.0, step
    while gap(hi) * step < 0:
        lo, hi = hi, 2 * hi
        if abs(hi) > 1e6:  # pragma: no cover - target is strictly inside the range
            raise ParameterError("the secret value is too close to the end of the range")
    return float(brentq(gap, min(lo, hi), max(lo, hi), xtol=1e-14, rtol=1e-13))


def _conditioned(
    x: np.ndarray, s: np.ndarray, w: np.ndarray, v: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Tilted mean μ, slope b, conditioned covariance Σ_FF − b bᵀ σ² and the residuals
    e = x − μ − b (s − v) (shape (N, m)) of one tilt."""
    mu = w @ x
    xc = x - mu
    sc = s - v  # the tilted mean of s is v
    var_s = float(w @ sc**2)
    b = (xc * w[:, None]).T @ sc / var_s
    resid = xc - np.outer(sc, b)
    cov = (resid * w[:, None]).T @ resid
    return mu, b, (cov + cov.T) / 2, resid


def fit_mean(x: np.ndarray, s: np.ndarray, secret: MeanSecret) -> MeanFit:
    """The tilt at each of the secret's values and the conditioned moments (module
    docstring), with the checks on the values.

    Raises
    ------
    ParameterError
        Fewer than 3 rows, a constant expression, or a value outside the open range of
        the expression on the table (no dataset has that mean, or only one made of
        extreme rows; no tilt reaches it).
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
    sd_s = float(s.std())
    z = (s - mu_s) / sd_s
    tilts, ess, means, covs, slopes, weights = [], [], [], [], [], []
    for v in secret.values:
        lam = _solve_tilt(z, (v - mu_s) / sd_s)
        w = _tilt_weights(z, lam)
        mu, b, cov, _ = _conditioned(x, s, w, v)
        tilts.append(lam)
        ess.append(1.0 / float(w @ w))
        means.append(mu)
        covs.append(cov)
        slopes.append(b)
        weights.append(w)
    return MeanFit(
        rows,
        mu_s,
        sd_s,
        (lo, hi),
        np.array(tilts),
        np.array(ess),
        np.stack(means),
        np.stack(covs),
        np.stack(slopes),
        np.stack(weights),
    )


def _shape(
    x: np.ndarray, s: np.ndarray, fit: MeanFit, values: tuple[float, ...], n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Skewness and excess kurtosis of the sum of n i.i.d. tilted residual rows (the
    cumulants of a sum add: κ₃ = n k₃, κ₄ = n k₄), per value and statistic."""
    skews, kurts = [], []
    for w, v in zip(fit.weights, values, strict=True):
        _, _, cov, e = _conditioned(x, s, w, v)
        var = np.diag(cov)
        ok = var > 1e-24 * np.maximum(np.max(np.abs(e), axis=0), 1e-300) ** 2
        safe = np.where(ok, var, 1.0)
        skews.append(np.where(ok, (w @ e**3) / safe**1.5 / math.sqrt(n), 0.0))
        kurts.append(np.where(ok, ((w @ e**4) / safe**2 - 3.0) / n, 0.0))
    return np.stack(skews), np.stack(kurts)


def _inv_sqrt(cov: np.ndarray) -> np.ndarray:
    """Symmetric inverse square root, directions of (numerically) zero variance given the
    smallest positive one (so a gap error there counts, hugely, against the bound)."""
    w, v = np.linalg.eigh((cov + cov.T) / 2)
    w = np.maximum(w, 1e-12 * max(float(w.max()), 1e-300))
    return (v / np.sqrt(w)) @ v.T


def _uncertainty(
    x: np.ndarray, s: np.ndarray, fit: MeanFit, secret: MeanSecret, n: int
) -> MomentUncertainty:
    """The model's moment uncertainty in the stratum form of
    :class:`~distpriv.moment_uncertainty.MomentUncertainty` (module docstring).

    Two virtual strata "lo" and "hi" with weights (n(1 − t_θ), n t_θ),
    t_θ = (v_θ − v_lo)/(v_hi − v_lo), and equal row covariances C̄ (the mean over θ of the
    conditioned per-row covariances), N' "rows" each. A pair's gap error then has the
    covariance 2 n² (tᵢ − tⱼ)² C̄ / N', which contains the delta method's
    n² Cov(IFᵢ − IFⱼ) / N in the PSD order for every pair when
    N' ≤ 2 N (tᵢ − tⱼ)² / λ_max(C̄^(−1/2) Cov(IFᵢ − IFⱼ) C̄^(−1/2)) (N' is the largest
    such integer). The variance factors exp(±z √((κ − 1)/N')) of the robust calibration
    equal exp(±z r) with r² the largest over θ of the delta-method variance of the log
    of each tilted residual variance, Σ_r w_r² (e_r²/σ² − 1)² (= (κ_e − 1)/N without
    tilt), when κ = 1 + r² N'. The covariance corners perturb every θ by
    n (ΛC̄Λ − C̄) rather than by its own n (ΛΣ_θΛ − Σ_θ) (a second-order difference).
    """
    rows = fit.rows
    vals = np.asarray(secret.values)
    v_lo, v_hi = float(vals.min()), float(vals.max())
    t = (vals - v_lo) / (v_hi - v_lo)
    ref = fit.covariances.mean(axis=0)
    root = _inv_sqrt(ref)
    influence = []
    rel_var = np.zeros(x.shape[1])
    for w, v in zip(fit.weights, secret.values, strict=True):
        _, _, cov, e = _conditioned(x, s, w, v)
        influence.append(rows * w[:, None] * e)
        var = np.diag(cov)
        ok = var > 1e-24 * np.maximum(np.max(np.abs(e), axis=0), 1e-300) ** 2
        rel = (w**2) @ (e**2 / np.where(ok, var, 1.0) - 1.0) ** 2
        rel_var = np.maximum(rel_var, np.where(ok, rel, 0.0))
    size = float(_MAX_SIZE)
    for i, j in ((secret.values.index(a), secret.values.index(b)) for a, b in secret.pairs):
        g = influence[i] - influence[j]
        gc = g - g.mean(axis=0)
        spread = root @ (gc.T @ gc / (rows - 1)) @ root
        top = float(np.linalg.eigvalsh((spread + spread.T) / 2).max())
        if top > 0:
            size = min(size, 2 * rows * (t[i] - t[j]) ** 2 / top)
    n_enc = math.floor(size)
    if n_enc < 2:
        raise ParameterError(
            f"the modelling table ({rows} rows) is too small to estimate how the statistics "
            f"move with the average of {secret.expression}; use a larger modelling table"
        )
    const = np.diag(ref) <= 0
    kappa = np.where(const, 0.0, 1.0 + rel_var * n_enc)
    return MomentUncertainty(
        (n_enc, n_enc),
        np.stack([n * (1 - t), n * t], axis=1),
        np.stack([ref, ref]),
        np.stack([kappa, kappa]),
        method=_UNCERTAINTY_METHOD,
        shared_strata=True,  # one estimate C̄ for both virtual strata: one error
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
    n_samples: int = 1000,
    rng: np.random.Generator | None = None,
    labels: EventLabels | None = None,
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
    method : {"analytic", "montecarlo"}
        ``"analytic"``: the conditional limit law (module docstring). ``"montecarlo"``:
        ``n_samples`` real datasets per value drawn i.i.d. from the table and kept when
        their average is within a narrow window of the value
        (:mod:`distpriv.modeling.mean_sampling`; rejection sampling, no Gaussian
        conditioning), with the analytic model's population layer.
    n_samples : int
        Kept datasets per value (``"montecarlo"``).
    rng : numpy.random.Generator, optional
        The draws of ``"montecarlo"``.
    labels : EventLabels, optional
        The secret the model carries instead of ``secret`` (its values and pairs must be
        ``secret``'s: an :class:`~distpriv.modeling.secret_events.EventSecret` of mean
        events, whose grid ``secret`` is) and the sentence its premise adds.
    missing : {"error", "drop"}
    population : bool
        As for :func:`distpriv.model_query`: ``False`` — rows i.i.d. from the population
        the table samples, with the moments' uncertainty; ``True`` — drawn without
        replacement from the table (covariance × (N − n)/(N − 1)), moments exact.

    Returns
    -------
    DataQueryModel
        Labels = the secret's values, one covariance per value; ``counts`` = (n, …, n) and
        ``stratum_sizes`` = (N, 0): every row is in one stratum. ``diagnostics["mean_fit"]``
        holds the fitted moments (:class:`MeanFit`, curator-private).

    Warns
    -----
    AssumptionWarning
        A value more than four standard errors of the dataset mean from the table's mean
        (the conditioning extrapolates to rare datasets), or non-Gaussian residual sums.
    """
    n = check_positive_int(subset_size, "subset_size")
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
    pairs_idx = tuple((secret.values.index(a), secret.values.index(b)) for a, b in secret.pairs)
    samples = None
    if method == "montecarlo":
        from .mean_sampling import conditioned_draws, sampled_moments

        draws, half, drawn = conditioned_draws(
            x, s, secret, n=n, n_samples=n_samples, rng=np.random.default_rng(rng)
        )
        samples = draws
        means, covs, diagnostics = sampled_moments(draws, pairs_idx)
        diagnostics["window"] = {"half_width": half, "datasets_drawn": drawn}
    else:
        means = n * fit.means
        covs = n * fpc * fit.covariances
        shape = _shape(x, s, fit, secret.values, n)
        diagnostics = _diagnostics(means, covs, None, pairs_idx, shape=shape)
    diagnostics["missing"] = missing_report.to_dict()
    diagnostics["engine"] = table.dialect
    diagnostics["mean_fit"] = fit.to_dict()
    z = np.abs(vals - fit.mean_s) / (fit.sd_s / math.sqrt(n))
    diagnostics["value_z"] = z
    diagnostics["effective_rows"] = fit.effective_rows
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
    _warn_non_gaussian(
        diagnostics,
        secret.values,
        q.names,
        at=lambda v: f"an average of {secret.expression} of {v:g}",
    )
    uncertainty = None if population else _uncertainty(x, s, fit, secret, n)
    how = (
        "without replacement from the table (declared the whole population; "
        "finite-population correction)"
        if population
        else "i.i.d. from the population the table samples"
    )
    premise_note = "" if labels is None else labels.premise_note
    if method == "montecarlo":
        fitted = (
            f"sample mean and covariance of {n_samples} real datasets of {n} rows per value, "
            f"drawn i.i.d. from the table's rows and kept when their average of "
            f"{secret.expression} is within a narrow window of the value (rejection sampling)"
            + premise_note
        )
    return DataQueryModel(
        means,
        covs,
        secret=secret if labels is None else labels.secret,  # type: ignore[arg-type]
        query=q,
        design=ModelDesign(
            method=method,
            subset_size=n,
            counts=tuple(n for _ in secret.values),
            stratum_sizes=(fit.rows, 0),
            population=population,
        ),
        samples=samples,
        diagnostics=diagnostics,
        fitted=fitted
        if method == "montecarlo"
        else (
            f"conditional limit law of the statistics of {n}-row datasets drawn {how}, given "
            f"their average of {secret.expression}: exponential tilt of the table's rows to "
            "each value, then Gaussian conditioning of the sums (exact for Gaussian records; "
            "Gaussian shape assumed)"
        )
        + premise_note,
        uncertainty=uncertainty,
        facts=_facts_thunk(table, q, n, missing),
    )
