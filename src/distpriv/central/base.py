"""The calibrated mechanism: noise + guarantee, and the release of F(Data) + Z."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..guarantees import PrivacyGuarantee, Release, to_jsonable
from ..noise import Noise, sampler_description, secure_add, unit_free_rank
from ..util.validation import check_array, check_rng

__all__ = ["CalibratedMechanism"]


@dataclass(frozen=True)
class CalibratedMechanism:
    """A mechanism calibrated to a query model: M(Data) = F(Data) + Z.

    Obtained from :func:`distpriv.calibrate`. Immutable; ``release`` draws fresh noise
    from the secure sampler, or from a numpy ``rng`` when one is given (a simulation).
    """

    #: Registry name (e.g. ``"eigm"``).
    name: str
    #: The distribution of Z.
    noise: Noise
    #: What the release satisfies, and under which checked assumptions.
    guarantee: PrivacyGuarantee
    #: Names of the m statistics.
    statistics: tuple[str, ...]
    #: Calibration quantities (sensitivities, D*, per-pair distances after noise, …).
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def dim(self) -> int:
        """Number m of released statistics."""
        return self.noise.dim

    @property
    def noise_covariance(self) -> np.ndarray:
        """Covariance of the noise Z, shape (m, m) (for Laplace noise too: 2b² per axis)."""
        return self.noise.covariance

    @property
    def noise_rank(self) -> int:
        """Number of independent directions the noise covers (≤ m).

        Where it is below m, the statistics' components outside the noise's range are
        published as computed: their protection rests entirely on f_θ's own randomness (the
        Gaussian model). On statistics that take values on a grid (counts, means of integer
        columns) those exact components can pin the noisy one and reveal F(Data); the
        data-level check (:func:`distpriv.attacks.verify_on_data`) detects this.
        """
        cov = self.noise_covariance
        scale = float(np.max(np.abs(cov))) if cov.size else 0.0
        if scale == 0.0:
            return 0
        # Judged at unit diagonal: a statistic in small units is covered if its noise is
        # (numpy's tolerance on the raw matrix would not see it next to one in cents).
        return unit_free_rank(cov, rtol=cov.shape[0] * np.finfo(float).eps)

    @property
    def laplace_scales(self) -> np.ndarray | None:
        """Laplace scales b of the Laplace component (shape (d,)), or ``None``."""
        comps = [c for c in self.noise.components if c.kind == "laplace"]
        return np.concatenate([c.scales for c in comps]) if comps else None

    @property
    def laplace_basis(self) -> np.ndarray | None:
        """Directions (orthonormal columns, shape (m, d)) of the Laplace noise, or ``None``."""
        comps = [c for c in self.noise.components if c.kind == "laplace"]
        return np.concatenate([c.basis for c in comps], axis=1) if comps else None

    def mse(self) -> float:
        """Expected squared error E‖Z‖₂² = tr(noise covariance)."""
        return self.noise.mse()

    def expected_l2_error(self) -> float:
        """E‖Z‖₂, the "L2 error" of Chen & Ohrimenko 2023 Table 2 (see Noise.expected_l2_norm)."""
        return self.noise.expected_l2_norm()

    def release(self, value: Any, *, rng: np.random.Generator | int | None = None) -> Release:
        """Release F(Data) + Z.

        Parameters
        ----------
        value : array_like, shape (m,) or (batch, m)
            The true statistics; a batch is released with independent noise per row.
        rng : None, int or numpy.random.Generator
            ``None`` (the default, and the only choice for a published release): Z comes
            from the secure sampler, :func:`distpriv.noise.secure_add` — OpenDP's discrete
            Gaussian/Laplace on a grid of 2^-40 noise scales, OS entropy, correlated
            Gaussian noise drawn in whitened coordinates and mapped back (docs/architecture.md §4).
            An int seed or a Generator: numpy float draws, reproducible — a simulation for
            experiments and tests, NOT private (the seed reveals the noise).

        Returns
        -------
        Release
            The noisy value (same shape as ``value``, read-only), this mechanism's
            guarantee, the sampler used and whether it was secure.

        Raises
        ------
        ParameterError
            If ``value`` is not finite or its last axis is not of length m.
        SamplerError
            If the secure sampler cannot draw (nothing is released).
        """
        x = check_array(value, "value", ndim=(1, 2))
        if x.shape[-1] != self.dim:
            raise ParameterError(
                f"value must have {self.dim} statistics in its last axis, got shape {x.shape}"
            )
        batch = x.reshape(-1, self.dim)
        if rng is None:
            noisy = secure_add(self.noise, batch)
            secure = True
        else:
            gen = check_rng(rng)
            noisy = batch + self.noise.sample(batch.shape[0], gen)
            secure = False
        out = noisy.reshape(x.shape)
        out.setflags(write=False)
        return Release(
            value=out,
            guarantee=self.guarantee,
            statistics=self.statistics,
            sampler=sampler_description(self.noise, secure=secure),
            secure=secure,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description: noise, errors, guarantee, diagnostics."""
        return {
            "mechanism": self.name,
            "statistics": list(self.statistics),
            "noise_covariance": self.noise_covariance.tolist(),
            "noise_components": [
                {"kind": c.kind, "basis": c.basis.tolist(), "scales": c.scales.tolist()}
                for c in self.noise.components
            ],
            "mse": self.mse(),
            "expected_l2_error": self.expected_l2_error(),
            "guarantee": self.guarantee.to_dict(),
            "diagnostics": to_jsonable(self.diagnostics),
        }

    def _repr_html_(self) -> str:
        """Compact HTML summary for Jupyter (from the package templates)."""
        from ..util.templates import repr_mechanism

        return repr_mechanism(self.to_dict())
