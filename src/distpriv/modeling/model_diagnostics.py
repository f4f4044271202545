"""Diagnostics of a query model built from a table: how far f_θ is from the Gaussian shape the
mechanisms assume, and how the pair's covariances differ (one module, so every kind of
secret's model builder reports the same diagnostics).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import AssumptionWarning

__all__: list[str] = []  # helpers of the model builders

# Draws used for the non-Gaussianity diagnostics when the moments are analytic.
_DIAGNOSTIC_DRAWS = 2000


def _shape_moments(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Skewness and excess kurtosis per column; 0 for a constant column (e.g. count(*))."""
    c = draws - draws.mean(axis=0)
    m2 = np.mean(c**2, axis=0)
    scale = np.maximum(np.abs(draws).max(axis=0), 1e-300)
    ok = m2 > (1e-12 * scale) ** 2
    safe = np.where(ok, m2, 1.0)
    skew = np.where(ok, np.mean(c**3, axis=0) / safe**1.5, 0.0)
    kurt = np.where(ok, np.mean(c**4, axis=0) / safe**2 - 3.0, 0.0)
    return skew, kurt


def _warn_non_gaussian(
    diag: dict[str, Any],
    values: tuple[float, ...],
    names: tuple[str, ...],
    at: Callable[[Any], str] = lambda v: f"p={v}",
) -> None:
    """AssumptionWarning when a statistic's skewness or kurtosis is > 5 standard errors;
    ``at`` words a value of the secret (a share ``p=0.45``; a mean secret its average)."""
    for key in ("skewness", "excess_kurtosis"):
        se = diag["gaussian_se"][key]
        z = np.abs(diag[key]) / se
        if np.any(z > 5.0):
            t, j = np.unravel_index(int(np.argmax(z)), z.shape)
            warnings.warn(
                f"f_theta is not Gaussian: {key.replace('_', ' ')} of {names[j]!r} at "
                f"{at(values[t])} is {diag[key][t, j]:.3g} ({z[t, j]:.1f} standard errors); the "
                "Gaussian mechanisms rest on this approximation (their guarantee reports it "
                "as unverified; Chen & Ohrimenko 2023 Thm 4.7 covers a bounded model error: "
                "distpriv.relax_wasserstein)",
                AssumptionWarning,
                stacklevel=3,
            )


def _diagnostics(
    means: np.ndarray,
    covs: np.ndarray,
    draws: list[np.ndarray] | None,
    pairs: tuple[tuple[int, int], ...],
    shape: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, Any]:
    idx = np.asarray(pairs)
    a, b = covs[idx[:, 0]], covs[idx[:, 1]]
    den = np.maximum(np.linalg.norm(a, axis=(1, 2)), np.linalg.norm(b, axis=(1, 2)))
    gap = np.divide(
        np.linalg.norm(a - b, axis=(1, 2)), den, out=np.zeros(len(pairs)), where=den > 0
    )
    va, vb = np.diagonal(a, axis1=1, axis2=2), np.diagonal(b, axis1=1, axis2=2)
    lo, hi = np.minimum(va, vb), np.maximum(va, vb)
    ratio = np.divide(hi, lo, out=np.where(hi > 0, np.inf, 1.0), where=lo > 0)
    diffs = means[idx[:, 0]] - means[idx[:, 1]]
    norms = np.linalg.norm(diffs, axis=1)
    ref = diffs[int(np.argmax(norms))] / max(norms.max(), 1e-300)
    orth = np.linalg.norm(diffs - np.outer(diffs @ ref, ref), axis=1)
    parallel = float(np.max(np.divide(orth, norms, out=np.zeros_like(orth), where=norms > 0)))
    if shape is None:
        if draws is None:
            raise ValueError("_diagnostics needs the draws or the exact shape moments")
        skew, kurt = (np.stack(x) for x in zip(*(_shape_moments(d) for d in draws), strict=True))
        n_draw = draws[0].shape[0]
    else:
        # Exact cumulants: no sampling error. The warning threshold stays that of a
        # _DIAGNOSTIC_DRAWS-draw Monte Carlo check, so both methods flag the same shapes.
        skew, kurt = shape
        n_draw = _DIAGNOSTIC_DRAWS
    return {
        "covariance_gap": gap,
        "variance_ratio": ratio,
        "skewness": skew,
        "excess_kurtosis": kurt,
        "gaussian_se": {
            "skewness": float(np.sqrt(6.0 / n_draw)),
            "excess_kurtosis": float(np.sqrt(24.0 / n_draw)),
        },
        "diagnostic_draws": int(n_draw),
        "shape_source": "monte carlo draws" if shape is None else "exact cumulants",
        "parallel_residual": parallel,
        "mean_difference_l2": norms,
        "constant_statistics": [
            int(i) for i in np.flatnonzero(np.all(np.diagonal(covs, axis1=1, axis2=2) <= 0, axis=0))
        ],
    }
