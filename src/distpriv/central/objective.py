"""What "least noise" means: the objective tr(W Σ_Z) of the shaped mechanisms and of ``auto``.

optimal-g, optimal-g-full and ``auto``'s comparison minimise a weighted expected squared
error E[Zᵀ W Z] = tr(W Σ_Z). With W = I (the papers' E‖Z‖², ``objective="l2"``) the
statistic in the largest units sets everyone's noise: a price in dollars next to a share
makes the share's noise as large as the price's, however small the share's own spread.

The default, ``objective="relative"``, weighs each statistic's noise against its own
sampling spread under the model: W = diag(1/v), v_k the variance of statistic k averaged
over the hypotheses θ (the mean of the diagonals of Σ_θ). Then tr(W Σ_Z) = Σ_k Var(Z_k)/v_k
is unit-free, and rescaling statistic k by c (dollars to cents, c = 100) rescales v_k by c²
and w_k by 1/c², so the program min tr(W Σ_Z) subject to the privacy constraints maps onto
itself: the optimal noise of statistic k is c times as large and every other statistic's
is unchanged (the constraints dᵀ(Σ_θ + Σ_Z)⁻¹d ≤ D² are invariant under D Σ D, D d). A
curator may also declare her own weights (one positive number per statistic, e.g.
1/tolerance²); they are then used as given.

A statistic whose variance is 0 under every hypothesis (computed exactly, e.g. a count the
model treats as known) has no sampling spread; its spread across the hypotheses (the
variance of μ_θ,k over θ) is then its scale, which is in its own units too, so rescaling
it still rescales only its noise. A statistic that is the same number under every
hypothesis as well has no scale at all: ``relative`` refuses it with a clear error (declare
weights, or ``objective="l2"``) rather than pick a weight.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ConfigError, ParameterError
from ..util.validation import check_array, check_choice

__all__ = [
    "CRITERIA",
    "DEFAULT_OBJECTIVE",
    "OBJECTIVES",
    "check_objective",
    "comparison_weights",
    "config_objective",
    "is_identity_like",
    "isotropic_shape",
    "objective_kind",
    "objective_weights",
    "relative_weights",
    "sampling_variances",
    "whitening",
]

OBJECTIVES = ("relative", "l2")
DEFAULT_OBJECTIVE = "relative"
# What ``auto``'s criterion E[Zᵀ W Z] weighs, per objective (its report's "criterion").
CRITERIA = {
    "relative": " (W = 1/sampling variance of each statistic under the model: unit-free)",
    "l2": " (W = I: the papers' E||Z||^2)",
    "declared weights": " (W = the declared weights)",
}


def check_objective(value: object, name: str = "objective") -> str:
    """``value`` if it is one of :data:`OBJECTIVES`, else a ParameterError naming ``name``."""
    return check_choice(value, name, OBJECTIVES)


def _gaussian(model: Any) -> Any:
    to_gaussian = getattr(model, "to_gaussian", None)
    if getattr(model, "covariances", None) is None and to_gaussian is not None:
        return to_gaussian()
    return model


def sampling_variances(model: Any) -> np.ndarray:
    """Each statistic's sampling variance under the model, averaged over θ, shape (m,).

    The mean over the hypotheses of the diagonal of Σ_θ (of the fitted Gaussian for a
    model given by Monte Carlo samples).
    """
    gm = _gaussian(model)
    covs = np.asarray(gm.covariances, dtype=float)
    return np.asarray(np.diagonal(covs, axis1=1, axis2=2).mean(axis=0), dtype=float)


def relative_weights(model: Any) -> np.ndarray:
    """W = diag(1/v) of ``objective="relative"``, shape (m,).

    v_k is :func:`sampling_variances`; where it is 0, the variance of μ_θ,k over the
    hypotheses (module docstring); where that is 0 too (a statistic that is the same
    number c_k on every dataset, e.g. a column constant in a small modelling table), c_k²:
    its noise is weighed against its own value (a relative error, unit-free like the rest),
    and where c_k = 0 as well, against the most precise other statistic's variance (its
    noise is then the costliest; it tells nothing about the secret either way).

    Raises
    ------
    ParameterError
        A statistic whose variance is not finite.
    """
    var = sampling_variances(model)
    means = np.asarray(_gaussian(model).means, dtype=float)
    between = np.var(means, axis=0)
    var = np.where(var > 0, var, between)
    var = np.where(var > 0, var, np.max(np.abs(means), axis=0) ** 2)
    spread = var[np.isfinite(var) & (var > 0)]
    var = np.where(var > 0, var, spread.min() if spread.size else 1.0)
    bad = [k for k, v in enumerate(var) if not (np.isfinite(v) and v > 0)]
    if bad:
        stats = getattr(_gaussian(model), "statistics", None)
        names = [str(stats[k]) if stats is not None else f"#{k}" for k in bad]
        raise ParameterError(
            "objective='relative' weighs each statistic's noise against its sampling "
            f"variance under the model, and {', '.join(map(repr, names))} has variance "
            f"{', '.join(f'{var[k]:g}' for k in bad)}; declare weights (one positive number "
            "per statistic) or set objective='l2'"
        )
    return 1.0 / var


def objective_weights(model: Any, *, objective: object, weights: object) -> np.ndarray | None:
    """The weights W of tr(W Σ_Z) for ``objective`` and declared ``weights``.

    Declared weights win (they are the curator's own relative errors; checked by the
    caller's shape rules); otherwise ``"relative"`` gives :func:`relative_weights` and
    ``"l2"`` gives ``None`` (W = I, the papers' E‖Z‖²).
    """
    kind = check_objective(objective)
    if weights is not None:
        return np.asarray(check_array(weights, "weights", ndim=(1, 2)), dtype=float)
    if kind == "l2":
        return None
    return relative_weights(model)


def comparison_weights(model: Any, *, weights: object, objective: object) -> np.ndarray | None:
    """W's diagonal for ``auto``'s comparison, shape (m,): the declared ``weights`` (one
    positive number per statistic), 1/sampling variance (``"relative"``), or ``None``
    (``"l2"``: W = I)."""
    kind = check_objective(objective)
    if weights is not None:
        m = int(model.dim)
        w = check_array(weights, "weights", shape=(m,))
        if np.any(w <= 0):
            raise ParameterError(
                f"weights must be {m} positive numbers (one per statistic), got {w.tolist()}"
            )
        return np.asarray(w, dtype=float)
    return None if kind == "l2" else relative_weights(model)


def config_objective(value: object) -> str:
    """``[mechanism] objective`` of ``auto``: one of :data:`OBJECTIVES`, or a ConfigError."""
    if not isinstance(value, str) or value not in OBJECTIVES:
        raise ConfigError(
            f"[mechanism] objective must be one of {', '.join(map(repr, OBJECTIVES))}, "
            f"got {value!r}"
        )
    return value


def objective_kind(objective: object, weights: object) -> str:
    """What a calibration minimised: ``"declared weights"``, ``"relative"`` or ``"l2"``."""
    return "declared weights" if weights is not None else check_objective(objective)


def is_identity_like(wmat: np.ndarray) -> bool:
    """W is a positive multiple of the identity (the papers' E‖Z‖², up to a factor)."""
    d = np.diag(wmat)
    return bool(np.all(wmat == np.diag(d)) and np.all(d == d[0]))


def isotropic_shape(wmat: np.ndarray) -> np.ndarray:
    """The noise shape that is "isotropic" for tr(W Σ_Z): W⁻¹, or I when W ∝ I.

    With W = diag(1/v) it is diag(v): every statistic's noise the same multiple of its own
    sampling spread, which rescales with the statistic's units (expm-g's σ²I does not).
    I exactly when W ∝ I, so that the papers' objective keeps its numbers bit for bit.
    """
    m = wmat.shape[0]
    if is_identity_like(wmat):
        return np.eye(m)
    if np.all(wmat == np.diag(np.diag(wmat))):
        return np.diag(1.0 / np.diag(wmat))
    inv = np.linalg.inv(wmat)
    return (inv + inv.T) / 2


def whitening(wmat: np.ndarray) -> np.ndarray | None:
    """r with W = diag(r²) when W is diagonal and not ∝ I (else ``None``).

    The shaped programs are solved in the coordinates x_k r_k, where the objective is
    tr(Σ_Z) and a rescaled statistic is the same number: the solver sees the same program
    whatever the units (exact equivariance, not only to the solver's tolerance).
    """
    if is_identity_like(wmat) or not np.all(wmat == np.diag(np.diag(wmat))):
        return None
    d = np.diag(wmat)
    if np.any(d <= 0):
        raise ParameterError(f"weights must be positive, got {d.tolist()}")
    return np.asarray(np.sqrt(d), dtype=float)
