"""Uniform k-subsets of {0, …, N−1}, many at once, as index arrays (no per-subset loops)."""

from __future__ import annotations

import numpy as np

__all__ = ["sample_subsets"]

# Above this many random keys per chunk, memory, not speed, becomes the limit.
_KEYS_PER_CHUNK = 8_000_000


def sample_subsets(population: int, size: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``count`` independent uniform subsets of ``size`` distinct indices.

    Parameters
    ----------
    population : int
        N, indices are drawn from 0..N−1.
    size : int
        k ≤ N, the subset size.
    count : int
        Number of subsets.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of int64, shape (count, size)
        Row r is a uniformly random k-subset (in random order).

    Notes
    -----
    When k² is small against N, i.i.d. draws are conditioned on being distinct by
    redrawing the offending rows (uniform over ordered k-subsets; each round keeps a
    fraction ≈ exp(−k²/2N) of them). Otherwise the k smallest of N random keys per row
    (argpartition), in chunks that bound memory.
    """
    if size == 0:
        return np.zeros((count, 0), dtype=np.int64)
    if size * size <= population:
        out = rng.integers(0, population, size=(count, size), dtype=np.int64)
        todo = np.arange(count)
        while todo.size:
            srt = np.sort(out[todo], axis=1)
            dup = np.any(srt[:, 1:] == srt[:, :-1], axis=1)
            todo = todo[dup]
            out[todo] = rng.integers(0, population, size=(todo.size, size), dtype=np.int64)
        return out
    out = np.empty((count, size), dtype=np.int64)
    step = max(1, _KEYS_PER_CHUNK // population)
    for start in range(0, count, step):
        stop = min(count, start + step)
        keys = rng.random((stop - start, population))
        if size < population:
            part = np.argpartition(keys, size - 1, axis=1)[:, :size]
        else:
            part = np.broadcast_to(np.arange(population), keys.shape).copy()
        # argpartition leaves the chosen indices in an order that depends on the keys'
        # values, not uniformly random; shuffle so the order is uniform too.
        out[start:stop] = rng.permuted(part, axis=1)
    return out
