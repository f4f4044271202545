"""Noise distributions: every draw of mechanism noise goes through here.

A noise distribution is a sum of independent components Z = Σ_c B_c Y_c, where each B_c
is an (m, d_c) matrix with orthonormal columns and Y_c has independent Gaussian
(standard deviations ``scales``) or Laplace (scales b) coordinates. This covers every
mechanism of Chen & Ohrimenko 2023: isotropic (ExpM), directional (DirM, DauM), along an
eigenbasis (EigM), and the extra Laplace noise of Thm 4.7.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import integrate
from scipy.special import erfcx, gammaln

from ._validation import check_positive_int, check_rng, readonly
from .errors import ParameterError

__all__ = ["Noise", "NoiseComponent"]

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
        """Draw ``size`` independent noise vectors, shape (size, m)."""
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
    body = 0.0
    for lo, hi in ((s_min, s_mid), (s_mid, s_mid + 10.0), (s_mid + 10.0, s_max)):
        part, _ = integrate.quad(integrand, lo, hi, limit=200, epsabs=0.0, epsrel=1e-10)
        body += part
    return (head + body + tail) / (2.0 * math.sqrt(math.pi))
