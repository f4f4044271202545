"""The population set's worst members for a whole stack of (pair, corner) at once (issue 27
item 3: hundreds of pairs): :mod:`distpriv.central.robust`'s one-member arithmetic
(:func:`~distpriv.central.robust.farthest_gap`, ``_worst_shift``) on arrays (..., m, m).
"""

from __future__ import annotations

import numpy as np

__all__: list[str] = []  # helpers of central.robust

# Ascent steps for the farthest point of an ellipsoid (a convex maximisation on a sphere;
# each step cannot decrease the objective); central.robust's one-member ascent uses it too.
_ASCENT_STEPS = 60


def _clip_psd_stack(cov: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh((cov + np.swapaxes(cov, -1, -2)) / 2)
    return (v * np.clip(w, 0.0, None)[..., None, :]) @ np.swapaxes(v, -1, -2)


def _sqrt_psd_stack(cov: np.ndarray) -> np.ndarray:
    """:func:`_sqrt_psd` of every matrix of a stack."""
    w, v = np.linalg.eigh((cov + np.swapaxes(cov, -1, -2)) / 2)
    return (v * np.sqrt(np.clip(w, 0.0, None))[..., None, :]) @ np.swapaxes(v, -1, -2)


def _inv_sqrt_stack(cov: np.ndarray) -> np.ndarray:
    """:func:`_inv_sqrt` of every matrix of a stack."""
    w, v = np.linalg.eigh((cov + np.swapaxes(cov, -1, -2)) / 2)
    top = np.maximum(w.max(axis=-1, keepdims=True), 1e-300)
    w = np.maximum(w, 1e-12 * top)
    return (v / np.sqrt(w)[..., None, :]) @ np.swapaxes(v, -1, -2)


def _worst_shift_stack(
    gap: np.ndarray, metric: np.ndarray, spread: np.ndarray, z: float
) -> np.ndarray:
    """:func:`_worst_shift` for every member of a stack: gap (..., m), metric and spread
    (..., m, m). The ascent of :func:`farthest_gap` runs on all members, each stopping
    (its iterate frozen) when its own step moves less than 1e-12, as one member alone."""
    a = np.einsum("...ij,...j->...i", metric, gap)
    b = metric @ spread
    bt = np.swapaxes(b, -1, -2)
    # gap_bound: observed distance + z·‖B‖₂.
    top = np.linalg.norm(b, ord=2, axis=(-2, -1)) if b.size else np.zeros(a.shape[:-1])
    target = np.linalg.norm(a, axis=-1) + z * top
    g = np.einsum("...ij,...j->...i", bt, a)
    gn = np.linalg.norm(g, axis=-1, keepdims=True)
    widest = np.linalg.svd(b)[2][..., 0, :]
    wv = np.where(gn > 0, g / np.where(gn > 0, gn, 1.0), widest)
    live = np.ones(a.shape[:-1], dtype=bool)
    for _ in range(_ASCENT_STEPS):
        g = np.einsum("...ij,...j->...i", bt, a + np.einsum("...ij,...j->...i", b, wv))
        nrm = np.linalg.norm(g, axis=-1, keepdims=True)
        step = live & (nrm[..., 0] > 0)
        w_new = g / np.where(nrm > 0, nrm, 1.0)
        moved = np.any(np.abs(w_new - wv) > 1e-12, axis=-1)
        wv = np.where((step & moved)[..., None], w_new, wv)
        live = step & moved
        if not np.any(live):
            break
    direction = np.einsum("...ij,...j->...i", spread, wv)
    c = np.einsum("...ij,...j->...i", metric, direction)
    cc = np.sum(c * c, axis=-1)
    ac = np.sum(a * c, axis=-1)
    aa = np.sum(a * a, axis=-1)
    ok = (cc > 0.0) & (target * target > aa)
    root = np.sqrt(np.where(ok, ac * ac + cc * (target * target - aa), 0.0))
    t = np.where(ok, (-ac + root) / np.where(ok, cc, 1.0), 0.0)
    return t[..., None] * direction
