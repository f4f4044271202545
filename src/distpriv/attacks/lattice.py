"""Exact grid (lattice) decoding of releases f + Z when f lies on a lattice.

Statistics computed from a small subset often take values on a lattice: integer counts
(step 1), sums of integer columns, means of integer columns over n rows (step 1/n). When
the noise Z has one main direction u (rank-one noise such as DauM or DirM, Chen &
Ohrimenko 2023 Alg. 1, Thm 4.3) plus at most a small *floor* in the other directions
(Σ_Z = s² u uᵀ + Σ_floor), the release y = f + Z determines f: the line y − t·u meets
the lattice at (nearly) one point. The decoder below finds the lattice point closest to y
in the Mahalanobis metric of Σ_Z (a maximum-likelihood decoder when f is uniform on the
lattice), by enumerating the lattice points of the coordinate with the fewest candidates
along u and, for each, rounding the other coordinates in turn while refining t by weighted
least squares (successive cancellation; a small-dimension closest-vector search).

Tolerance. With no floor, the only deviation of y from the line through f is
floating-point error: the secure sampler (:func:`distpriv.noise.secure_add`) rounds each
whitened noise coordinate to the grid γℤ (γ = :func:`distpriv.noise.grid_rounding`'s
``grid``) *along the noise basis*, which moves y along u only; the numpy sampler computes
y_k = f_k + fl(t·u_k). Both then incur at most a few dot products of length m in float64.
With the unit roundoff u₀ = 2⁻⁵³ and γ_m = m·u₀/(1 − m·u₀) (Higham 2002, Thm 3.1/Lemma 3.1),
every coordinate's off-line deviation, and the decoder's own error in computing t and
y − t·u, is below ``_FLOAT_SAFETY`` · γ_{m+2} · (|y_k| + |origin_k| + s·|u_k|·R) (R the
searched range in noise scales), plus γ/2 noise scales per basis column for the grid
rounding. That bound (in grid steps) is the decoder's floor when the noise has none, so
the result does not depend on the float residuals of a particular numpy/BLAS build: the
true lattice point is within the bound, any other point on a generic line is off it by a
fixed fraction of a step.

Any decoder is a fixed function of the release, so the sets it defines give valid
(certified) lower bounds on δ whatever its success rate; the rate only decides how strong
the bound is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..noise import Noise, grid_rounding

__all__ = ["LatticeDecoder", "detect_lattice", "lattice_decoder"]

# Values within this many steps of a lattice point count as on it (detection only; float
# error of means of integers is about 1e-13 steps).
_DETECT_TOL = 1e-6
# Searched noise range along the main direction, in its standard deviations.
_REACH = 7.0
# A main direction must have a standard deviation above this many grid steps (in the
# coordinate with the fewest candidates) for decoding to make sense; floor directions
# must be below _MAX_FLOOR steps, else rounding cannot find the lattice point.
_MAX_FLOOR = 2.0
_MAX_CANDIDATES = 16384
_CHUNK_ELEMENTS = 2_000_000
_UNIT_ROUNDOFF = 2.0**-53
_FLOAT_SAFETY = 8.0


def detect_lattice(samples: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    """(origin, step) per statistic when every sample lies on a lattice, else None.

    Parameters
    ----------
    samples : list of ndarray, shape (n_h, m)

    Returns
    -------
    (origin, steps) : ndarray, shape (m,) each, or None
    """
    x = np.vstack(samples)
    origin = x[0].copy()
    steps = np.empty(x.shape[1])
    for k in range(x.shape[1]):
        col = x[:, k] - origin[k]
        scale = max(1.0, float(np.max(np.abs(x[:, k]))))
        gaps = np.diff(np.unique(x[:, k]))
        gaps = gaps[gaps > 1e-9 * scale]
        if gaps.size == 0:
            return None
        h = float(gaps.min())
        idx = np.round(col / h)
        if np.max(np.abs(col / h - idx)) > _DETECT_TOL:
            return None
        # Least-squares step over every sample: removes the float error of one gap.
        den = float(np.sum(idx * idx))
        steps[k] = float(np.sum(idx * col) / den) if den > 0 else h
    return origin, steps


@dataclass(frozen=True)
class LatticeDecoder:
    """Closest lattice point to y in the Mahalanobis metric of rank-one + floor noise.

    All quantities in grid-step units (coordinate k divided by ``steps[k]``).

    Attributes
    ----------
    origin, steps : ndarray, shape (m,)
        The lattice origin + steps·ℤᵐ.
    direction : ndarray, shape (m,)
        Main noise direction u' (unit norm in step units).
    scale : float
        Standard deviation s' of the noise along ``direction`` (steps).
    floor : ndarray, shape (m,)
        Per-coordinate variance of the rest of the noise (steps²), plus the squared
        float-error tolerance.
    tolerance : ndarray, shape (m,)
        The rigorous float-error bound (steps) included in ``floor``.
    """

    origin: np.ndarray
    steps: np.ndarray
    direction: np.ndarray
    scale: float
    floor: np.ndarray
    tolerance: np.ndarray

    @property
    def floor_steps(self) -> float:
        """Largest floor standard deviation without the float tolerance (steps)."""
        return float(np.sqrt(np.max(np.maximum(self.floor - self.tolerance**2, 0.0))))

    def decode(self, y: np.ndarray) -> np.ndarray:
        """The decoded statistics f̂ (on the lattice), shape (n, m); NaN rows if no search.

        Parameters
        ----------
        y : ndarray, shape (n, m)
            Releases.
        """
        u, s = self.direction, self.scale
        z = (y - self.origin) / self.steps  # (n, m) in step units
        order = np.argsort(np.abs(u))
        order = order[np.abs(u[order]) > 0]
        a = int(order[0])  # fewest lattice candidates along u
        reach = _REACH * s * abs(u[a]) + 3.0 * math.sqrt(float(self.floor[a])) + 1.0
        n_cand = 2 * math.ceil(reach) + 1
        out = np.full(y.shape, np.nan)
        if n_cand > _MAX_CANDIDATES:
            return out
        w = 1.0 / self.floor  # (m,)
        prior = 1.0 / (s * s)
        rest = [int(k) for k in order[1:]] + [k for k in range(len(u)) if u[k] == 0]
        batch = max(1, _CHUNK_ELEMENTS // (n_cand * len(u)))
        for start in range(0, z.shape[0], batch):
            zb = z[start : start + batch]
            ka = np.round(zb[:, a])[:, None] + np.arange(-(n_cand // 2), n_cand // 2 + 1)
            k = np.zeros((zb.shape[0], n_cand, len(u)))
            k[:, :, a] = ka
            # Weighted least squares for t given the coordinates fixed so far.
            num = w[a] * u[a] * (zb[:, a, None] - ka)
            den = prior + w[a] * u[a] ** 2
            for c in rest:
                t = num / den
                k[:, :, c] = np.round(zb[:, c, None] - t * u[c])
                num = num + w[c] * u[c] * (zb[:, c, None] - k[:, :, c])
                den = den + w[c] * u[c] ** 2
            r = zb[:, None, :] - k  # (b, K, m)
            # Mahalanobis distance under s² u uᵀ + diag(floor) (Woodbury).
            # = min over t of Σ w (r − t u)² + t²/s², written without cancellation.
            t = np.sum(r * (w * u), axis=2) / (prior + float(np.sum(w * u * u)))
            e = r - t[:, :, None] * u
            dist = np.sum(e * e * w, axis=2) + prior * t * t
            best = np.argmin(dist, axis=1)
            kb = k[np.arange(zb.shape[0]), best]
            out[start : start + batch] = self.origin + kb * self.steps
        return out


def lattice_decoder(
    noise: Noise, lattice: tuple[np.ndarray, np.ndarray], magnitude: np.ndarray
) -> LatticeDecoder | None:
    """A decoder for Gaussian ``noise`` with one main direction on ``lattice``, else None.

    Parameters
    ----------
    noise : Noise
        Gaussian components only (any number: their covariances add).
    lattice : (origin, steps)
        From :func:`detect_lattice`.
    magnitude : ndarray, shape (m,)
        Largest |value| of each statistic (for the float-error bound).

    Returns
    -------
    LatticeDecoder or None
        None when the noise is not Gaussian, has no or several main directions (standard
        deviation above :data:`_MAX_FLOOR` steps), so that rounding cannot find the point.
    """
    if any(c.kind != "gaussian" for c in noise.components if np.any(c.scales > 0)):
        return None
    origin, steps = lattice
    m = noise.dim
    cov = noise.covariance / np.outer(steps, steps)
    vals, vecs = np.linalg.eigh(cov)
    big = vals > _MAX_FLOOR**2
    if int(np.sum(big)) != 1:
        return None
    u = vecs[:, -1]
    s2 = float(vals[-1])
    rest = cov - s2 * np.outer(u, u)
    floor = np.maximum(np.diag(rest), 0.0)
    if float(np.max(floor)) > _MAX_FLOOR**2:
        return None
    # Rigorous float bound (see module docstring), in steps, plus the sampler's grid.
    gm = (m + 2) * _UNIT_ROUNDOFF / (1.0 - (m + 2) * _UNIT_ROUNDOFF)
    s = math.sqrt(s2)
    span = np.abs(magnitude) + np.abs(origin) * 1.0
    tol = _FLOAT_SAFETY * gm * (span / steps + np.abs(u) * s * _REACH + np.abs(u) * s)
    gr = grid_rounding(noise).grid
    basis_reach = np.zeros(m)
    for c in noise.components:
        basis_reach += np.abs(c.basis) @ c.scales
    tol = tol + 0.5 * gr * basis_reach / steps
    return LatticeDecoder(origin, steps, u, s, floor + tol * tol, tol)
