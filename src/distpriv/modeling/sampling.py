"""Uniform k-subsets of {0, …, N−1}, many at once, as index arrays (no per-subset loops).

The sampler costs O(k log k) per subset whatever the ratio k/N (no cliff when k² exceeds N),
and O(count · k) memory; :func:`subset_chunks` yields bounded chunks so that callers never
hold more than about ``_INDICES_PER_CHUNK`` indices at once.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["chunk_rows", "sample_subsets", "subset_chunks"]

# Indices held per chunk by the chunked callers: 8 MiB of int64, and a gather of m float64
# features per index stays at 8·m MiB, so Monte Carlo memory does not grow with the count.
_INDICES_PER_CHUNK = 1 << 20


def chunk_rows(size: int, limit: int = _INDICES_PER_CHUNK) -> int:
    """Subsets per chunk so that a chunk holds about ``limit`` indices of ``size`` each."""
    return max(1, limit // max(1, size))


def _contains(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Membership of ``keys`` in the sorted array ``sorted_keys``."""
    if sorted_keys.size == 0:
        return np.zeros(keys.shape, dtype=bool)
    at = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
    return sorted_keys[at] == keys


def _distinct_draws(population: int, size: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """Rows of ``size`` distinct indices (in no particular order); needs 2·size ≤ population.

    I.i.d. uniform draws; the repeated entries of each row (found by one sort) are redrawn,
    and a redrawn value is kept only if it is new to its row and unique among that row's
    redraws of the round, until no repeat remains. Every step depends on the draws only
    through which values are equal, so the law of the resulting set is invariant under
    relabelling {0, …, N−1}; all k-sets form one orbit of that group, hence each is equally
    likely. With k ≤ N/2 a redraw is new with probability ≥ 1/2, so the rounds end
    geometrically fast; the first round's repeats number about k²/2N per row, and only
    they are redrawn and checked (binary search), so a row costs one sort, O(k log k).
    """
    out = rng.integers(0, population, size=(count, size), dtype=np.int64)
    out.sort(axis=1)
    todo = np.zeros(out.shape, dtype=bool)
    np.equal(out[:, 1:], out[:, :-1], out=todo[:, 1:])
    if not todo.any():
        return out
    # Row r's values as keys r·N + value: one sorted array for membership tests of all rows.
    offset = np.arange(count, dtype=np.int64)[:, None] * population
    known = (out + offset).ravel()
    added = np.zeros(0, dtype=np.int64)  # keys accepted in earlier rounds, sorted (few)
    rows, cols = np.nonzero(todo)
    while rows.size:
        keys = rows * population + rng.integers(0, population, size=rows.size, dtype=np.int64)
        taken = _contains(known, keys) | _contains(added, keys)
        order = np.argsort(keys, kind="stable")
        same = np.zeros(keys.size, dtype=bool)
        eq = keys[order[1:]] == keys[order[:-1]]
        same[order[1:]] |= eq
        same[order[:-1]] |= eq
        ok = ~taken & ~same
        out[rows[ok], cols[ok]] = keys[ok] - rows[ok] * population
        added = np.sort(np.concatenate([added, keys[ok]]))
        rows, cols = rows[~ok], cols[~ok]
    return out


def sample_subsets(
    population: int,
    size: int,
    count: int,
    rng: np.random.Generator,
    *,
    ordered: bool = True,
) -> np.ndarray:
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
    ordered : bool
        ``True``: each row in uniformly random order (a uniform ordered k-tuple of distinct
        indices). ``False``: rows in no particular order, cheaper when only the set
        matters (sums).

    Returns
    -------
    ndarray of int64, shape (count, size)
        Row r is a uniformly random k-subset.

    Notes
    -----
    Exact for every k (no approximation): for k ≤ N/2 i.i.d. draws whose repeated entries
    are redrawn until the row is distinct (see ``_distinct_draws``); for k > N/2 the
    complement, a uniform (N − k)-subset, is drawn the same way. O(k log k) time per subset
    (one sort) for k ≤ N/2, so the cost per index does not jump when k² exceeds N; O(N) for
    k > N/2, where the output itself is of that size.
    """
    if size == 0 or count == 0:
        return np.zeros((count, size), dtype=np.int64)
    if 2 * size <= population:
        out = _distinct_draws(population, size, count, rng)
    else:
        keep = np.ones((count, population), dtype=bool)
        drop = population - size
        if drop:
            gone = _distinct_draws(population, drop, count, rng)
            keep[np.arange(count)[:, None], gone] = False
        out = np.nonzero(keep)[1].reshape(count, size).astype(np.int64, copy=False)
    # Sorting leaves the rows in increasing order; shuffle so the order is uniform too.
    return rng.permuted(out, axis=1) if ordered and size > 1 else out


def subset_chunks(
    population: int,
    size: int,
    count: int,
    rng: np.random.Generator,
    *,
    chunk: int | None = None,
) -> Iterator[np.ndarray]:
    """:func:`sample_subsets` (unordered) in chunks of at most ``chunk`` subsets.

    Yields arrays of shape (≤ chunk, size) whose rows total ``count``; ``chunk`` defaults to
    :func:`chunk_rows` of ``size``.
    """
    step = chunk_rows(size) if chunk is None else max(1, int(chunk))
    for start in range(0, count, step):
        yield sample_subsets(population, size, min(step, count - start), rng, ordered=False)
