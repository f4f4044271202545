"""Why a scale search failed: the refusal of :func:`distpriv.population.exact.smallest_scale`.

When δ(ε) stops falling as a noise family s ↦ Σ_Z(s) grows, the message must name the
cause that applies (a direction the shape leaves uncovered, a direction only the family's
fixed part, a floor, protects, or covariances that differ where more noise does not help),
with what was measured, so that the user is sent to the right remedy.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["stalled_message"]


def stalled_message(
    name: str,
    privacy: tuple[float, float],
    noise_of: Callable[[float], np.ndarray],
    seen: dict[float, float],
    last: tuple[float, str | None],
) -> str:
    """Why no scale of a noise family meets the target, naming the cause that applies.

    δ(ε) stopped falling as the scale grew. Either the scaled shape leaves a direction
    uncovered (its rank at the largest scale is below the dimension, judged with each
    statistic at unit noise variance so units do not matter), or it covers every direction
    only together with a fixed part of the family (``noise_of(0)``, a floor), which alone
    protects the directions the shape cannot reach. The least δ(ε) seen and where, and
    how the last one was computed (a δ = 1 there can be the accountant's certified upper
    bound when the scaled part dwarfs the rest), are reported as measured.

    Parameters
    ----------
    privacy : (float, float)
        (ε, δ).
    noise_of : callable
        Σ_Z(s), shape (m, m).
    seen : dict of float → float
        The worst δ(ε) at each scale evaluated.
    last : (float, str or None)
        The largest scale evaluated and the description of its worst pair.
    """
    epsilon, delta = privacy
    s_last, how = last
    fixed = noise_of(0.0)
    grown = noise_of(s_last) - fixed
    var = np.diagonal(grown).copy()
    inv = np.where(var > 0, 1.0 / np.sqrt(np.where(var > 0, var, 1.0)), 0.0)
    w = np.linalg.eigvalsh(grown * np.outer(inv, inv))
    rank = int(np.sum(w > 64 * np.finfo(float).eps * w.size * max(float(w[-1]), 0.0)))
    m = grown.shape[0]
    best_s = min(seen, key=lambda s: (seen[s], s))
    measured = (
        f"the least delta({epsilon:g}) found is {seen[best_s]:.3g}, at scale {best_s:.4g}; at "
        f"scale {s_last:.4g}: {how or f'{seen.get(s_last, 1.0):.3g}'}"
    )
    if rank < m and not np.any(fixed):
        cause = (
            f"the hypotheses differ in a direction the noise does not cover (its shape has "
            f"rank {rank} of {m})"
        )
    elif rank < m:
        cause = (
            f"the scaled part of the noise (rank {rank} of {m}) cannot reach a direction "
            "where the hypotheses differ; there only the fixed part of the noise (the floor) "
            "protects them, and it is not enough"
        )
    else:
        cause = (
            "the noise covers every direction, but the pairs' covariances differ in a way "
            "more noise of this shape does not hide"
        )
    return (
        f"{name}: no scale of its noise shape meets ({epsilon:g}, {delta:g}) under the exact "
        f"profile of the model's covariances: {cause} ({measured}); use 'expm-g' or "
        "'optimal-g'"
    )
