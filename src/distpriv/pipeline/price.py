"""The price of a release, per statistic, before any noise is drawn (issue 25, item 5).

For a calibrated mechanism and its query model, each statistic k gets

* its noise standard deviation √(Σ_Z)_kk and the ratio to its **spread** (the statistic's
  own standard deviation across datasets under the model, pooled over θ, as in
  :func:`distpriv.pipeline.report.noise_to_spread`);
* the **price of the population premise**: the same mechanism calibrated on the fitted
  moments only (β = None, :mod:`distpriv.central.robust`), and the ratio of the two noise
  standard deviations — what covering the sampling uncertainty of the moments costs;
* what **dropping it** would save the others: the mechanism calibrated on the other m − 1
  statistics, as the relative fall of their E‖Z‖²;
* its **collinearity** with the others, R²_k = 1 − 1/(Σ_kk (Σ⁻¹)_kk) of the pooled
  model covariance: a nearly collinear statistic adds little information but can force
  noise onto the others;

and plain-language lines: a statistic whose noise exceeds its spread will be dominated by
noise; whether weights can move the noise (only the mechanisms whose shape is chosen by a
convex program, optimal-g and optimal-g-full, take them), and why not otherwise.

Every number is a re-calibration by the library's own :func:`distpriv.calibrate` (the
same options), so the table prices exactly what would be released.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..central import CalibratedMechanism, calibrate, mechanism_info
from ..central.robust import DEFAULT_BETA
from ..errors import DistPrivError
from ..querymodel import BootstrapUncertainty, GaussianQueryModel, MomentUncertainty

__all__ = ["PriceReport", "StatisticPrice", "beta_of", "price_for_options", "price_report"]

# A statistic is "nearly collinear" with the others from this R² on.
COLLINEAR_R2 = 0.9
# Drop-one re-calibrations only up to this many statistics (m calibrations).
DROP_MAX = 12
# Options of a mechanism that hold one entry per statistic (restricted when dropping one).
_PER_STATISTIC = ("lattice", "weights", "sensitivities", "direction")


@dataclass(frozen=True)
class StatisticPrice:
    """The price row of one statistic.

    Attributes
    ----------
    name : str
    noise_sd : float
        √(Σ_Z)_kk of the calibrated noise.
    spread : float
        The statistic's standard deviation under the model (pooled over θ).
    noise_to_spread : float
        ``noise_sd / spread`` (``inf`` for a statistic that never varies, with noise).
    noise_sd_fitted : float or None
        Noise sd of the same mechanism calibrated on the fitted moments only (no population
        layer); ``None`` when there is no layer or the re-calibration failed.
    drop_saving : float or None
        Relative fall of the other statistics' E‖Z‖² if this one were dropped (0.3: 30 %
        less); ``None`` when not computed.
    r_squared : float
        Collinearity with the other statistics (pooled model covariance).
    """

    name: str
    noise_sd: float
    spread: float
    noise_to_spread: float
    noise_sd_fitted: float | None
    drop_saving: float | None
    r_squared: float

    @property
    def premise_factor(self) -> float | None:
        """Noise sd with the population layer over noise sd without it."""
        if self.noise_sd_fitted is None or self.noise_sd_fitted <= 0:
            return None
        return self.noise_sd / self.noise_sd_fitted

    @property
    def collinear(self) -> bool:
        """R² ≥ :data:`COLLINEAR_R2`."""
        return self.r_squared >= COLLINEAR_R2

    @property
    def dominated(self) -> bool:
        """The noise is at least the statistic's own spread."""
        return self.noise_to_spread >= 1.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (non-finite numbers as ``None``)."""

        def safe(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else float(x)

        return {
            "statistic": self.name,
            "noise_sd": safe(self.noise_sd),
            "spread": safe(self.spread),
            "noise_to_spread": safe(self.noise_to_spread),
            "noise_sd_without_population": safe(self.noise_sd_fitted),
            "population_premise_factor": safe(self.premise_factor),
            "drop_saves_others": safe(self.drop_saving),
            "r_squared": safe(self.r_squared),
            "nearly_collinear": self.collinear,
            "dominated_by_noise": self.dominated,
        }


@dataclass(frozen=True)
class PriceReport:
    """Per-statistic price of a calibrated mechanism, and what it means in words.

    Attributes
    ----------
    mechanism : str
    rows : tuple of StatisticPrice
    mse, mse_fitted : float, float or None
        E‖Z‖² with and without the population layer.
    lines : tuple of str
        Plain-language findings (dominated statistics, collinearity, the premise's price).
    weights : str
        Whether and how weights move this mechanism's noise.
    notes : tuple of str
        What was not computed, and why.
    """

    mechanism: str
    rows: tuple[StatisticPrice, ...]
    mse: float
    mse_fitted: float | None
    lines: tuple[str, ...]
    weights: str
    notes: tuple[str, ...] = ()

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
        }


def _spread(model: GaussianQueryModel) -> np.ndarray:
    cov = np.asarray(model.covariances, dtype=float)
    return np.sqrt(np.clip(np.diagonal(cov, axis1=1, axis2=2).mean(axis=0), 0.0, None))


def _r_squared(model: GaussianQueryModel) -> np.ndarray:
    """R²_k of each statistic on the others under the pooled covariance (1: collinear)."""
    pooled = np.asarray(model.covariances, dtype=float).mean(axis=0)
    m = pooled.shape[0]
    if m < 2:
        return np.zeros(m)
    d = np.sqrt(np.clip(np.diag(pooled), 0.0, None))
    live = d > 0
    out = np.zeros(m)
    corr = pooled[np.ix_(live, live)] / np.outer(d[live], d[live])
    w, v = np.linalg.eigh((corr + corr.T) / 2)
    # Exactly collinear statistics: the least eigenvalue is clipped, R² comes out ≈ 1.
    w = np.maximum(w, 1e-12 * max(float(w[-1]), 1e-300))
    r2 = 1.0 - 1.0 / (v**2 / w).sum(axis=1)
    out[live] = np.clip(r2, 0.0, 1.0)
    return out


def _sub_model(model: GaussianQueryModel, keep: list[int]) -> GaussianQueryModel:
    """The model of the statistics ``keep`` (moments and their uncertainty restricted)."""
    idx = np.asarray(keep)
    unc = model.uncertainty
    sub_unc: Any = None
    if isinstance(unc, BootstrapUncertainty):
        sub_unc = unc.restrict(idx)
    elif unc is not None:
        sub_unc = MomentUncertainty(
            unc.stratum_sizes,
            unc.weights,
            unc.row_covariances[:, idx][:, :, idx],
            unc.kurtosis[:, idx],
            method=unc.method,
        )
    return GaussianQueryModel(
        np.asarray(model.means)[:, idx],
        np.asarray(model.covariances)[:, idx][:, :, idx],
        [(model.labels[i], model.labels[j]) for i, j in model.pairs],
        labels=model.labels,
        statistics=[model.statistics[k] for k in keep],
        fitted=model.fitted,
        uncertainty=sub_unc,
    )


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
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return calibrate(name, model, epsilon=eps, delta=dlt, beta=beta, **opts)
    except DistPrivError:
        return None


def _weights_line(mech: CalibratedMechanism) -> str:
    spec = mechanism_info(mech.name)
    if "weights" not in spec.options:
        return (
            f"weights cannot move the noise of {mech.name}: its shape is fixed by its theorem "
            f"({spec.summary}); only optimal-g and optimal-g-full choose the shape by the "
            "weights (with mechanism = 'auto', weights only change which mechanism wins)"
        )
    shape = str(mech.diagnostics.get("main_shape") or mech.diagnostics.get("method") or "")
    line = (
        f"weights move the noise of {mech.name}: it minimises sum_k w_k Var(Z_k) over the "
        "noise that meets the guarantee, so a statistic with a larger weight gets less noise "
        "as far as the differences between the hypotheses in its direction allow"
    )
    if "isotropic" in shape:
        line += (
            f"; here the cheapest verified noise is '{shape}': the hypotheses differ in "
            "every direction (their covariances, or the population set's), so every "
            "statistic needs noise whatever the weights"
        )
    return line


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
        Drop-one re-calibrations only up to this many statistics.

    Returns
    -------
    PriceReport
    """
    m = mech.dim
    eps, dlt = mech.guarantee.target
    sd = np.sqrt(np.clip(np.diag(mech.noise_covariance), 0.0, None))
    spread = _spread(model)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(spread > 0, sd / np.where(spread > 0, spread, 1.0), np.inf)
    ratio = np.where((spread == 0) & (sd == 0), 0.0, ratio)
    r2 = _r_squared(model)
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
            fitted_sd = np.sqrt(np.clip(np.diag(plain.noise_covariance), 0.0, None))
            mse_fitted = plain.mse()
        else:
            notes.append("the mechanism could not be calibrated without the population layer")
    elif recal:
        notes.append(
            "no population layer (beta = none, or the moments are taken as exact): the "
            "premise costs nothing here"
        )
    saving: list[float | None] = [None] * m
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
        notes.append(f"drop-one savings not computed above {drop_max} statistics")
    if not recal:
        notes.append(
            f"{mech.name} is not a Gaussian mechanism on the Gaussian model: only its noise "
            "and the spread are shown"
        )
    rows = tuple(
        StatisticPrice(
            str(model.statistics[k]),
            float(sd[k]),
            float(spread[k]),
            float(ratio[k]),
            None if fitted_sd is None else float(fitted_sd[k]),
            saving[k],
            float(r2[k]),
        )
        for k in range(m)
    )
    return PriceReport(
        mech.name,
        rows,
        mech.mse(),
        mse_fitted,
        tuple(_lines(rows, mech.mse(), mse_fitted)),
        _weights_line(mech),
        tuple(notes),
    )


def _lines(rows: tuple[StatisticPrice, ...], mse: float, mse_fitted: float | None) -> list[str]:
    out = []
    for r in rows:
        if r.dominated:
            out.append(
                f"{r.name}: the noise (sd {r.noise_sd:.4g}) is {r.noise_to_spread:.3g} times "
                f"the statistic's own spread across datasets (sd {r.spread:.4g}): the "
                "released value will be dominated by noise"
            )
    for r in rows:
        if r.collinear:
            save = (
                f"; dropping it would cut the others' noise by {100 * r.drop_saving:.0f} %"
                if r.drop_saving is not None and r.drop_saving >= 0.01
                else ""
            )
            out.append(
                f"{r.name} is nearly collinear with the other statistics (R^2 = "
                f"{r.r_squared:.3f}): it adds little information{save}"
            )
    if mse_fitted is not None and mse_fitted > 0:
        out.append(
            f"the population premise (the guarantee holds on the population, not only on "
            f"the fitted moments) multiplies E||Z||^2 by {mse / mse_fitted:.3g} "
            f"({mse:.4g} against {mse_fitted:.4g})"
        )
    dropped = [r for r in rows if r.drop_saving is not None]
    best = max(dropped, key=lambda r: r.drop_saving or 0.0, default=None)
    if best is not None and (best.drop_saving or 0.0) >= 0.25:
        out.append(
            f"dropping {best.name} would cut the other statistics' E||Z||^2 by "
            f"{100 * (best.drop_saving or 0.0):.0f} %"
        )
    return out


def price_for_options(
    model: GaussianQueryModel, mech: CalibratedMechanism, options: dict[str, Any]
) -> PriceReport:
    """:func:`price_report` with the β and calibration of a ``[mechanism]`` table."""
    beta = options.get("beta", DEFAULT_BETA)
    extra = {k: options[k] for k in ("calibration",) if k in options}
    return price_report(model, mech, beta=beta, options=extra)


def beta_of(mech: CalibratedMechanism) -> float | None:
    """The β a mechanism was calibrated with, read from its population premise.

    ``None`` when the premise says the sampling uncertainty was not covered (β = none);
    the library default when the guarantee states no confidence.
    """
    for premise in mech.guarantee.premises:
        if premise.name != "population":
            continue
        text = premise.statement
        if "beta = none" in text:
            return None
        found = re.search(r"with probability at least ([0-9.eE+-]+)", text)
        if found:
            return round(1.0 - float(found.group(1)), 12)
    return DEFAULT_BETA
