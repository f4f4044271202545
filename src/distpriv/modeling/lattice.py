"""The lattice (grid) each released statistic lives on, detected exactly or refused.

Counts step by 1, sums of an integer column by the column's step, means of them over n
rows by step/n. Noise that leaves some directions of the statistics uncovered (rank-one
DauM/DirM, Chen & Ohrimenko 2023 Alg. 1, Thm 4.3) publishes those directions exactly, and
on such a grid they can pin the whole release (docs/architecture.md §4). The floored mechanisms
(:mod:`distpriv.central.floored`) add a little independent noise, proportional to the
step, in every coordinate; this module finds the step.

Two routes, both with exact rational arithmetic:

* :func:`detect_lattice` — from observed values of a statistic (Monte Carlo samples of the
  model, released tables): the differences to the smallest value are turned into the
  *simplest* rationals (least denominator) within a tolerance that follows from the float
  representation of the values (``ulps`` units in the last place of the largest one, so a
  mean of integers computed as sum/n — correctly rounded — is recognised), and the step is
  their exact gcd. Values that need a common denominator above ``max_denominator`` are not
  on a lattice that floats can show: the function refuses (``step=None`` with the reason)
  rather than guess.
* :func:`query_lattices` — from the declared statistic types: the per-row feature of each
  linear statistic (the indicator of a ``count_if``, the column of a ``sum``/``avg``) is
  detected on the modelling table, and the statistic's step follows from its scale
  (``sum``: the feature's step; ``mean``: step / n).

Decoding
--------
Exact grid (lattice) decoding of releases f + Z when f lies on a lattice.

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
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..noise import Noise, grid_rounding
from ..util.records import field_values
from ..util.validation import check_positive_int

__all__ = [
    "Lattice",
    "LatticeDecoder",
    "detect_lattice",
    "detect_sample_lattice",
    "lattice_decoder",
    "lattice_steps",
    "query_lattices",
]

# Tolerance in units in the last place of the largest |value|: a sum of n integers is
# exact and sum/n is correctly rounded (0.5 ulp); sums of decimals (e.g. 71.9) carry up to
# about n ulps of accumulated rounding. 4096 ulps covers n up to thousands of rows while a
# continuous value still almost never fits a small common denominator (see refusal below).
DEFAULT_ULPS = 4096
# Largest common denominator of the differences accepted as a lattice (means over up to
# 10^6 rows of integer columns; 10^5 rows of one-decimal columns).
DEFAULT_MAX_DENOMINATOR = 10**6
# At most this many distinct values enter the rational arithmetic; all are re-checked.
_MAX_RATIONAL = 2000


@dataclass(frozen=True)
class Lattice:
    """Where one statistic's values lie: origin + step·ℤ, or why that is not known."""

    statistic: str
    #: The lattice step h (``None``: not on a lattice, or not decidable).
    step: float | None
    #: A lattice point, reduced to [0, h).
    origin: float | None
    #: ``"values"`` (observed values of the statistic), ``"declared"`` (the statistic's
    #: type and the per-row feature's lattice on the modelling table) or ``"given"``.
    source: str
    #: How it was detected, or the reason for refusing.
    detail: str

    @property
    def on_lattice(self) -> bool:
        """True when a step was found."""
        return self.step is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return field_values(self)


def _simplest_between(lo: Fraction, hi: Fraction) -> Fraction:
    """The rational of least denominator in [lo, hi] (0 ≤ lo ≤ hi), exactly.

    Continued-fraction descent (the Stern–Brocot argument): if an integer lies in the
    interval it is the answer; otherwise both ends share their integer part a, and the
    answer is a + 1 / (simplest rational in [1/(hi − a), 1/(lo − a)]).
    """
    a = math.floor(lo)
    if a == lo:
        return Fraction(a)
    if a + 1 <= hi:
        return Fraction(a + 1)
    return a + 1 / _simplest_between(1 / (hi - a), 1 / (lo - a))


def _refuse(name: str, source: str, why: str) -> Lattice:
    return Lattice(name, None, None, source, why)


def detect_lattice(
    values: Any,
    *,
    name: str = "statistic",
    ulps: int = DEFAULT_ULPS,
    max_denominator: int = DEFAULT_MAX_DENOMINATOR,
    min_distinct: int = 3,
    source: str = "values",
) -> Lattice:
    """The lattice origin + h·ℤ that the observed values of one statistic lie on.

    Parameters
    ----------
    values : array_like, shape (n,)
        Observed values (e.g. one column of Monte Carlo samples of f_θ, pooled over θ).
    name : str
        The statistic's name (for the result and messages).
    ulps : int
        Tolerance, in units in the last place of the largest |value|, for a value to count
        as a lattice point (float representation; see :data:`DEFAULT_ULPS`).
    max_denominator : int
        Largest common denominator of the differences (in units of 1) accepted.
    min_distinct : int
        Fewest distinct values from which a step is inferred (two values lie on *some*
        lattice whatever they are; three or more are evidence).
    source : str
        Recorded in the result.

    Returns
    -------
    Lattice
        ``step`` is the exact gcd of the simplest rationals of the differences to the
        smallest value, as a float; ``step=None`` with the reason when the values are not
        on a lattice within the tolerance and denominator bound, are not finite, or are
        too few.

    Notes
    -----
    A continuous value fits a rational with denominator ≤ Q within a tolerance τ with
    probability about Q²τ per unit; the *common* denominator of many such fits grows like
    their product, so continuous columns are refused with overwhelming probability once a
    few distinct values are seen. Grid-valued ones are recognised exactly: a mean of
    integers over n rows is within 0.5 ulp of p/n, and p/n is the simplest rational in
    that small interval whenever n ≤ ``max_denominator``.
    """
    check_positive_int(ulps, "ulps")
    check_positive_int(max_denominator, "max_denominator")
    x = np.asarray(values, dtype=float).reshape(-1)
    if x.size == 0:
        return _refuse(name, source, "no values")
    if not np.all(np.isfinite(x)):
        return _refuse(name, source, "values are not all finite")
    u = np.unique(x)
    if u.size < min_distinct:
        if u.size == 1:
            return _refuse(name, source, f"constant ({u[0]:.17g}): no step can be inferred")
        return _refuse(
            name, source, f"only {u.size} distinct values (need {min_distinct} to infer a step)"
        )
    scale = float(np.max(np.abs(u)))
    tol = float(ulps * np.spacing(scale))
    # Differences to the smallest value: each carries at most ~1 ulp of extra rounding.
    diffs = u[1:] - u[0]
    sample = diffs if diffs.size <= _MAX_RATIONAL else diffs[:: diffs.size // _MAX_RATIONAL + 1]
    t = Fraction(2 * tol)
    lcm, fracs = 1, []
    for d in sample:
        fd = Fraction(float(d))
        f = _simplest_between(max(Fraction(0), fd - t), fd + t)
        fracs.append(f)
        lcm = lcm * f.denominator // math.gcd(lcm, f.denominator)
        if lcm > max_denominator:
            return _refuse(
                name,
                source,
                f"not on a lattice: the differences between values need a common "
                f"denominator above {max_denominator} (tolerance {tol:.3g}, i.e. {ulps} ulps "
                f"of {scale:.6g}); treated as continuous",
            )
    g = 0
    for f in fracs:
        g = math.gcd(g, f.numerator * (lcm // f.denominator))
    if g == 0:  # pragma: no cover - u has ≥ 2 distinct values, so some difference > 0
        return _refuse(name, source, "no positive difference")
    step = Fraction(g, lcm)
    h = float(step)
    # Every value (not only the sample) must be on the lattice within the tolerance.
    r = diffs / h
    off = float(np.max(np.abs(r - np.round(r)))) * h if r.size else 0.0
    if off > 2 * tol:
        return _refuse(
            name,
            source,
            f"not on a lattice: a value lies {off:.3g} from the grid of step {h:.6g} inferred "
            f"from {len(sample)} differences (tolerance {2 * tol:.3g})",
        )
    origin = float(u[0] - h * math.floor(u[0] / h))
    if origin > h - 2 * tol:  # u[0] sits on a lattice point up to rounding
        origin = 0.0
    return Lattice(
        name,
        h,
        origin,
        source,
        f"{u.size} distinct values lie on origin + {step}·Z (exact gcd of the simplest "
        f"rationals of their differences, tolerance {2 * tol:.3g} = {ulps} ulps)",
    )


def query_lattices(data: Any, query: Any, subset_size: int) -> tuple[Lattice, ...]:
    """The lattice of each statistic of a linear query, from its type and the table.

    Parameters
    ----------
    data : Table or DataFrame
        The modelling table (public data): the per-row features' lattices are detected on it.
    query : Query
        Linear statistics (``count_if``, ``sum``, ``avg`` of expressions).
    subset_size : int
        n, rows of a protected dataset: a mean's step is the feature's step / n.

    Returns
    -------
    tuple of Lattice
        One per statistic, ``source="declared"``; ``step=None`` with the reason for a
        statistic that is not linear or whose per-row feature is not on a lattice.
    """
    from .tables import as_table

    n = check_positive_int(subset_size, "subset_size")
    table = as_table(data)
    if not query.is_linear:
        return tuple(
            _refuse(s.name, "declared", f"not a linear statistic ({s.expression})")
            for s in query.statistics
        )
    values = _indicator_values(table, query)
    feats = np.asarray(query.row_features(table), dtype=float) if values is None else None
    out = []
    for k, stat in enumerate(query.statistics):
        vals = feats[:, k] if feats is not None else values[k]  # type: ignore[index]
        col = detect_lattice(vals, name=stat.name, min_distinct=1, source="declared")
        if col.step is None:
            # A constant per-row feature makes a constant statistic: nothing to pin.
            out.append(_refuse(stat.name, "declared", f"per-row feature: {col.detail}"))
            continue
        if stat.scale == "mean":
            step, origin = col.step / n, float(col.origin or 0.0)
            how = f"mean over {n} rows of a feature on step {col.step:.12g}"
        else:
            step, origin = col.step, (n * float(col.origin or 0.0)) % col.step
            how = f"sum over {n} rows of a feature on step {col.step:.12g}"
        out.append(Lattice(stat.name, step, origin % step, "declared", how))
    return tuple(out)


def _indicator_values(table: Any, query: Any) -> list[np.ndarray] | None:
    """The values (0 and/or 1) each count's 0/1 indicator takes on the table, from one pass
    of aggregates: a histogram's thousand cells on 10⁷ rows would otherwise be
    materialised as a rows × m array (80 GB). None unless every statistic is a count_if."""
    from .cell_moments import indicator_conditions
    from .moment_sums import run_chunked

    conds = indicator_conditions([s.row_parsed for s in query.statistics])
    if conds is None:
        return None
    query.check_columns(table)
    groups, _ = run_chunked(
        table, [f"count_if({c})" for c in conds], what="the lattices of the statistics"
    )
    rows, ones = groups.get((), (0, np.zeros(len(conds))))
    return [
        np.array([v for v, present in ((0.0, k < rows), (1.0, k > 0)) if present])
        for k in np.asarray(ones, dtype=np.int64)
    ]


def lattice_steps(lattices: Any) -> np.ndarray:
    """Steps as an array, shape (m,), NaN where a statistic is not on a lattice.

    Parameters
    ----------
    lattices : sequence of Lattice, float or None
    """
    out = []
    for item in lattices:
        step = getattr(item, "step", item)
        if step is None:
            out.append(math.nan)
            continue
        s = float(step)
        if not (s > 0 and math.isfinite(s)):
            raise ParameterError(f"lattice steps must be positive and finite, got {step!r}")
        out.append(s)
    return np.array(out, dtype=float)


# ---------------------------------------------------------------------------------------
# Decoding a release f + Z when f lies on a lattice (moved from attacks/lattice.py).
# ---------------------------------------------------------------------------------------

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


def detect_sample_lattice(samples: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    """(origin, step) per statistic when every sample lies on a lattice, else None.

    The decoder's view of :func:`detect_lattice`: each column of the pooled samples goes
    through the same exact detection the floors use (one definition of "on a lattice"
    for both), with two distinct values accepted as evidence (a decoder needs the grid the
    samples show, not proof that a statistic is grid-valued).

    Parameters
    ----------
    samples : list of ndarray, shape (n_h, m)

    Returns
    -------
    (origin, steps) : ndarray, shape (m,) each, or None
        ``origin`` a lattice point of every column, ``steps`` the columns' steps; None when
        any column is not on a lattice (or constant).
    """
    x = np.vstack(samples)
    origin = np.empty(x.shape[1])
    steps = np.empty(x.shape[1])
    for k in range(x.shape[1]):
        lat = detect_lattice(x[:, k], name=f"statistic {k}", min_distinct=2, source="samples")
        if lat.step is None or lat.origin is None:
            return None
        origin[k], steps[k] = lat.origin, lat.step
    return origin, steps


@dataclass(frozen=True)
class LatticeDecoder:
    """Closest lattice point to y in the Mahalanobis metric of rank-one + floor noise.

    All quantities in grid-step units (coordinate k divided by ``steps[k]``).
    """

    #: ndarray, shape (m,)
    #: The lattice origin + steps·ℤᵐ.
    origin: np.ndarray
    steps: np.ndarray
    #: ndarray, shape (m,)
    #: Main noise direction u' (unit norm in step units).
    direction: np.ndarray
    #: Standard deviation s' of the noise along ``direction`` (steps).
    scale: float
    #: ndarray, shape (m,)
    #: Per-coordinate variance of the rest of the noise (steps²), plus the squared
    #: float-error tolerance.
    floor: np.ndarray
    #: ndarray, shape (m,)
    #: The rigorous float-error bound (steps) included in ``floor``.
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


def decoder_ruled_out(noise: Noise, samples: list[np.ndarray]) -> bool:
    """True when :func:`lattice_decoder` returns None whatever lattice the samples lie on.

    Cheap (no exact detection: the detection's rational arithmetic cost
    more than the rest of a first look). The steps of a lattice the samples lie on are at
    most each column's smallest gap between distinct values d; with steps s ≤ d the
    matrix of the decoder's test, diag(1/s) Σ_Z diag(1/s) = M B M with B = diag(1/d) Σ_Z
    diag(1/d) and M = diag(d/s) ⪰ I, has every eigenvalue at least B's (Ostrowski's
    theorem), so two eigenvalues of B above :data:`_MAX_FLOOR`² leave two main directions
    on any such lattice: no decoder. Also true for non-Gaussian noise.

    Parameters
    ----------
    noise : Noise
    samples : list of ndarray, shape (n_h, m)
    """
    if any(c.kind != "gaussian" for c in noise.components if np.any(c.scales > 0)):
        return True
    x = np.vstack(samples)
    gaps = np.empty(x.shape[1])
    for k in range(x.shape[1]):
        u = np.unique(x[:, k])
        d = np.diff(u[np.isfinite(u)])
        d = d[d > 0]
        if d.size == 0:
            return False  # constant or not finite: leave it to the detection
        gaps[k] = float(d.min())
    cov = noise.covariance / np.outer(gaps, gaps)
    vals = np.linalg.eigvalsh((cov + cov.T) / 2)
    return int(np.sum(vals > _MAX_FLOOR**2)) >= 2


def lattice_decoder(
    noise: Noise, lattice: tuple[np.ndarray, np.ndarray], magnitude: np.ndarray
) -> LatticeDecoder | None:
    """A decoder for Gaussian ``noise`` with one main direction on ``lattice``, else None.

    Parameters
    ----------
    noise : Noise
        Gaussian components only (any number: their covariances add).
    lattice : (origin, steps)
        From :func:`detect_sample_lattice`.
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
