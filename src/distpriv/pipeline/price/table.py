"""The price of a release, per statistic, before any noise is drawn.

For a calibrated mechanism and its query model, each statistic k gets

* its noise standard deviation √(Σ_Z)_kk, and three yardsticks to read it against:

  - its **spread**, the statistic's own standard deviation across datasets under the model
    (pooled over θ, as in :func:`distpriv.pipeline.report.noise_to_spread`);
  - its **gap across the secret's values**, max_θ μ_θ,k − min_θ μ_θ,k: how far the secret
    moves the statistic's mean;
  - its **typical value**, the mean of μ_θ,k over θ;

* the **price of the population premise**: the same mechanism calibrated on the fitted
  moments only (β = None, :mod:`distpriv.population.confidence`), and the ratio of the two noise
  standard deviations — what covering the sampling uncertainty of the moments costs;
* what **dropping it** would save the others: the mechanism calibrated on the other m − 1
  statistics, as the relative fall of their E‖Z‖²;
* its **collinearity** with the others, R²_k = 1 − 1/(Σ_kk (Σ⁻¹)_kk) of the pooled
  model covariance (the R² of regressing statistic k on the others under the model; a
  statistic is *nearly collinear* from R² ≥ 0.9, i.e. a variance inflation factor of 10):
  it adds little information but can force noise onto the others. The condition number of
  the pooled correlation matrix is reported for the whole set;
* for the mechanisms that take ``weights`` (optimal-g, optimal-g-full): its noise sd when
  its weight alone is made ``WEIGHT_PROBE`` times larger (a re-calibration), which says
  whether the weights can move the noise here — measured, not presumed;

and plain-language lines (:mod:`distpriv.pipeline.price.table.words`): a statistic whose noise
exceeds its spread will be dominated by noise (the line says which yardsticks the noise
exceeds); a statistic that does not vary between datasets sharing the secret's value reveals
the secret; whether weights can move the noise, and why not when they cannot.

Every number is a re-calibration by the library's own :func:`distpriv.calibrate` (the
same options), so the table prices exactly what would be released. The table describes the
modelling data (spreads, gaps, values), so it is **curator-private**: ``distpriv verify``
prints it and writes it to its PRIVATE page, never into a public report.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...central import CalibratedMechanism, calibrate, mechanism_info
from ...errors import DistPrivError
from ...population.confidence import DEFAULT_BETA, marginal
from ...population.exact import what_if_accuracy
from ...population.sets import population_set, selected_set, set_method
from ...querymodel import GaussianQueryModel
from .rows import COLLINEAR_R2, StatisticPrice, _safe
from .words import WEIGHT_PROBE, price_lines, weights_line

__all__ = [
    "COLLINEAR_R2",
    "WEIGHT_PROBE",
    "PriceReport",
    "StatisticPrice",
    "price_for_options",
    "price_report",
]

# Drop-one and weight re-calibrations only up to this many statistics (2m calibrations).
DROP_MAX = 12
# Options of a mechanism that hold one entry per statistic (restricted when dropping one).
_PER_STATISTIC = ("lattice", "weights", "sensitivities", "direction")


@dataclass(frozen=True)
class PriceReport:
    """Per-statistic price of a calibrated mechanism, and what it means in words."""

    mechanism: str
    rows: tuple[StatisticPrice, ...]
    #: E‖Z‖² with and without the population layer.
    mse: float
    mse_fitted: float | None
    #: Plain-language findings (dominated statistics, collinearity, the premise's price).
    lines: tuple[str, ...]
    #: Whether and how weights move this mechanism's noise (measured when it takes them).
    weights: str
    #: What was not computed, and why.
    notes: tuple[str, ...] = ()
    #: Condition number of the pooled correlation matrix of the statistics that vary.
    condition: float = 1.0
    #: m λ_min(Σ_Z) / tr Σ_Z: the share of E‖Z‖² that is the same in every direction.
    isotropic_share: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            "mechanism": self.mechanism,
            "statistics": [r.to_dict() for r in self.rows],
            "mse": self.mse,
            "mse_without_population": self.mse_fitted,
            "lines": list(self.lines),
            "weights": self.weights,
            "notes": list(self.notes),
            "condition_number": _safe(self.condition),
            "isotropic_share": _safe(self.isotropic_share),
            "collinear_r2": COLLINEAR_R2,
            "weight_probe": WEIGHT_PROBE,
        }


def _spread(model: GaussianQueryModel) -> np.ndarray:
    cov = np.asarray(model.covariances, dtype=float)
    return np.sqrt(np.clip(np.diagonal(cov, axis1=1, axis2=2).mean(axis=0), 0.0, None))


def _variance_ratio(model: GaussianQueryModel) -> np.ndarray:
    """Largest var_i / var_j of each statistic over the pairs of Ψ (both directions)."""
    var = np.clip(
        np.diagonal(np.asarray(model.covariances, dtype=float), axis1=1, axis2=2), 0, None
    )
    out = np.ones(var.shape[1])
    for i, j in model.pairs:
        hi, lo = np.maximum(var[i], var[j]), np.minimum(var[i], var[j])
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(lo > 0, hi / np.where(lo > 0, lo, 1.0), np.where(hi > 0, np.inf, 1.0))
        out = np.maximum(out, r)
    return out


def _r_squared(model: GaussianQueryModel) -> tuple[np.ndarray, float]:
    """R²_k of each statistic on the others under the pooled covariance (1: collinear),
    and the condition number of the pooled correlation matrix."""
    pooled = np.asarray(model.covariances, dtype=float).mean(axis=0)
    m = pooled.shape[0]
    if m < 2:
        return np.zeros(m), 1.0
    d = np.sqrt(np.clip(np.diag(pooled), 0.0, None))
    live = d > 0
    out = np.zeros(m)
    if live.sum() < 2:
        return out, 1.0
    corr = pooled[np.ix_(live, live)] / np.outer(d[live], d[live])
    w, v = np.linalg.eigh((corr + corr.T) / 2)
    cond = float(w[-1] / w[0]) if w[0] > 0 else math.inf
    # Exactly collinear statistics: the least eigenvalue is clipped, R² comes out ≈ 1.
    w = np.maximum(w, 1e-12 * max(float(w[-1]), 1e-300))
    r2 = 1.0 - 1.0 / (v**2 / w).sum(axis=1)
    out[live] = np.clip(r2, 0.0, 1.0)
    return out, cond


def _sub_model(model: GaussianQueryModel, keep: list[int]) -> GaussianQueryModel:
    """The model of the statistics ``keep`` (moments and their uncertainty restricted)."""
    return marginal(model, np.asarray(keep, dtype=int))


def _restrict(options: dict[str, Any], keep: list[int], m: int) -> dict[str, Any]:
    out = {}
    for key, val in options.items():
        arr = np.asarray(val) if key in _PER_STATISTIC and val is not None else None
        if arr is not None and arr.ndim == 2 and arr.shape == (m, m):
            out[key] = arr[np.ix_(keep, keep)]
        elif arr is not None and arr.ndim == 1 and arr.shape[0] == m:
            out[key] = arr[keep]
        else:
            out[key] = val
    return out


def _options(mech: CalibratedMechanism, extra: dict[str, Any] | None) -> dict[str, Any]:
    """The mechanism's options as calibrated (lattice, floor, weights), plus ``extra``."""
    spec = mechanism_info(mech.name)
    diag = mech.diagnostics
    opts: dict[str, Any] = {}
    if "lattice" in spec.options and diag.get("lattice_steps") is not None:
        opts["lattice"] = np.asarray(diag["lattice_steps"], dtype=float)
    if "floor" in spec.options and diag.get("floor") is not None:
        opts["floor"] = diag["floor"]
    if "weights" in spec.options and diag.get("weights") is not None:
        opts["weights"] = np.asarray(diag["weights"], dtype=float)
    opts.update({k: v for k, v in (extra or {}).items() if k in spec.options})
    return opts


def _recalibrate(
    name: str, model: GaussianQueryModel, eps: float, dlt: float, beta: Any, opts: dict[str, Any]
) -> CalibratedMechanism | None:
    try:
        # Never published: checked at the search's accuracy (population.exact.what_if_accuracy).
        with warnings.catch_warnings(), what_if_accuracy():
            warnings.simplefilter("ignore")
            return calibrate(name, model, epsilon=eps, delta=dlt, beta=beta, **opts)
    except DistPrivError:
        return None


def probe_weights(weights: Any, k: int, m: int, factor: float = WEIGHT_PROBE) -> np.ndarray:
    """W with statistic ``k``'s weight multiplied by ``factor``: D W D, D = diag(1, …, √factor
    at k, …, 1), so W stays positive definite and only row and column k change."""
    w = np.eye(m) if weights is None else np.asarray(weights, dtype=float)
    w = np.diag(w) if w.ndim == 1 else w.copy()
    scale = np.ones(m)
    scale[k] = math.sqrt(factor)
    out = np.asarray(scale[:, None] * w * scale[None, :])
    out[k, k] = w[k, k] * factor  # exactly (√factor² is not always factor in floating point)
    return out


def _tight_applies(model: GaussianQueryModel) -> str | None:
    """The selected population set when the tight set would apply to ``model`` instead
    (moment uncertainty, few pairs and variances: population.sets.set_method);
    ``None`` when the tight set is selected or would fall back to the box."""
    current = selected_set()
    with population_set("tight"):
        applies = set_method(model) == "joint"
    return current if applies and current != "tight" else None


def _sd(mech: CalibratedMechanism) -> np.ndarray:
    return np.sqrt(np.clip(np.diag(mech.noise_covariance), 0.0, None))


def _isotropic_share(cov: np.ndarray) -> float:
    tr = float(np.trace(cov))
    if tr <= 0:
        return 0.0
    least = float(np.linalg.eigvalsh((cov + cov.T) / 2)[0])
    return max(least, 0.0) * cov.shape[0] / tr


def price_report(
    model: GaussianQueryModel,
    mech: CalibratedMechanism,
    *,
    beta: Any = DEFAULT_BETA,
    options: dict[str, Any] | None = None,
    drop_max: int = DROP_MAX,
) -> PriceReport:
    """The per-statistic price of ``mech`` on ``model`` (module docstring).

    Parameters
    ----------
    model : GaussianQueryModel
        The query model ``mech`` was calibrated on (a data-built model with its moments'
        uncertainty, or given directly).
    mech : CalibratedMechanism
        The calibrated mechanism (nothing is drawn from it).
    beta : float or None
        The confidence parameter the mechanism was calibrated with.
    options : dict, optional
        Further calibration options (e.g. ``calibration``); lattice, floor and weights are
        taken from ``mech``'s diagnostics.
    drop_max : int
        Drop-one and weight re-calibrations only up to this many statistics.

    Returns
    -------
    PriceReport
    """
    m = mech.dim
    eps, dlt = mech.guarantee.target
    sd = _sd(mech)
    spread = _spread(model)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(spread > 0, sd / np.where(spread > 0, spread, 1.0), np.inf)
    ratio = np.where((spread == 0) & (sd == 0), 0.0, ratio)
    means = np.asarray(model.means, dtype=float)
    gap, value = means.max(axis=0) - means.min(axis=0), means.mean(axis=0)
    r2, cond = _r_squared(model)
    spec = mechanism_info(mech.name)
    notes: list[str] = []
    gaussian_view = spec.model_view == "gaussian" and isinstance(model, GaussianQueryModel)
    recal = spec.gaussian and gaussian_view
    opts = _options(mech, options)
    fitted_sd: np.ndarray | None = None
    mse_fitted = None
    layer = recal and beta is not None and getattr(model, "uncertainty", None) is not None
    if layer:
        plain = _recalibrate(mech.name, model, eps, dlt, None, opts)
        if plain is not None:
            fitted_sd, mse_fitted = _sd(plain), plain.mse()
        else:
            notes.append("the mechanism could not be calibrated without the population layer")
    elif recal:
        notes.append(
            "no population layer (beta = none, or the moments are taken as exact): the "
            "premise costs nothing here"
        )
    saving: list[float | None] = [None] * m
    weighted: list[float | None] = [None] * m
    probe = recal and "weights" in spec.options
    if recal and 1 < m <= drop_max:
        for k in range(m):
            keep = [j for j in range(m) if j != k]
            sub = _recalibrate(
                mech.name, _sub_model(model, keep), eps, dlt, beta, _restrict(opts, keep, m)
            )
            others = float(np.sum(sd[keep] ** 2))
            if sub is not None and others > 0:
                saving[k] = 1.0 - float(np.trace(sub.noise_covariance)) / others
    elif recal and m > drop_max:
        notes.append(
            f"drop-one savings and the weight probe not computed above {drop_max} statistics"
        )
    if probe and m <= drop_max:
        for k in range(m):
            heavier = dict(opts, weights=probe_weights(opts.get("weights"), k, m))
            moved = _recalibrate(mech.name, model, eps, dlt, beta, heavier)
            weighted[k] = None if moved is None else float(_sd(moved)[k])
    if not recal:
        notes.append(
            f"{mech.name} is not a Gaussian mechanism on the Gaussian model: only its noise "
            "and the spread are shown"
        )
    ratios = _variance_ratio(model)
    rows = tuple(
        StatisticPrice(
            str(model.statistics[k]),
            float(sd[k]),
            float(spread[k]),
            float(ratio[k]),
            None if fitted_sd is None else float(fitted_sd[k]),
            saving[k],
            float(r2[k]),
            float(gap[k]),
            float(value[k]),
            float(ratios[k]),
            weighted[k],
        )
        for k in range(m)
    )
    iso = _isotropic_share(np.asarray(mech.noise_covariance, dtype=float))
    return PriceReport(
        mech.name,
        rows,
        mech.mse(),
        mse_fitted,
        tuple(price_lines(rows, mech.mse(), mse_fitted, _tight_applies(model) if layer else None)),
        weights_line(mech, rows, iso),
        tuple(notes),
        cond,
        iso,
    )


def price_for_options(
    model: GaussianQueryModel, mech: CalibratedMechanism, options: dict[str, Any]
) -> PriceReport:
    """:func:`price_report` with the β and calibration of a ``[mechanism]`` table."""
    beta = options.get("beta", DEFAULT_BETA)
    extra = {k: options[k] for k in ("calibration",) if k in options}
    return price_report(model, mech, beta=beta, options=extra)
