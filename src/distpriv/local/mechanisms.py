"""Point obfuscation mechanisms as stochastic matrices with vectorised samplers.

Each mechanism A: X → D(Y) is a row-stochastic matrix ``A[x, y]`` (inputs by outputs):

* :func:`randomized_response` — k-ary randomized response, ε-DP (KM 2019a, Example 2);
* :func:`planar_laplace` — A(x)[y] ∝ exp(−ε d(x, y)) over Y, the planar Laplace mechanism
  discretised to the regions Y (KM 2019a §5.2, §7.4; Andrés et al. 2013);
* :func:`planar_gaussian` — A(x)[y] ∝ exp(−d(x, y)² / 2σ²) over Y (KM 2019a §7.4);
* :func:`restricted_laplace` — the (ε_A, r)-RL mechanism of KM 2019a, Def. 12: Laplace
  weights only within radius r of x;
* :func:`matrix_mechanism` — any user-given matrix.

Kernel mechanisms are normalised over the finite Y, so their weights are computed in log
space (no underflow for large ε·d) and their exact XDP constant can be measured
(:meth:`MatrixMechanism.xdp_epsilon`): normalisation makes the discretised planar Laplace
with parameter ε at most 2ε-XDP, and usually close to ε.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..accounting import max_mahalanobis_distance
from ..divergences import check_distribution, check_stochastic_matrix
from ..errors import ParameterError, ParameterTypeError
from ..guarantees import to_jsonable
from ..util.validation import (
    RngLike,
    check_array,
    check_delta,
    check_epsilon,
    check_positive_int,
    check_real,
    check_rng,
    readonly,
)
from .domains import Domain

__all__ = [
    "MatrixMechanism",
    "check_radius",
    "matrix_mechanism",
    "planar_gaussian",
    "planar_laplace",
    "randomized_response",
    "restricted_laplace",
]

# Distances within this relative slack of the radius count as inside it: coordinates like
# 0.25 km give distances that differ from a "round" radius only by rounding.
_RADIUS_RTOL = 1e-9
# Inputs of the XDP computation are processed in blocks of rows to bound memory.
_XDP_BLOCK = 32


@dataclass(frozen=True, eq=False)
class MatrixMechanism:
    """A local mechanism A: X → D(Y) given by its row-stochastic matrix."""

    #: ``"rr"``, ``"pl"``, ``"pg"``, ``"rl"`` or a user name.
    name: str
    #: ndarray, shape (n_x, n_y)
    #: A[x, y] = Pr[A(x) = y] (read-only).
    matrix: np.ndarray
    #: The parameters it was built with (ε, σ, r…).
    params: Mapping[str, Any] = field(default_factory=dict)
    #: X, Y and the metric, when known (needed for losses and XDP).
    domain: Domain | None = None
    #: ndarray, shape (n_x, n_y)
    #: ln A[x, y], exact for the kernel mechanisms even where A underflows to 0.
    log_matrix: np.ndarray | None = field(default=None, repr=False)
    _cdf: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        a = check_stochastic_matrix(self.matrix, "matrix")
        if self.domain is not None and a.shape != (self.domain.n_inputs, self.domain.n_outputs):
            raise ParameterError(
                f"matrix must have shape (n_x, n_y) = "
                f"({self.domain.n_inputs}, {self.domain.n_outputs}) to match the domain, "
                f"got {a.shape}"
            )
        if self.log_matrix is None:
            with np.errstate(divide="ignore"):
                log_a = np.log(a)
        else:
            log_a = np.asarray(self.log_matrix, dtype=np.float64)
        cdf = np.cumsum(a, axis=1)
        cdf[:, -1] = 1.0
        # Row x of the flattened table holds x + cdf[x]: one searchsorted samples every row.
        table = (cdf + np.arange(a.shape[0])[:, None]).ravel()
        set_ = object.__setattr__
        set_(self, "matrix", readonly(a))
        set_(self, "log_matrix", readonly(log_a))
        set_(self, "_cdf", readonly(table))
        set_(self, "params", MappingProxyType(dict(self.params)))

    @property
    def n_inputs(self) -> int:
        """|X|."""
        return int(self.matrix.shape[0])

    @property
    def n_outputs(self) -> int:
        """|Y|."""
        return int(self.matrix.shape[1])

    def lift(self, lam: ArrayLike) -> np.ndarray:
        """A#(λ) = λA (KM 2019a §2.1).

        Parameters
        ----------
        lam : array_like, shape (n_x,) or (batch, n_x)

        Returns
        -------
        ndarray, shape (n_y,) or (batch, n_y)
        """
        p = check_distribution(lam, "lam", size=self.n_inputs, ndim=(1, 2))
        return p @ self.matrix

    def sample(self, x: ArrayLike, rng: RngLike = None) -> np.ndarray:
        """Draw A(x) for a batch of inputs in one vectorised call (inverse CDF).

        Parameters
        ----------
        x : array_like of int, shape (batch,)
            Input indices in [0, n_x).
        rng : int, Generator or None

        Returns
        -------
        ndarray of int64, shape (batch,)
            Output indices in [0, n_y).

        Notes
        -----
        All rows are searched at once in the flattened table ``x + cdf[x]``; outputs with
        probability below about 1e-13·n_x are merged into their neighbours by rounding.
        """
        idx = _check_indices(x, "x", self.n_inputs)
        gen = check_rng(rng)
        u = gen.random(idx.shape)
        pos = np.searchsorted(self._cdf, idx + u, side="right")
        return np.clip(pos - idx * self.n_outputs, 0, self.n_outputs - 1)

    def expected_loss(self, lam: ArrayLike, distances: ArrayLike | None = None) -> float:
        """Expected quality loss Σ_x Σ_y λ[x] A(x)[y] d(x, y) (KM 2019b, Def. 17).

        Parameters
        ----------
        lam : array_like, shape (n_x,)
        distances : array_like, shape (n_x, n_y), optional
            d(x, y); the domain's by default.
        """
        p = check_distribution(lam, "lam", size=self.n_inputs)
        d = _distances(self, distances)
        return float(p @ (self.matrix * d).sum(axis=1))

    @property
    def _log_a(self) -> np.ndarray:
        # __post_init__ always fills log_matrix; None is only the constructor's default.
        if self.log_matrix is None:  # pragma: no cover - an invariant, not user input
            raise RuntimeError("MatrixMechanism.log_matrix was not filled")
        return self.log_matrix

    def dp_epsilon(self) -> float:
        """Exact ε of (ε, 0)-DP w.r.t. all pairs of inputs: max_{x, x', y} ln A(x)[y] / A(x')[y].

        By Thm 1 of KM 2019a the mechanism then provides (ε, 0)-DistP for every pair of
        input distributions. ``inf`` when some output has probability 0 for one input
        and not for another.
        """
        la = self._log_a
        with np.errstate(invalid="ignore"):
            spread = la.max(axis=0) - la.min(axis=0)
        spread = np.where(np.isnan(spread), 0.0, spread)  # all −inf: never output
        return float(max(spread.max(), 0.0))

    def xdp_epsilon(self) -> float:
        """Exact XDP constant max_{x ≠ x'} D∞(A(x) ‖ A(x')) / d(x, x') (KM 2019a, Def. 4).

        With it, Thm 2 of KM 2019a bounds the DistP of any pair by ε_XDP · W∞,d(λ₀, λ₁).
        Needs a domain whose input points are distinct.
        """
        if self.domain is None:
            raise ParameterError("xdp_epsilon needs a mechanism built on a Domain")
        dx = self.domain.input_distances
        n = self.n_inputs
        off = ~np.eye(n, dtype=bool)
        if np.any(dx[off] <= 0):
            raise ParameterError("xdp_epsilon needs distinct input points (d(x, x') > 0)")
        la = self._log_a
        best = 0.0
        for start in range(0, n, _XDP_BLOCK):
            block = la[start : start + _XDP_BLOCK]
            with np.errstate(invalid="ignore"):
                # diff[i, j, y] = ln A(x_i)[y] − ln A(x_j)[y], over y where A(x_i)[y] > 0.
                diff = block[:, None, :] - la[None, :, :]
            diff = np.where(np.isfinite(block)[:, None, :], diff, -np.inf)
            dmax = diff.max(axis=2)
            ratio = dmax / np.where(
                off[start : start + _XDP_BLOCK], dx[start : start + _XDP_BLOCK], 1
            )
            ratio = np.where(off[start : start + _XDP_BLOCK], ratio, -np.inf)
            best = max(best, float(ratio.max()))
        return best

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description (not the matrix)."""
        return to_jsonable(
            {
                "name": self.name,
                "kind": "matrix",
                "n_inputs": self.n_inputs,
                "n_outputs": self.n_outputs,
                "params": dict(self.params),
            }
        )


def _check_indices(x: ArrayLike, name: str, n: int) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu":
        if (
            arr.dtype.kind == "f"
            and arr.size
            and np.all(np.isfinite(arr))
            and np.all(arr == np.round(arr))
        ) or arr.size == 0:
            arr = arr.astype(np.int64)
        else:
            raise ParameterTypeError(f"{name} must be integer indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ParameterError(
            f"{name} must be indices in [0, {n}), got values in [{arr.min()}, {arr.max()}]"
        )
    return arr


def _distances(mech: Any, distances: ArrayLike | None) -> np.ndarray:
    if distances is None:
        if mech.domain is None:
            raise ParameterError("give distances, or build the mechanism on a Domain")
        return mech.domain.distances
    d = check_array(distances, "distances", ndim=2, nonnegative=True)
    if d.shape != (mech.n_inputs, mech.n_outputs):
        raise ParameterError(
            f"distances must have shape ({mech.n_inputs}, {mech.n_outputs}), got {d.shape}"
        )
    return d


def _kernel(
    name: str, domain: Domain, log_weights: np.ndarray, params: dict[str, Any]
) -> MatrixMechanism:
    """Normalise ``exp(log_weights)`` row by row in log space."""
    with np.errstate(invalid="ignore"):
        top = log_weights.max(axis=1, keepdims=True)
        shifted = log_weights - top
    norm = np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    log_a = shifted - norm
    mat = np.exp(log_a)
    # Rounding leaves row sums within a few ulps of 1; make them exact for the sampler.
    mat /= mat.sum(axis=1, keepdims=True)
    return MatrixMechanism(name, mat, params, domain, log_matrix=log_a)


def _check_domain(domain: object) -> Domain:
    if not isinstance(domain, Domain):
        raise ParameterTypeError(f"domain must be a Domain, got {type(domain).__name__}")
    return domain


def check_radius(radius: object, name: str = "radius") -> float:
    """r ≥ 0, finite or ``inf`` (no restriction)."""
    real = isinstance(radius, numbers.Real) and not isinstance(radius, bool)
    if real and math.isinf(float(radius)) and float(radius) > 0:  # type: ignore[arg-type]
        return math.inf
    return check_real(radius, name, low=0.0)


def matrix_mechanism(
    matrix: ArrayLike, *, name: str = "custom", domain: Domain | None = None
) -> MatrixMechanism:
    """Wrap a row-stochastic matrix (rows summing to 1 within 1e-9) as a mechanism."""
    if domain is not None:
        _check_domain(domain)
    return MatrixMechanism(str(name), np.asarray(matrix), {}, domain)


def randomized_response(domain: Domain | int, *, epsilon: float) -> MatrixMechanism:
    """k-ary randomized response: report the true point w.p. e^ε / (e^ε + |Y| − 1).

    Every other output has probability 1 / (e^ε + |Y| − 1), so the mechanism is ε-DP
    w.r.t. all pairs of inputs and, by KM 2019a Thm 1 (Example 2), ε-DistP w.r.t. every
    pair of input distributions (Kairouz et al. 2016).

    Parameters
    ----------
    domain : Domain or int
        The domain (the true output of x is its nearest output point), or the size k of
        X = Y = {0, …, k − 1}.
    epsilon : float
        ε > 0.

    Returns
    -------
    MatrixMechanism, shape (n_x, n_y)
    """
    eps = check_epsilon(epsilon)
    if isinstance(domain, Domain):
        n_x, n_y, true = domain.n_inputs, domain.n_outputs, domain.nearest_output
        dom: Domain | None = domain
    else:
        n_y = check_positive_int(domain, "domain", minimum=2)
        n_x, true, dom = n_y, np.arange(n_y), None
    if n_y < 2:
        raise ParameterError("randomized response needs at least 2 outputs")
    # ln(e^ε + n − 1) without overflow for large ε.
    log_norm = eps + math.log1p((n_y - 1) * math.exp(-eps))
    log_a = np.full((n_x, n_y), -log_norm)
    log_a[np.arange(n_x), true] = eps - log_norm
    mat = np.exp(log_a)
    mat /= mat.sum(axis=1, keepdims=True)
    return MatrixMechanism("rr", mat, {"epsilon": eps}, dom, log_matrix=log_a)


def planar_laplace(domain: Domain, *, epsilon: float) -> MatrixMechanism:
    """Planar Laplace discretised to Y: A(x)[y] = e^{−ε d(x,y)} / Σ_{y'} e^{−ε d(x,y')}.

    The (ε, ∞)-RL mechanism of KM 2019a Def. 12 (KM 2019a §7.4 "PL"). The continuous
    planar Laplace is ε-XDP (Andrés et al. 2013); normalising over a finite Y makes the
    discretised one at most 2ε-XDP. :meth:`MatrixMechanism.xdp_epsilon` gives the exact
    constant for Thm 2.

    Parameters
    ----------
    domain : Domain
    epsilon : float
        ε > 0, per unit of distance.
    """
    dom = _check_domain(domain)
    eps = check_epsilon(epsilon)
    return _kernel("pl", dom, -eps * dom.distances, {"epsilon": eps})


def planar_gaussian(
    domain: Domain,
    *,
    sigma: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    sensitivity: float = 1.0,
) -> MatrixMechanism:
    """Planar Gaussian discretised to Y: A(x)[y] ∝ exp(−d(x, y)² / 2σ²).

    Give either ``sigma`` or (``epsilon``, ``delta``): then σ = sensitivity / D*(ε, δ), with
    D* the exact (analytic) Gaussian calibration of :func:`distpriv.accounting.
    max_mahalanobis_distance` — (ε, δ)-indistinguishability of the continuous Gaussian for
    inputs ``sensitivity`` apart. The discretised mechanism's exact DistP is measured by
    :mod:`distpriv.local.profiles` (KM 2019a §7.4 "PG").

    Parameters
    ----------
    domain : Domain
    sigma : float, optional
        Standard deviation per coordinate (> 0), in units of distance.
    epsilon, delta : float, optional
        Calibration target, ε > 0 and δ ∈ (0, 1).
    sensitivity : float
        Distance between the inputs the calibration protects (> 0).
    """
    dom = _check_domain(domain)
    if sigma is not None:
        if epsilon is not None or delta is not None:
            raise ParameterError("give sigma or (epsilon, delta), not both")
        s = check_real(sigma, "sigma", low=0.0, low_inclusive=False)
        params: dict[str, Any] = {"sigma": s}
    else:
        if epsilon is None or delta is None:
            raise ParameterError("planar_gaussian needs sigma, or both epsilon and delta")
        eps = check_epsilon(epsilon)
        dlt = check_delta(delta, positive=True)
        sens = check_real(sensitivity, "sensitivity", low=0.0, low_inclusive=False)
        s = sens / max_mahalanobis_distance(epsilon=eps, delta=dlt)
        params = {"sigma": s, "epsilon": eps, "delta": dlt, "sensitivity": sens}
    return _kernel("pg", dom, -(dom.distances**2) / (2.0 * s * s), params)


def restricted_laplace(domain: Domain, *, epsilon: float, radius: float) -> MatrixMechanism:
    """The (ε_A, r)-restricted Laplace mechanism (KM 2019a, Def. 12).

    A(x)[y] = e^{−ε_A d(x,y)} / Σ_{y' ∈ Y_{x,r}} e^{−ε_A d(x,y')} for y ∈ Y_{x,r} =
    {y : d(x, y) ≤ r}, and 0 otherwise: Laplace noise kept within radius r, so the
    worst-case loss is at most r. It is not DP (zeros outside the radius), but the tupling
    mechanism built on it provides DistP (Thm 3).

    Parameters
    ----------
    domain : Domain
    epsilon : float
        ε_A ≥ 0 (0: uniform within the radius).
    radius : float
        r ≥ 0, or ``inf`` for the discretised planar Laplace. Distances within a relative
        1e-9 of r count as inside.

    Raises
    ------
    ParameterError
        If r < 0, or if some input has no output within distance r.
    """
    dom = _check_domain(domain)
    eps = check_real(epsilon, "epsilon", low=0.0)
    r = check_radius(radius)
    d = dom.distances
    inside = (
        d <= r * (1.0 + _RADIUS_RTOL) + _RADIUS_RTOL if math.isfinite(r) else np.ones_like(d, bool)
    )
    empty = np.flatnonzero(~inside.any(axis=1))
    if empty.size:
        need = float(d[empty].min(axis=1).max())
        # Domain.__post_init__ always sets the labels ("0", "1", ... by default).
        labels = dom.input_labels
        first = str(empty[0]) if labels is None else labels[empty[0]]
        raise ParameterError(
            f"radius={r!r} leaves {empty.size} input(s) (first: {first!r}) "
            f"with no output within distance r; use radius >= {need:.6g}"
        )
    log_w = np.where(inside, -eps * d, -np.inf)
    return _kernel("rl", dom, log_w, {"epsilon": eps, "radius": r})
