"""Composition of Laplace releases: Chen & Ohrimenko 2023, Thm 3.1 on the stacked query.

With independent Laplace noise of scale b_k along the orthonormal directions u_k, the output
density ratio of x and y is at most exp(Σ_k |u_kᵀ(x − y)| / b_k), so the releases so far,
stacked, are ε-private with ε the W∞ distance of the joint samples under that weighted L1
metric. Laplace noise that leaves a direction noiseless cannot be composed this way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..distances import winf_distance
from ..errors import CompositionError
from ..noise import Noise

__all__ = ["LAPLACE_THEOREM", "laplace_composition", "laplace_map"]

LAPLACE_THEOREM = (
    "Chen & Ohrimenko 2023, Thm 3.1 on the stacked query: W-infinity of the joint samples "
    "under the L1 metric weighted by 1/(Laplace scale)"
)


def laplace_map(noise: Noise) -> np.ndarray:
    """Matrix W (m, m) with ‖W(x − y)‖₁ = Σ_k |u_kᵀ(x − y)| / b_k, or CompositionError."""
    comps = [c for c in noise.components if c.basis.shape[1]]
    if not comps or any(c.kind != "laplace" for c in comps):
        raise CompositionError("internal: not a Laplace noise law")
    basis = np.concatenate([c.basis for c in comps], axis=1)
    scales = np.concatenate([c.scales for c in comps])
    if basis.shape[1] != noise.dim or np.any(scales <= 0):
        raise CompositionError(
            "Laplace noise that leaves some direction of the statistics noiseless cannot be "
            "composed by Thm 3.1 (the W-infinity distance there is unweighted)"
        )
    return (basis / scales).T


def laplace_composition(
    samples: Sequence[np.ndarray], weight: np.ndarray, pairs: Sequence[tuple[int, int]]
) -> tuple[float, list[dict[str, Any]]]:
    """ε of F + Z for Laplace noise by Chen & Ohrimenko 2023, Thm 3.1 (stacked query).

    Parameters
    ----------
    samples : sequence of ndarray, each (n, M)
        Joint draws of the stacked statistics per θ.
    weight : ndarray, shape (M, M)
        W with ‖W(x − y)‖₁ the privacy cost of moving x to y (see module docstring).
    pairs : sequence of (int, int)

    Returns
    -------
    (epsilon, per-pair list of dicts)
        ε = max over Ψ of W∞(W f_θᵢ, W f_θⱼ) under L1 (symmetric, so one direction).
    """
    rows, eps = [], 0.0
    for i, j in pairs:
        w = float(winf_distance(samples[i] @ weight.T, samples[j] @ weight.T, metric="l1"))
        rows.append({"pair": [int(i), int(j)], "epsilon": w})
        eps = max(eps, w)
    return eps, rows
