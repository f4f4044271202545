"""The query models APGM is calibrated on (Zhang, Ohrimenko & Cummings 2022, §4.2).

Θ as a grid of parameter ranges (:func:`theta_grid`), and the §4.2 closed forms for records
drawn i.i.d. from N(μ, V): the conditional mean and variance of F given the secret
(:func:`gaussian_conditional`), the sensitivity bounds (:func:`gaussian_attribute_bounds`)
and the query models with one hypothesis per (θ, secret) (:func:`attribute_query_model`,
:func:`gaussian_attribute_model`). The mechanism itself is in :mod:`distpriv.central.apgm`.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..querymodel import GaussianQueryModel
from ..util.validation import (
    check_array,
    check_covariance,
    check_positive_int,
    check_real,
)

__all__ = [
    "GaussianAttributeBounds",
    "attribute_query_model",
    "gaussian_attribute_bounds",
    "gaussian_attribute_model",
    "gaussian_conditional",
    "theta_grid",
]


# ---------------------------------------------------------------------------- Θ as a grid
def theta_grid(
    ranges: Mapping[str, float | tuple[float, float] | Sequence[float]], *, points: int = 2
) -> tuple[dict[str, float], ...]:
    """The parameter combinations of a Θ given as ranges or grids.

    Parameters
    ----------
    ranges : mapping str -> float, (low, high) or sequence of float
        A fixed value, an interval (``points`` equally spaced values including both ends),
        or an explicit list of values, per parameter. A 2-tuple is always an interval;
        pass a list for two explicit values.
    points : int
        Values per interval, ≥ 2. The extremes of the §4.2 closed forms over a box are at
        its corners (sensitivity and conditional variance are monotone in each
        parameter there), so 2 already gives the max and min; open intervals such as
        k₁ ∈ (3, 3.5) are closed here, giving the supremum.

    Returns
    -------
    tuple of dict
        One dict per combination (the Cartesian product, in the mapping's order).

    Examples
    --------
    >>> theta_grid({"k1": (3.0, 3.5), "sd": 15.0})
    ({'k1': 3.0, 'sd': 15.0}, {'k1': 3.5, 'sd': 15.0})
    """
    if not isinstance(ranges, Mapping) or not ranges:
        raise ParameterTypeError("ranges must be a non-empty mapping of parameter -> values")
    pts = check_positive_int(points, "points", minimum=2)
    axes: list[list[float]] = []
    for name, spec in ranges.items():
        if isinstance(spec, tuple) and len(spec) == 2:
            lo = check_real(spec[0], f"ranges[{name!r}][0]")
            hi = check_real(spec[1], f"ranges[{name!r}][1]")
            if hi < lo:
                raise ParameterError(f"ranges[{name!r}] must have low <= high, got {spec!r}")
            axes.append([float(v) for v in np.linspace(lo, hi, pts)] if hi > lo else [lo])
        elif isinstance(spec, Sequence | np.ndarray) and not isinstance(spec, str):
            vals = check_array(spec, f"ranges[{name!r}]", ndim=1)
            axes.append([float(v) for v in vals])
        else:
            axes.append([check_real(spec, f"ranges[{name!r}]")])
    names = list(ranges)
    return tuple(dict(zip(names, combo, strict=True)) for combo in itertools.product(*axes))


# ---------------------------------------------------------------------------- §4.2 closed forms
def _stack_moments(means: Any, covariances: Any) -> tuple[np.ndarray, np.ndarray]:
    mu = check_array(means, "means", ndim=(1, 2))
    mu = mu.reshape(1, -1) if mu.ndim == 1 else mu
    p = mu.shape[1]
    cov = check_covariance(covariances, "covariances", dim=p)
    cov = cov.reshape(1, p, p) if cov.ndim == 2 else cov
    k = max(mu.shape[0], cov.shape[0])
    if mu.shape[0] not in (1, k) or cov.shape[0] not in (1, k):
        raise ParameterError(
            f"means ({mu.shape[0]} thetas) and covariances ({cov.shape[0]} thetas) disagree"
        )
    return np.broadcast_to(mu, (k, p)), np.broadcast_to(cov, (k, p, p))


def _columns(
    sensitive: int, queried: int | Sequence[int] | np.ndarray, p: int
) -> tuple[int, np.ndarray]:
    i = check_positive_int(sensitive, "sensitive", minimum=0)
    if i >= p:
        raise ParameterError(f"sensitive must be a column index below {p}, got {i}")
    js = np.atleast_1d(np.asarray(queried))
    if js.ndim != 1 or js.size == 0 or not np.issubdtype(js.dtype, np.integer):
        raise ParameterTypeError(
            f"queried must be a column index or a list of them, got {queried!r}"
        )
    if np.any((js < 0) | (js >= p)):
        raise ParameterError(f"queried must hold column indices in [0, {p}), got {js.tolist()}")
    if len(set(js.tolist())) != js.size:
        raise ParameterError(f"queried must not repeat a column, got {js.tolist()}")
    return i, js.astype(np.intp)


def gaussian_conditional(
    means: Any,
    covariances: Any,
    *,
    sensitive: int,
    queried: int | Sequence[int] | np.ndarray,
    values: Any,
    n: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Law of the column means F given the mean g of the sensitive column (Zhang et al. §4.2).

    Records are i.i.d. N(μ, V) (one (μ, V) per θ); g and F average columns i and J over
    n records, so (g, F) ~ N((μ_i, μ_J), V/n) and, given g = a,

        E[F | g = a] = μ_J + (V_Ji / V_ii)(a − μ_i),
        Cov(F | g = a) = (V_JJ − V_Ji V_iJ / V_ii) / n.

    Parameters
    ----------
    means : array_like, shape (p,) or (k, p)
        μ per θ (p attributes).
    covariances : array_like, shape (p, p) or (k, p, p)
        V per θ; V_ii must be > 0.
    sensitive : int
        Column i of the sensitive attribute.
    queried : int or sequence of int
        Columns J averaged by F (q of them).
    values : array_like, shape (s,)
        Secret values a of g.
    n : int
        Records per dataset.

    Returns
    -------
    cond_means : ndarray, shape (k, s, q)
        E[F | g = a, θ].
    cond_covs : ndarray, shape (k, q, q)
        Cov(F | g, θ) (the same for every a).
    """
    mu, cov = _stack_moments(means, covariances)
    i, js = _columns(sensitive, queried, mu.shape[1])
    a = check_array(values, "values", ndim=1)
    nn = check_positive_int(n, "n")
    vii = cov[:, i, i]
    if np.any(vii <= 0):
        t = int(np.argmax(vii <= 0))
        raise ParameterError(
            f"the sensitive column {i} must have positive variance; theta {t} has {vii[t]!r}"
        )
    vji = cov[:, js, i]  # (k, q)
    slope = vji / vii[:, None]
    shift = a[None, :, None] - mu[:, i, None, None]  # (k, s, 1)
    cond_means = mu[:, js][:, None, :] + slope[:, None, :] * shift
    cond_covs = (cov[:, js][:, :, js] - vji[:, :, None] * vji[:, None, :] / vii[:, None, None]) / nn
    return cond_means, (cond_covs + np.swapaxes(cond_covs, 1, 2)) / 2


@dataclass(frozen=True)
class GaussianAttributeBounds:
    """Δ_iF and min_θ Var(F | g_i, θ) over a Θ, from the §4.2 closed forms."""

    #: max_θ ‖V_Ji‖₂ / V_ii · d(U) (Zhang et al. 2022, §4.2; |V_ij/V_ii| d(U) for one column).
    sensitivity: float
    #: min_θ of the smallest eigenvalue of (V_JJ − V_Ji V_iJ / V_ii)/n (the conditional
    #: variance for one column).
    min_variance: float
    #: ndarray, shape (k,)
    #: The sensitivity under each θ.
    sensitivities: np.ndarray
    #: ndarray, shape (k,)
    #: The smallest conditional variance under each θ.
    variances: np.ndarray
    #: The θ (index) attaining each extreme.
    argmax_sensitivity: int
    argmin_variance: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            "sensitivity": self.sensitivity,
            "min_variance": self.min_variance,
            "sensitivities": self.sensitivities.tolist(),
            "variances": self.variances.tolist(),
            "argmax_sensitivity": self.argmax_sensitivity,
            "argmin_variance": self.argmin_variance,
        }


def gaussian_attribute_bounds(
    means: Any,
    covariances: Any,
    *,
    sensitive: int,
    queried: int | Sequence[int],
    n: int,
    diameter: float,
) -> GaussianAttributeBounds:
    """Max sensitivity and min conditional variance over Θ (Zhang et al. 2022, §4.2).

    Parameters
    ----------
    means : array_like, shape (p,) or (k, p)
        μ per θ.
    covariances : array_like, shape (p, p) or (k, p, p)
        V per θ.
    sensitive, queried, n
        As in :func:`gaussian_conditional`.
    diameter : float
        d(U) = max |a − b| over the secret pairs, ≥ 0.

    Returns
    -------
    GaussianAttributeBounds
    """
    d = check_real(diameter, "diameter", low=0.0)
    mu, cov = _stack_moments(means, covariances)
    i, js = _columns(sensitive, queried, mu.shape[1])
    # Two secret values d apart give exactly the largest mean difference.
    cm, cc = gaussian_conditional(mu, cov, sensitive=i, queried=js, values=[0.0, d], n=n)
    sens = np.linalg.norm(cm[:, 1] - cm[:, 0], axis=1)
    var = np.linalg.eigvalsh(cc)[:, 0]
    hi, lo = int(np.argmax(sens)), int(np.argmin(var))
    return GaussianAttributeBounds(float(sens[hi]), float(var[lo]), sens, var, hi, lo)


def _pair_indices(
    secret_pairs: Sequence[Sequence[Hashable]] | None, values: tuple[Hashable, ...]
) -> list[tuple[int, int]]:
    s = len(values)
    if secret_pairs is None:
        return [(a, b) for a in range(s) for b in range(a + 1, s)]
    if isinstance(secret_pairs, str) or not isinstance(secret_pairs, Sequence):
        raise ParameterTypeError(f"secret_pairs must be a sequence of pairs, got {secret_pairs!r}")
    where = {v: k for k, v in enumerate(values)}
    out: list[tuple[int, int]] = []
    for pair in secret_pairs:
        if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise ParameterError(f"each secret pair must be a pair (a, b), got {pair!r}")
        idx = []
        for item in pair:
            if isinstance(item, Hashable) and item in where:
                idx.append(where[item])
            else:
                raise ParameterError(
                    f"secret pair {pair!r}: {item!r} is not a secret value {list(values)!r}"
                )
        if idx[0] == idx[1]:
            raise ParameterError(f"secret pair {pair!r} pairs a secret with itself")
        out.append((idx[0], idx[1]))
    if not out:
        raise ParameterError("secret_pairs must contain at least one pair")
    return out


def _conditional_covariances(covariances: Any, k: int, s: int, m: int) -> np.ndarray:
    """Normalise variances/covariances to shape (k, s, m, m)."""
    arr = check_array(covariances, "covariances", ndim=(0, 1, 2, 3, 4))
    if m == 1 and arr.ndim <= 2 and arr.shape != (1, 1):
        # Variances of a scalar query: shared, per θ, or per (θ, secret).
        if arr.ndim == 1:
            if arr.shape[0] != k:
                raise ParameterError(
                    f"covariances (variances per theta) must have length {k}, got {arr.shape}"
                )
            arr = arr[:, None]
        elif arr.ndim == 2 and arr.shape != (k, s):
            raise ParameterError(
                f"covariances (variances per theta and secret) must have shape ({k}, {s}), "
                f"got {arr.shape}"
            )
        out = np.broadcast_to(arr, (k, s))[..., None, None]
    else:
        want = {2: (m, m), 3: (k, m, m), 4: (k, s, m, m)}
        if arr.ndim not in want or arr.shape != want[arr.ndim]:
            raise ParameterError(
                f"covariances must have shape ({m}, {m}), ({k}, {m}, {m}) or "
                f"({k}, {s}, {m}, {m}), got {arr.shape}"
            )
        if arr.ndim == 2:
            arr = arr[None, None]
        elif arr.ndim == 3:
            arr = arr[:, None]
        out = np.broadcast_to(arr, (k, s, m, m))
    return check_covariance(out.reshape(k * s, m, m), "covariances", dim=m)


def attribute_query_model(
    means: Any,
    covariances: Any,
    *,
    secret_values: Sequence[Hashable] | None = None,
    secret_pairs: Sequence[Sequence[Hashable]] | None = None,
    theta_labels: Sequence[Hashable] | None = None,
    statistics: Sequence[str] | None = None,
    fitted: str | None = None,
) -> GaussianQueryModel:
    """The query model of dataset attribute privacy, for :func:`distpriv.calibrate` ("apgm").

    Zhang, Ohrimenko & Cummings 2022, Def. 4 and Alg. 1: one hypothesis per combination
    (θ, secret s_a), with law N(E[F | s_a, θ], Cov(F | s_a, θ)); the pairs Ψ are the secret
    pairs (s_a, s_b) within each θ (Pufferfish compares secrets under the same θ).

    Parameters
    ----------
    means : array_like, shape (k, s) or (k, s, m)
        E[F(X) | s_a, θ] for k distributions θ and s secret values (m statistics; 2-D
        means m = 1).
    covariances : array_like
        Cov(F(X) | s_a, θ): shape (m, m), (k, m, m) or (k, s, m, m); for m = 1 also the
        variances as a scalar, shape (k,) (per θ) or (k, s). Thm 1 assumes one
        conditional variance per θ for all secrets; when they differ, the guarantee says
        so.
    secret_values : sequence of hashable, optional
        Labels of the s secrets (e.g. the values a of g). Default 0..s-1.
    secret_pairs : sequence of pairs, optional
        Q, as pairs of secret values. Default: every pair.
    theta_labels : sequence of hashable, optional
        Labels of the k distributions. Default θ0..θ(k-1).
    statistics : sequence of str, optional
        Names of the m statistics.
    fitted : str, optional
        How the Gaussians were obtained, when they approximate the truth.

    Returns
    -------
    GaussianQueryModel
        k·s hypotheses labelled ``"θ: s"`` (just ``"s"`` when k = 1), θ-major, and
        k·|Q| pairs.

    Examples
    --------
    Zhang et al. 2022 §4.2, average blood pressure: Δ = 2.5, Var = 2.

    >>> model = attribute_query_model([[0.0, 2.5]], 2.0, secret_values=["below", "above"])
    >>> model.pair_labels
    (('below', 'above'),)
    """
    mu = check_array(means, "means", ndim=(2, 3))
    mu = mu[..., None] if mu.ndim == 2 else mu
    k, s, m = mu.shape
    if s < 2:
        raise ParameterError(f"means must hold at least two secret values per theta, got {s}")
    vals = tuple(range(s)) if secret_values is None else tuple(secret_values)
    if len(vals) != s:
        raise ParameterError(f"secret_values must have {s} entries, got {len(vals)}")
    if len(set(vals)) != s:
        raise ParameterError(f"secret_values must be distinct, got {vals!r}")
    thetas = tuple(f"θ{t}" for t in range(k)) if theta_labels is None else tuple(theta_labels)
    if len(thetas) != k or len(set(thetas)) != k:
        raise ParameterError(f"theta_labels must be {k} distinct labels, got {thetas!r}")
    pairs = _pair_indices(secret_pairs, vals)
    cov = _conditional_covariances(covariances, k, s, m)
    labels = [f"{t}: {v}" if k > 1 else str(v) for t in thetas for v in vals]
    if len(set(labels)) != len(labels):
        raise ParameterError("theta and secret labels must give distinct hypotheses")
    psi = [(t * s + a, t * s + b) for t in range(k) for a, b in pairs]
    return GaussianQueryModel(
        mu.reshape(k * s, m),
        cov,
        psi,
        labels=labels,
        statistics=statistics,
        fitted=fitted,
    )


def gaussian_attribute_model(
    means: Any,
    covariances: Any,
    *,
    sensitive: int,
    queried: int | Sequence[int],
    n: int,
    secret_values: Sequence[float],
    secret_pairs: Sequence[Sequence[float]] | None = None,
    theta_labels: Sequence[Hashable] | None = None,
    statistics: Sequence[str] | None = None,
) -> GaussianQueryModel:
    """The §4.2 query model: Gaussian records, F and g averages (Zhang et al. 2022, §4.2).

    Parameters
    ----------
    means : array_like, shape (p,) or (k, p)
        μ of the records under each θ.
    covariances : array_like, shape (p, p) or (k, p, p)
        V under each θ.
    sensitive : int
        Column i of the sensitive attribute; g is its average.
    queried : int or sequence of int
        Columns averaged by F.
    n : int
        Records per dataset.
    secret_values : sequence of float
        The values a of g that are secrets (s_a: g(X_i) = a).
    secret_pairs : sequence of pairs of float, optional
        Q. Default: every pair.
    theta_labels, statistics
        As in :func:`attribute_query_model`.

    Returns
    -------
    GaussianQueryModel
        Hypotheses (θ, a) with the closed-form conditional mean and covariance.
    """
    vals = check_array(secret_values, "secret_values", ndim=1)
    cm, cc = gaussian_conditional(
        means, covariances, sensitive=sensitive, queried=queried, values=vals, n=n
    )
    return attribute_query_model(
        cm,
        cc,
        secret_values=[float(v) for v in vals],
        secret_pairs=secret_pairs,
        theta_labels=theta_labels,
        statistics=statistics,
    )
