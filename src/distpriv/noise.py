"""Noise distributions: every draw of mechanism noise goes through here.

A noise distribution is a sum of independent components Z = Σ_c B_c Y_c, where each B_c
is an (m, d_c) matrix with orthonormal columns and Y_c has independent Gaussian
(standard deviations ``scales``) or Laplace (scales b) coordinates. This covers every
mechanism of Chen & Ohrimenko 2023: isotropic (ExpM), directional (DirM, DauM), along an
eigenbasis (EigM), and the extra Laplace noise of Thm 4.7.

Two samplers draw from it (docs/architecture.md §2, §4):

* :meth:`Noise.sample` — numpy floats from a seedable generator. For simulations only
  (experiments, audits, tests, the demo): a seed lets anyone who knows it subtract the noise,
  and textbook float samplers leak through their low-order bits (Mironov 2012).
* :func:`secure_add` / :func:`secure_sample` — for published releases. Every draw comes from
  OpenDP's discrete Gaussian / discrete Laplace samplers (Canonne, Kamath & Steinke 2020),
  exact on the grid γℤ with γ = 2^``GRID_EXPONENT`` noise scales, fed by OpenDP's CTR-DRBG
  seeded from OS entropy; no seed can be given.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import erfcx, gammaln

from .errors import ParameterError, ParameterTypeError, SamplerError
from .util.records import field_values
from .util.validation import check_array, check_positive_int, check_rng, readonly

__all__ = [
    "GRID_EXPONENT",
    "NUMPY_SAMPLER",
    "GridRounding",
    "Noise",
    "NoiseComponent",
    "grid_rounding",
    "sampler_description",
    "secure_add",
    "secure_sample",
]

KINDS = ("gaussian", "laplace")
_ORTHO_TOL = 1e-8
# Monte Carlo draws for E‖Z‖ when no exact or quadrature formula applies (several
# components in different bases); seeded so the number is reproducible.
_MC_DRAWS = 400_000
_MC_SEED = 20230101


@dataclass(frozen=True)
class NoiseComponent:
    """Independent Gaussian or Laplace noise along orthonormal directions.

    Parameters
    ----------
    kind : {"gaussian", "laplace"}
        Distribution of each coordinate Y_k.
    basis : ndarray, shape (m, d)
        Orthonormal columns; the noise is ``basis @ Y``.
    scales : ndarray, shape (d,)
        Standard deviation (Gaussian) or Laplace scale b (variance 2b²) of each Y_k.
    """

    kind: str
    basis: np.ndarray
    scales: np.ndarray

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ParameterError(f"kind must be one of {KINDS}, got {self.kind!r}")
        basis = np.asarray(self.basis, dtype=np.float64)
        scales = np.asarray(self.scales, dtype=np.float64).reshape(-1)
        if basis.ndim != 2 or basis.shape[1] != scales.shape[0]:
            raise ParameterError(f"basis must have shape (m, {scales.shape[0]}), got {basis.shape}")
        if not (np.all(np.isfinite(scales)) and np.all(scales >= 0)):
            raise ParameterError(f"noise scales must be finite and >= 0, got {scales}")
        gram = basis.T @ basis
        if basis.shape[1] and np.max(np.abs(gram - np.eye(basis.shape[1]))) > _ORTHO_TOL:
            raise ParameterError("noise basis must have orthonormal columns")
        object.__setattr__(self, "basis", readonly(basis))
        object.__setattr__(self, "scales", readonly(scales))

    @property
    def variances(self) -> np.ndarray:
        """Variance of each coordinate Y_k, shape (d,)."""
        return self.scales**2 * (2.0 if self.kind == "laplace" else 1.0)

    @property
    def covariance(self) -> np.ndarray:
        """Covariance B diag(var) Bᵀ, shape (m, m)."""
        return (self.basis * self.variances) @ self.basis.T

    def _log_mgf_sq(self, t: float) -> float:
        """log E[exp(−t ‖Y‖²)] (t > 0), summed over coordinates."""
        s = self.scales[self.scales > 0]
        if self.kind == "gaussian":
            return float(-0.5 * np.sum(np.log1p(2.0 * t * s**2)))
        # E exp(−tY²) for Y ~ Laplace(b) = (1/b) √(π/4t) erfcx(1/(2b√t)).
        z = 1.0 / (2.0 * s * math.sqrt(t))
        return float(np.sum(-np.log(s) + 0.5 * np.log(np.pi / (4.0 * t)) + np.log(erfcx(z))))

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``size`` noise vectors, shape (size, m)."""
        d = self.scales.shape[0]
        if self.kind == "gaussian":
            y = rng.standard_normal((size, d))
        else:
            y = rng.laplace(0.0, 1.0, (size, d))
        return (y * self.scales) @ self.basis.T


@dataclass(frozen=True)
class Noise:
    """The noise a calibrated mechanism adds: a sum of independent components.

    Parameters
    ----------
    dim : int
        Dimension m of the released vector.
    components : tuple of NoiseComponent
        Empty for a noiseless release.
    """

    dim: int
    components: tuple[NoiseComponent, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        check_positive_int(self.dim, "dim")
        for comp in self.components:
            if comp.basis.shape[0] != self.dim:
                raise ParameterError(
                    f"noise component has dimension {comp.basis.shape[0]}, expected {self.dim}"
                )
        object.__setattr__(self, "components", tuple(self.components))

    @classmethod
    def none(cls, dim: int) -> Noise:
        """No noise (a noiseless release)."""
        return cls(dim, ())

    @classmethod
    def isotropic(cls, kind: str, dim: int, scale: float) -> Noise:
        """i.i.d. noise of one scale on every coordinate."""
        return cls(dim, (NoiseComponent(kind, np.eye(dim), np.full(dim, scale)),))

    @classmethod
    def along(cls, kind: str, basis: np.ndarray, scales: np.ndarray) -> Noise:
        """Noise with independent coordinates along the orthonormal columns of ``basis``."""
        basis = np.asarray(basis, dtype=np.float64)
        return cls(basis.shape[0], (NoiseComponent(kind, basis, scales),))

    def plus(self, other: Noise) -> Noise:
        """The sum of this noise and an independent ``other``."""
        if other.dim != self.dim:
            raise ParameterError(f"cannot add noise of dimension {other.dim} to {self.dim}")
        return Noise(self.dim, self.components + other.components)

    @property
    def is_zero(self) -> bool:
        """True when no noise is added."""
        return all(float(np.max(c.scales, initial=0.0)) == 0.0 for c in self.components)

    @property
    def covariance(self) -> np.ndarray:
        """Covariance of Z, shape (m, m)."""
        cov = np.zeros((self.dim, self.dim))
        for comp in self.components:
            cov += comp.covariance
        return cov

    def mse(self) -> float:
        """E‖Z‖₂² = tr Cov(Z)."""
        return float(sum(np.sum(c.variances) for c in self.components))

    def sample(self, size: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Draw ``size`` independent noise vectors with numpy, shape (size, m).

        A simulation sampler (experiments, audits, tests): float draws from a seedable
        generator are not fit for publication; releases use :func:`secure_sample`.
        """
        size = check_positive_int(size, "size", minimum=0)
        gen = check_rng(rng)
        out = np.zeros((size, self.dim))
        for comp in self.components:
            out += comp.sample(size, gen)
        return out

    def expected_l2_norm(self) -> float:
        """E‖Z‖₂, the papers' "L2 error" of the mechanism.

        Exact closed forms for isotropic Gaussian noise (σ√2 Γ((d+1)/2)/Γ(d/2)) and for
        rank-one noise (σ√(2/π) Gaussian, b Laplace). For one component with unequal
        scales, the identity E√Q = (2√π)⁻¹ ∫₀^∞ (1 − E e^(−tQ)) t^(−3/2) dt with the
        closed-form Laplace transforms of Y_k² is integrated numerically (relative error
        below 1e-7). For several components in different bases, a seeded Monte Carlo
        estimate with 4·10⁵ draws (relative standard error about 1e-3).
        """
        comps = [c for c in self.components if np.any(c.scales > 0)]
        if not comps:
            return 0.0
        if len(comps) > 1:
            draws = self.sample(_MC_DRAWS, np.random.default_rng(_MC_SEED))
            return float(np.mean(np.linalg.norm(draws, axis=1)))
        comp = comps[0]
        s = comp.scales[comp.scales > 0]
        d = s.shape[0]
        if d == 1:
            return float(s[0] * (math.sqrt(2.0 / math.pi) if comp.kind == "gaussian" else 1.0))
        if comp.kind == "gaussian" and np.ptp(s) <= 1e-14 * s.max():
            return float(s[0] * math.sqrt(2.0) * math.exp(gammaln((d + 1) / 2) - gammaln(d / 2)))
        return _quadrature_norm(comp)


def unit_free_rank(cov: np.ndarray, rtol: float = 1e-13) -> int:
    """The rank of a covariance judged at unit diagonal (the units of no coordinate matter).

    ``cov`` is scaled to D⁻¹ cov D⁻¹, D = diag(√cov_kk) on the coordinates with positive
    variance (a coordinate of variance 0 adds nothing); eigenvalues above ``rtol`` times the
    largest count. Raw eigenvalues of a covariance whose coordinates differ in units by 10⁷
    span 10¹⁴: a fixed relative threshold there would call a statistic in small units
    uncovered because another one is in cents.
    """
    sym = (np.asarray(cov, dtype=float) + np.asarray(cov, dtype=float).T) / 2
    d = np.sqrt(np.clip(np.diag(sym), 0.0, None))
    on = d > 0
    if not np.any(on):
        return 0
    sub = sym[np.ix_(on, on)] / np.outer(d[on], d[on])
    w = np.linalg.eigvalsh(sub)
    return int(np.sum(w > rtol * max(float(w.max()), 0.0)))


def gaussian_of_covariance(cov: np.ndarray) -> Noise:
    """Gaussian noise with covariance ``cov``: its top :func:`unit_free_rank` eigenpairs
    (the rest are rounding: tiny negatives, or positives of a direction not covered)."""
    sym = (np.asarray(cov, dtype=float) + np.asarray(cov, dtype=float).T) / 2
    k = unit_free_rank(sym)
    if k == 0:
        return Noise.none(sym.shape[0])
    w, v = np.linalg.eigh(sym)
    return Noise.along("gaussian", v[:, -k:], np.sqrt(np.clip(w[-k:], 0.0, None)))


def _quadrature_norm(comp: NoiseComponent) -> float:
    """E‖Y‖ by the Laplace-transform integral, in the variable s = log t."""
    eq = float(np.sum(comp.variances))

    def integrand(s: float) -> float:
        t = math.exp(s)
        return -math.expm1(comp._log_mgf_sq(t)) * math.exp(-s / 2.0)

    # Below s_min, 1 − E e^(−tQ) = t·E[Q] to relative accuracy 1e-7; integrate that part
    # in closed form (2 E[Q] e^(s/2)) and avoid cancellation in the transform at tiny t.
    s_min = math.log(1e-7 / eq)
    s_mid = -math.log(eq)
    # Above s_max, E e^(−tQ) < e^(−20) for the scales here; the rest is 2 e^(−s_max/2).
    s_max = s_mid + 80.0
    head = 2.0 * eq * math.exp(s_min / 2.0)
    tail = 2.0 * math.exp(-s_max / 2.0)
    from scipy import integrate  # here only: its import pulls scipy.optimize (cold path)

    body = 0.0
    for lo, hi in ((s_min, s_mid), (s_mid, s_mid + 10.0), (s_mid + 10.0, s_max)):
        part, _ = integrate.quad(integrand, lo, hi, limit=200, epsabs=0.0, epsrel=1e-10)
        body += part
    return (head + body + tail) / (2.0 * math.sqrt(math.pi))


# ---------------------------------------------------------------------------------------
# The secure sampler (published releases)
# ---------------------------------------------------------------------------------------

# Grid of the secure sampler, as a power of two of the noise scale (each coordinate is
# whitened to unit scale before noise is added): 2^-40 ≈ 9.1e-13 standard deviations, far
# below anything a statistic is measured to, and the sampling cost does not depend on it.
GRID_EXPONENT = -40
_GRID = 2.0**GRID_EXPONENT
# Coordinates per OpenDP call: bounds the Python list converted per call and the number of
# distinct measurement sizes the cache below must hold.
_CHUNK = 1 << 16

NUMPY_SAMPLER = (
    "numpy PCG64 float Gaussian/Laplace draws from a seed or generator: a simulation, "
    "NOT private (anyone with the seed can subtract the noise)"
)
_NOISELESS = "none: noiseless release (no noise is drawn; the guarantee rests on the data)"


@dataclass(frozen=True)
class GridRounding:
    """What rounding to the secure sampler's grid costs, as the privacy analysis sees it.

    OpenDP rounds each whitened (Gaussian) or scaled (Laplace) coordinate to the grid γℤ,
    γ = 2^``GRID_EXPONENT``, before adding discrete noise of unit scale, and accounts for
    it by enlarging the sensitivity by the rounding error: γ√r in L2 over r Gaussian
    coordinates, γ·d in L1 over d Laplace coordinates (its privacy maps for these
    measurements are ρ(Δ) = (Δ + γ√r)²/2 and ε(Δ) = Δ + γd). In the units of our
    mechanisms the rounding moves a release by at most γ√r/2 in the Mahalanobis norm of the
    noise (less in that of Σ_θ + Σ_Z), so the distance D between two θ's grows by at most
    γ√r; in the Gaussian mean-shift analysis (Chen & Ohrimenko 2023, Thms 4.4–4.5; Balle &
    Wang 2018, Thm 8) δ(ε) then grows by at most γ√r/√(2π), because
    dδ/dD = φ(D/2 − ε/D) ≤ 1/√(2π). For Laplace noise of unit scale ε grows by at most γd.
    The discrete Gaussian itself satisfies the continuous Gaussian's concentrated-DP bound
    for grid-valued shifts (Canonne, Kamath & Steinke 2020, §2).
    """

    #: γ, in noise scales.
    grid: float
    #: Added to the whitened L2 sensitivity, summed over Gaussian components.
    l2_sensitivity: float
    #: Upper bound on the increase of δ(ε) under the mean-shift analysis.
    delta: float
    #: Added to the scaled L1 sensitivity (= the ε increase), over Laplace components.
    l1_sensitivity: float

    @property
    def epsilon(self) -> float:
        """Upper bound on the increase of ε for the Laplace components (= l1_sensitivity)."""
        return self.l1_sensitivity

    def to_dict(self) -> dict[str, float]:
        """JSON-safe dict."""
        return {
            "grid_exponent": GRID_EXPONENT,
            **field_values(self, "grid l2_sensitivity delta l1_sensitivity epsilon"),
        }


def _noisy_parts(noise: Noise) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(kind, basis, scales) of each component, restricted to its directions with noise."""
    parts = []
    for comp in noise.components:
        keep = comp.scales > 0
        if np.any(keep):
            parts.append((comp.kind, np.asarray(comp.basis[:, keep]), comp.scales[keep]))
    return parts


def _check_noise(noise: object) -> Noise:
    if not isinstance(noise, Noise):
        raise ParameterTypeError(f"noise must be a distpriv.Noise, got {type(noise).__name__}")
    return noise


def grid_rounding(noise: Noise) -> GridRounding:
    """The privacy cost of the secure sampler's grid for ``noise`` (see :class:`GridRounding`)."""
    _check_noise(noise)
    l2 = l1 = 0.0
    for kind, basis, _ in _noisy_parts(noise):
        if kind == "gaussian":
            l2 += _GRID * math.sqrt(basis.shape[1])
        else:
            l1 += _GRID * basis.shape[1]
    return GridRounding(_GRID, l2, l2 / math.sqrt(2.0 * math.pi), l1)


@functools.lru_cache(maxsize=1)
def _opendp_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("opendp")
    except PackageNotFoundError:  # pragma: no cover - opendp imported but not installed?
        return "unknown"


def sampler_description(noise: Noise, *, secure: bool) -> str:
    """One line naming the sampler a release used and, if secure, its grid accounting.

    Parameters
    ----------
    noise : Noise
        The mechanism's noise.
    secure : bool
        ``True`` for :func:`secure_add`, ``False`` for the numpy simulation.
    """
    _check_noise(noise)
    parts = _noisy_parts(noise)
    if not parts:
        return _NOISELESS
    if not secure:
        return NUMPY_SAMPLER
    kinds = {kind for kind, _, _ in parts}
    rounding = grid_rounding(noise)
    names, costs = [], []
    if "gaussian" in kinds:
        names.append("discrete Gaussian on whitened coordinates")
        costs.append(
            f"+{rounding.l2_sensitivity:.2g} whitened L2 sensitivity "
            f"(delta +{rounding.delta:.2g} at most in the mean-shift analysis)"
        )
    if "laplace" in kinds:
        names.append("discrete Laplace on scaled coordinates")
        costs.append(f"+{rounding.l1_sensitivity:.2g} scaled L1 sensitivity (epsilon +same)")
    return (
        f"OpenDP {_opendp_version()} {' and '.join(names)}, unit scale, grid 2^{GRID_EXPONENT} "
        f"noise scales, CTR-DRBG seeded from OS entropy; grid rounding: {'; '.join(costs)}"
    )


@functools.lru_cache(maxsize=16)
def _opendp_measurement(kind: str, n: int) -> Any:
    """OpenDP measurement: a length-``n`` float vector + unit-scale discrete noise on the grid."""
    try:
        import opendp.prelude as dp
    except ImportError as exc:  # pragma: no cover - opendp is a core dependency
        raise SamplerError(
            "the secure sampler needs the 'opendp' package; install distpriv's dependencies"
        ) from exc
    # OpenDP's opt-in for measurements outside its vetted core; make_gaussian/make_laplace
    # over floats discretise internally, which is exactly what we want.
    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=n)
    if kind == "gaussian":
        return dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=1.0, k=GRID_EXPONENT)
    return dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=1.0, k=GRID_EXPONENT)


def _unit_noise_plus(kind: str, u: np.ndarray) -> np.ndarray:
    """u rounded to the grid plus i.i.d. unit-scale discrete ``kind`` noise (any shape)."""
    from opendp.mod import OpenDPException

    flat = np.ascontiguousarray(u, dtype=np.float64).reshape(-1)
    out = np.empty_like(flat)
    for start in range(0, flat.size, _CHUNK):
        part = flat[start : start + _CHUNK]
        meas = _opendp_measurement(kind, part.size)
        try:
            out[start : start + part.size] = meas(part.tolist())
        except OpenDPException as exc:  # e.g. the OS entropy source failed
            raise SamplerError(f"the secure {kind} sampler (OpenDP) failed: {exc}") from exc
    return out.reshape(u.shape)


def secure_add(noise: Noise, values: Any) -> np.ndarray:
    """Release ``values + Z`` with Z drawn by the secure sampler (one Z per row).

    Each component B·diag(s)·Y of ``noise`` is applied in turn, in its own coordinates:
    the values' coordinates along B are divided by s (whitened: the noise becomes i.i.d.
    of unit scale), rounded to the grid and given discrete Gaussian or Laplace noise by
    OpenDP, then multiplied by s and mapped back with B — post-processing of the noisy
    coordinates. The part of the values outside the span of B (the directions without
    noise; none when B is square) is kept as computed (docs/architecture.md §4). Directions with
    zero scale get no noise. The rows of a batch go to OpenDP in one call per component (in
    chunks of 65 536 coordinates).

    Parameters
    ----------
    noise : Noise
        The distribution of Z (dimension m).
    values : array_like, shape (batch, m)
        Finite true values F(Data), one release per row.

    Returns
    -------
    ndarray, shape (batch, m)
        The noisy values. Their covariance around ``values`` is ``noise.covariance`` up to
        the grid (variance within a relative 1e-12 for these grids).

    Raises
    ------
    ParameterError
        If ``values`` is not finite or not of shape (batch, m).
    SamplerError
        If OpenDP cannot sample (for example, no OS entropy).

    Notes
    -----
    Samplers: Canonne, Kamath & Steinke 2020 (discrete Gaussian, discrete Laplace), as
    implemented and proven in OpenDP; the rounding is accounted for by
    :func:`grid_rounding`. The component of F outside the noise's span is not randomised;
    its float rounding error (about 1e-16 of ‖F‖) depends on all of F. The first call
    enables OpenDP's ``"contrib"`` features in this process (its opt-in for these
    measurements) and builds one measurement per batch size (cached).
    """
    _check_noise(noise)
    x = check_array(values, "values", ndim=2, min_size=0)
    if x.shape[1] != noise.dim:
        raise ParameterError(
            f"values must have shape (batch, {noise.dim}) to match the noise, got {x.shape}"
        )
    out = x.copy()
    for kind, basis, scales in _noisy_parts(noise):
        coords = out @ basis
        with np.errstate(over="ignore"):
            whitened = coords / scales
        if not np.all(np.isfinite(whitened)):
            raise ParameterError(
                f"values are too large for the noise scale (down to {scales.min():.3g}): "
                "their coordinates in noise units overflow float64"
            )
        noisy = _unit_noise_plus(kind, whitened) * scales
        if basis.shape[1] == noise.dim:
            out = noisy @ basis.T
        else:
            out = (out - coords @ basis.T) + noisy @ basis.T
    return out


def secure_sample(noise: Noise, size: int) -> np.ndarray:
    """Draw ``size`` noise vectors from the secure sampler, shape (size, m).

    The same path as :func:`secure_add` applied to zeros, so every draw is a grid value of
    OpenDP's discrete Gaussian/Laplace mapped back to ℝᵐ.
    """
    _check_noise(noise)
    size = check_positive_int(size, "size", minimum=0)
    return secure_add(noise, np.zeros((size, noise.dim)))
